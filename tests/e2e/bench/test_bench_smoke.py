"""Smoke variant of `make bench`: every benchmark end to end at tiny sizes (a few ms of model
latency, 2 load clients, 10 memory runs), through `python -m bench --smoke`. The tests check
the shape of the results, never timings: this machine is shared and noisy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.critical import critical_path

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SPREAD_KEYS = {"median", "min", "max", "n"}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of one smoke run (the docs page written beside it)."""
    out = tmp_path_factory.mktemp("bench")
    assert main(["--smoke", "--results", str(out), "--docs", str(out / "benchmarks.md")]) == 0
    return out


def _json(smoke: Path, name: str) -> Any:
    return json.loads((smoke / f"{name}.json").read_text())


def test_critical_path_covers_every_strategy_and_concurrency(smoke: Path) -> None:
    search = _json(smoke, "search")
    cp = search["critical_path"]

    cells = {(c["strategy"], c["concurrency"]) for c in cp["cells"]}
    assert cells == {(s, c) for s in ("mcts", "beam", "dfs") for c in (1, 8)}
    assert cp["width"] == 6
    for cell in cp["cells"]:
        assert set(cell["ratio"]) >= SPREAD_KEYS
        assert cell["paths"]["median"] == 6
        assert cell["bound_s"]["median"] > 0
    assert set(cp["met"]) == {"mcts", "beam", "dfs"}


def test_sequential_baseline_runs_beside_the_defaults(smoke: Path) -> None:
    seq = _json(smoke, "search")["sequential"]

    assert seq["baseline"] == {"strategy": "dfs", "max_concurrency": 1}
    assert seq["defaults"] == {"strategy": "mcts", "max_concurrency": 4}
    assert seq["speedup_per_path"]["n"] == 1
    assert seq["speedup_per_path"]["median"] > 0
    # The plain agent: one path, measured beside the defaults in the same repetition.
    plain = [r for r in _json(smoke, "search")["rows"] if r["strategy"] == "plain"]
    assert [(r["concurrency"], r["paths"]) for r in plain] == [(1, 1)]
    assert seq["speedup_vs_plain"]["n"] == 1


def test_calls_are_counted_by_role_and_the_cached_rerun_makes_none(smoke: Path) -> None:
    calls = _json(smoke, "search")["calls"]

    assert set(calls["calls_by_role_per_path"]) == {
        "planner",
        "executor",
        "replanner",
        "responder",
        "voter",
    }
    # The wide tree: 10 nodes, 6 paths, one vote; the replanner judges its own candidates, so
    # no progress call is made.
    assert calls["llm_calls"]["median"] == 28
    assert calls["naive_calls"]["median"] >= calls["llm_calls"]["median"]
    rerun = calls["cached_rerun"]
    assert rerun["all_zero"] is True
    assert rerun["llm_calls"]["median"] == 0
    assert rerun["cache_hits"]["median"] == 0  # the first run's result is reused whole
    assert all(r["reused"] for r in rerun["runs"])
    assert all(r["same_answer"] for r in rerun["runs"])


def test_load_reports_throughput_latency_errors_memory_and_a_profile(smoke: Path) -> None:
    load = _json(smoke, "load")

    (level,) = load["levels"]
    assert level["clients"] == 2
    assert level["errors"]["median"] == 0
    for key in ("throughput_per_min", "event_latency_p50_ms", "event_latency_p99_ms"):
        assert level[key]["median"] > 0
    assert level["peak_rss_mib"]["median"] > 10
    (wave,) = load["waves"]
    assert wave["completed"] == 2
    assert wave["events"] >= 2 * 10  # every event of both runs reached its client
    profile = load["profile"]
    assert profile["samples"] > 0
    assert any(t["thread"] == "MainThread" for t in profile["threads"])
    assert (smoke / "load_profile.txt").stat().st_size > 0


def test_memory_reads_rss_at_every_checkpoint(smoke: Path) -> None:
    memory = _json(smoke, "memory")

    assert set(memory["rss_mib"]) == {"0", "5", "10"}
    (soak,) = memory["soaks"]
    assert soak["failed_runs"] == 0
    assert [p[0] for p in soak["curve"]] == [0, 5, 10]
    assert soak["peak_rss_mib"] >= max(p[1] for p in soak["curve"])
    assert isinstance(memory["within_limit"], bool)
    control = memory["no_cache_control"]
    assert control["failed_runs"] == 0
    assert set(control["rss_mib"]) == {"0", "5", "10"}


def test_cpu_per_run_is_measured_in_fresh_processes(smoke: Path) -> None:
    cpu = _json(smoke, "cpu")

    assert cpu["cpu_s_per_run"]["n"] == 1
    assert cpu["cpu_s_per_run"]["median"] > 0
    assert "against" not in cpu  # no other checkout was given


def test_the_load_benchmark_records_the_policy_it_ran_under(smoke: Path) -> None:
    config = _json(smoke, "load")["config"]

    assert config["policy"]["model_max_in_flight"] >= 1
    assert config["calls_per_run"] > 0


def test_the_report_and_plots_are_written(smoke: Path) -> None:
    doc = (smoke / "benchmarks.md").read_text()

    for heading in ("1. Critical path", "2. Sequential baseline", "3. Model calls", "4. Load"):
        assert f"## {heading}" in doc
    assert "## 5. Memory" in doc
    assert "## 7. Quota sweep" in doc
    assert "## 8. CPU per run" in doc
    for png in ("critical_path", "sequential", "calls", "load", "memory"):
        assert (smoke / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"{png}.png" in doc


def test_the_critical_path_bound_follows_the_longest_voted_chain() -> None:
    def ev(kind: str, ts: float, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "ts": f"2026-01-01T00:00:{ts:06.3f}+00:00", **fields}

    events = [
        ev("run_started", 0),
        ev("plan", 1, seconds=1.0),
        ev("node_finished", 2, node_id="n1", seconds=1.0),
        ev("candidates", 3, parent_id="n1", seconds=1.0),
        ev("node_finished", 4, node_id="n1.1", seconds=1.0),
        ev("node_finished", 6, node_id="n1.2", seconds=3.0),
        ev("candidates", 7, parent_id="n1.1", seconds=1.0),
        ev("candidates", 8, parent_id="n1.2", seconds=2.0),
        ev("path_completed", 9, node_id="n1.1", path=["n1", "n1.1"], seconds=1.0),
        ev("path_completed", 10, node_id="n1.2", path=["n1", "n1.2"], seconds=1.0),
        ev("vote", 11, candidates=["n1.1", "n1.2"], seconds=1.0),
        ev("done", 12),
    ]

    result = critical_path(events)

    # plan 1 + (n1: 1 + 1) + (n1.2: 3 + 2) + answer 1 + vote 1
    assert result["bound_s"] == pytest.approx(10.0)
    assert result["wall_s"] == pytest.approx(12.0)
    assert result["chain"] == ["n1", "n1.2"]
    assert result["work_s"] == pytest.approx(13.0)  # every job, summed
