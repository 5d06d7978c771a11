"""Smoke variant of the in-flight cap benchmark: `python -m bench --only in_flight --smoke` (4
clients for 2 s against a provider that holds 8 calls at once, each cap, then two processes'
limiters with a cap each and with one shared through the local Redis). Checks the shape of
the results and that the provider never held more than it serves, never timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import smoke_results


@pytest.mark.usefixtures("redis_url")
def test_both_caps_are_measured_side_by_side(tmp_path: Path) -> None:
    data, docs = smoke_results("in_flight", tmp_path)

    points = data["points"]
    assert [(p["cap"], p["clients"]) for p in points] == [
        ("fixed 16", 4),
        ("adaptive", 4),
        ("adaptive, 2 processes, one cap each", 4),
        ("adaptive, 2 processes, shared", 4),
    ]
    for point in points:
        assert point["runs_done"] > 0
        assert point["runs_failed"] == 0
        assert point["provider_most_in_flight"] <= data["config"]["provider_in_flight"]
        assert 1 <= point["cap_at_end"] <= point["ceiling"]
    assert "## 14. The in-flight cap" in docs
