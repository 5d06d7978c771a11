"""Smoke variant of the shared-runs benchmark: `python -m bench --only workers --smoke` (an
API-only process and 1, then 2, worker processes on the local Postgres and Redis, 4 clients
for 3 s). Checks the shape of the results, never timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main
from tests.e2e.server.conftest import fresh_postgres_url, redis_url

__all__ = ["fresh_postgres_url", "redis_url"]
pytestmark = pytest.mark.timeout(600)


# The benchmark makes databases of its own; the fixtures skip without Postgres or Redis.
@pytest.mark.usefixtures("fresh_postgres_url", "redis_url")
def test_one_and_two_workers_are_measured_without_errors(tmp_path: Path) -> None:
    out = tmp_path / "results"
    argv = ["--only", "workers", "--smoke", "--results", str(out), "--docs", str(out / "b.md")]
    assert main(argv) == 0
    data = json.loads((out / "workers.json").read_text())

    assert [row["workers"] for row in data["rows"]] == [1, 2]
    for row in data["rows"]:
        assert row["completed"] > 0
        assert row["errors"] == 0
        assert row["events"] > 0
        assert set(row["cpu_util"]) == {"api", *(f"worker{i}" for i in range(row["workers"]))}
    assert "## 9. Shared runs" in (out / "b.md").read_text()
