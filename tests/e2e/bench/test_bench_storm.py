"""Smoke variant of the storm benchmark: `python -m bench --only storm --smoke` (the storm
test's 3 processes on the local Postgres and Redis, 6 runs, 3 cancels). Checks the shape of
the results and that every history is whole, never timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import smoke_results

pytestmark = pytest.mark.timeout(300)


# The benchmark makes a database of its own; the fixtures skip without Postgres or Redis.
@pytest.mark.usefixtures("postgres_url", "redis_url")
def test_a_small_storm_is_measured_whole(tmp_path: Path) -> None:
    data, docs = smoke_results("storm", tmp_path)

    assert (data["runs"], data["cancels"], data["processes"]) == (6, 3, 3)
    assert data["whole"] == 6, data["problems"]
    assert data["problems"] == []
    assert set(data["terminals"]) <= {"done", "cancelled"}
    assert sum(data["terminals"].values()) == 6
    assert data["done_never_cancelled"] == 3
    assert data["cancelled_too_late"] == len(data["too_late"])
    assert data["tracebacks"] == 0
    assert data["api_claims"] == 0
    assert "## 10. Storm" in docs
