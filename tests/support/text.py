"""Assertions on written text: a report's lines, a rendered page."""

from __future__ import annotations


def assert_says(text: str, *parts: str) -> None:
    """Asserts that `text` holds each of `parts`, naming every one it lacks."""
    missing = [part for part in parts if part not in text]
    assert not missing, f"not in the text: {missing}\n{text}"
