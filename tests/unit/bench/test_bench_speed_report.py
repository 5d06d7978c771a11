"""Benchmark 15's page: what the tool's spacing alone allows, from the measured cells."""

from __future__ import annotations

from typing import Any

from bench.speed_report import tool_spacing_section
from tests.support.text import assert_says


def _cell(**values: float) -> dict[str, Any]:
    return {key: {"median": v, "min": v, "max": v, "n": 1} for key, v in values.items()}


def _data(ours_calls: float, ours_wall: float, plain_wall: float) -> dict[str, Any]:
    common = {"bound_s": 0.0, "ratio": 1.0, "mean_model_calls_in_flight": 0.5, "throttled": 0}
    return {
        "config": {"interval_s": 3.0, "repetitions": 1, "latency_ms": [150.0, 350.0]},
        "cells": {
            "defaults": _cell(
                wall_s=ours_wall,
                tool_calls=ours_calls,
                paths=6,
                s_per_path=ours_wall / 6,
                **common,
            ),
            "plain sequential agent": _cell(
                wall_s=plain_wall, tool_calls=3, paths=1, s_per_path=plain_wall, **common
            ),
        },
        "speedup_per_path": plain_wall / (ours_wall / 6),
    }


def test_the_page_says_how_many_spaced_calls_4x_would_allow() -> None:
    text = "\n".join(tool_spacing_section(_data(5, 13.34, 7.3)))

    # 5 calls 3 s apart: 12 s; the rest 1.34 s; 4x needs 6 x 7.3 / 4 = 10.95 s: 4 calls.
    assert_says(
        text,
        "**3.28x**",
        "cannot start in less than 12 s (of a 13.3 s wall)",
        "the plain agent's 3 in less than 6 s (of 7.3 s)",
        "at most 4 spaced calls for its 6 paths",
        # 0.5 in flight over 13.34 s: 6.67 s of model calls; 2 in flight: a 3.3 s wall.
        "take 6.7 s in all, so 2 in flight would need a wall of 3.3 s",
    )


def test_a_slower_plain_agent_leaves_room_for_more_calls() -> None:
    text = "\n".join(tool_spacing_section(_data(5, 13.34, 9.0)))

    # 6 x 9.0 / 4 = 13.5 s; 13.5 - 1.34 = 12.16 s of spacing: 5 calls.
    assert "at most 5 spaced calls" in text
