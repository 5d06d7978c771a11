"""Smoke variant of the quality benchmark: `python -m bench --only quality --smoke` at tiny
sizes (two structures, one seed, a curve of one budget), checking the shape of what it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.quality import STRATEGIES

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quality")
    argv = ["--only", "quality", "--smoke", "--results", str(out), "--docs", str(out / "b.md")]
    assert main(argv) == 0
    return out


def _quality(smoke: Path) -> Any:
    return json.loads((smoke / "quality.json").read_text())


def test_every_strategy_runs_on_every_structure(smoke: Path) -> None:
    q = _quality(smoke)

    assert set(q["cells"]) == {"wide", "corridor"}
    for by in q["cells"].values():
        assert set(by) == set(STRATEGIES)
        for cell in by.values():
            assert cell["n"] == 1
            assert 0 <= cell["success"] <= 1
            assert cell["regret"] >= 0
            assert 0 < cell["serial_calls"] <= cell["llm_calls"]
    for row in q["rows"]:
        budget = q["config"]["structures"][row["structure"]]["max_llm_calls"]
        assert row["budget"] == budget
        assert row["llm_calls"] <= budget
        if row["regret"] == 0:
            assert row["success"]
        if row["regret"] > q["config"]["tolerance"] + 1e-3:
            assert not row["success"]


def test_the_curve_has_a_point_per_budget_and_strategy(smoke: Path) -> None:
    q = _quality(smoke)

    assert set(q["curve"]) == set(STRATEGIES)
    for points in q["curve"].values():
        assert [p["budget"] for p in points] == [20]
        assert all(p["llm_calls"] <= p["budget"] for p in points)
        assert all(p["n"] == 2 for p in points)  # both structures


def test_the_report_section_and_plots_are_written(smoke: Path) -> None:
    doc = (smoke / "b.md").read_text()

    assert "## 6. Search quality" in doc
    assert "Quality, the default beats the seed-breadth baseline" in doc
    for png in ("quality", "quality_curve"):
        assert (smoke / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"{png}.png" in doc
