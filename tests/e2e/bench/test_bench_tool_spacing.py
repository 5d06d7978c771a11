"""Smoke variant of the spaced-tool benchmark: `python -m bench --only tool_spacing --smoke`
(0.2 s spacing, one repetition). Checks the shape of the results and that both runs complete
with one tool call per step, never timings."""

from __future__ import annotations

from pathlib import Path

from tests.support.bench import smoke_results


def test_the_defaults_and_the_plain_agent_run_with_the_spaced_tool(tmp_path: Path) -> None:
    data, docs = smoke_results("tool_spacing", tmp_path)

    rows = {row["config"]: row for row in data["rows"]}
    assert set(rows) == {"defaults", "plain sequential agent"}
    assert all(row["status"] == "done" for row in rows.values())
    assert rows["defaults"]["paths"] == 6
    assert rows["plain sequential agent"]["paths"] == 1
    # One call per step: the 10 nodes of the tree, the plain agent's 3 steps.
    assert rows["defaults"]["tool_calls"] + rows["defaults"]["throttled"] == 10
    assert rows["plain sequential agent"]["tool_calls"] == 3
    assert data["speedup_per_path"] > 0
    assert "## 15. A spaced tool" in docs
