"""A question as a line of the multi-hop JSON Lines format (HotpotQA's shape), for the tests of
what reads and scores such lines."""

from __future__ import annotations

import copy
from typing import Any

_BOOK: dict[str, Any] = {
    "id": "q1",
    "question": "Who wrote it?",
    "answer": "Ann",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": [["Book", 1], ["Ann", 0]],
    "context": [
        ["Book", ["Book is a novel.", " It was written by Ann."]],
        ["Ann", ["Ann is a writer."]],
    ],
}


def book_line(**changes: Any) -> dict[str, Any]:
    """A bridge question (who wrote Book: Ann) over its two supporting paragraphs, a fresh copy
    with `changes` to its fields."""
    return copy.deepcopy(_BOOK) | changes
