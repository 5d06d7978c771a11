"""Smoke variants of the fault table and the soak: `python -m bench --only faults --smoke` (two
faults, 3 runs each) and `--only soak --smoke` (16 s, one worker restart). Check the shape of
the results and that no history broke and no event was lost or duplicated, never timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import smoke_results

pytestmark = pytest.mark.timeout(300)


# The benchmarks make databases of their own; the fixtures skip without Postgres or Redis.
@pytest.mark.usefixtures("postgres_url", "redis_url")
def test_two_faults_are_tabled_with_nothing_lost(tmp_path: Path) -> None:
    data, docs = smoke_results("faults", tmp_path)

    rows = {row["fault"]: row for row in data["rows"]}
    assert set(rows) == {"postgres_down", "worker_killed"}
    for row in rows.values():
        # Each failure shows the whole row: a rare one must be readable from CI's log.
        assert row["runs"] == 3, row
        assert row["whole"] == 3, row
        assert row["terminals"] == {"done": 3}, row
        assert (row["lost"], row["duplicated"]) == (0, 0), row
        assert row["accepting_s"] is not None, row
        assert row["ended_s"] is not None, row
        assert row["ended_s"] >= 0, row
    assert data["tracebacks"] == 0, data
    assert "## 12. Faults" in docs
    assert "| Postgres cut (every connection dropped, new ones refused), restored | " in docs


@pytest.mark.usefixtures("postgres_url", "redis_url")
def test_a_short_soak_restarts_a_worker_and_keeps_every_history(tmp_path: Path) -> None:
    data, docs = smoke_results("soak", tmp_path)

    windows = data["windows"]
    started = sum(w["started"] for w in windows)
    assert started > 0
    assert sum(sum(w["ended"].values()) for w in windows) == started
    assert sum(w["whole"] for w in windows) == started, [w["broken"] for w in windows]
    assert set().union(*(w["ended"] for w in windows)) <= {"done", "cancelled"}
    assert any(life["exit"] is not None for life in data["worker_lives"])  # one restart
    assert data["api"]["start"]["rss_mib"] > 0
    assert data["api"]["end"]["open_files"] > 0
    assert data["tracebacks"] == 0
    assert "## 13. Soak" in docs
