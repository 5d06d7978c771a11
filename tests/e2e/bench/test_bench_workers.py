"""Smoke variant of the shared-runs benchmark: `python -m bench --only workers --smoke` (an
API-only process and 1, then 2, worker processes on the local Postgres and Redis, 4 clients
for 2 s; on the whole machine, then with each worker held to half a core). Checks the shape
of the results, never timings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.bench import smoke_results

pytestmark = pytest.mark.timeout(600)


# The benchmark makes databases of its own; the fixtures skip without Postgres or Redis.
@pytest.mark.usefixtures("postgres_url", "redis_url")
def test_one_and_two_workers_are_measured_without_errors(tmp_path: Path) -> None:
    data, docs = smoke_results("workers", tmp_path)

    # The whole machine, then (where cgroups allow, as in CI) each worker held to a share.
    series = [(row["workers"], row["worker_cpus"]) for row in data["rows"]]
    shares = [(1, None), (2, None)] + ([] if data["no_share"] else [(1, 0.5), (2, 0.5)])
    assert series == shares
    for row in data["rows"]:
        assert row["completed"] > 0
        assert row["errors"] == 0
        assert row["events"] > 0
        assert set(row["cpu_util"]) == {"api", *(f"worker{i}" for i in range(row["workers"]))}
        assert set(row["cpu_per_run_s"]) == {"api", "workers", "postgres", "redis", "clients"}
        assert row["cpu_per_run_s"]["workers"] > 0
        assert (row["throttled_s"] >= 0) if row["worker_cpus"] else (row["throttled_s"] == 0)
    assert data["ceiling"] > 0
    assert set(data["speedups"]) == {"whole"} | ({"0.5"} if not data["no_share"] else set())
    if os.environ.get("CI"):
        assert data["no_share"] is None  # CI runs as root on a machine with cgroups
    assert "## 9. Shared runs" in docs
