"""Fixtures of the server-process tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.process import ServerProcess, shared_runs_env
from tests.integration.app.conftest import fresh_postgres_url

__all__ = ["env", "fresh_postgres_url", "procs", "redis_url"]

REDIS_URL = os.environ.get("LATS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_url() -> str:
    """The local Redis; skipped without it (failed in CI, where it is always there)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=1.0, socket_connect_timeout=1.0)
    try:
        client.ping()
    except (OSError, redis.RedisError) as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Redis at {REDIS_URL} ({type(e).__name__})")
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of shared-run processes: the Gemini simulator's model, one tool."""
    return shared_runs_env(tmp_path)


@pytest.fixture
def procs() -> Iterator[list[ServerProcess]]:
    """Processes a test starts; killed after it."""
    started: list[ServerProcess] = []
    yield started
    for proc in started:
        proc.kill()
