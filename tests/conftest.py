"""Fixtures shared by every tier."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from agents.engine import Engine
from agents.events import Event
from app.settings import Settings
from testkit.fakes import FakeModels, Script


@pytest.fixture
def settings(tmp_path: Any) -> Settings:
    """Settings that ignore the environment and never back off for real."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        model="google_genai:gemini-2.5-flash",
        model_retry_base_delay_s=0.0,
        data_dir=tmp_path / "data",
    )


class EventLog(list[Event]):
    """An event sink that keeps what it is sent."""

    async def __call__(self, event: Event) -> None:
        self.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.type == kind]


@pytest.fixture
def events() -> EventLog:
    return EventLog()


EngineMaker = Callable[..., tuple[Engine, FakeModels]]


@pytest.fixture
def make_engine(settings: Settings) -> EngineMaker:
    def make(
        script: Script, tools: Sequence[BaseTool] = (), checkpointer: Any = None
    ) -> tuple[Engine, FakeModels]:
        models = FakeModels(script)
        engine = Engine(settings=settings, models=models, tools=tools, checkpointer=checkpointer)
        return engine, models

    return make


POSTGRES_ADMIN_URL = os.environ.get(
    "LATS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway database on the local PostgreSQL, dropped after the session.

    Without a reachable server the Postgres tests are skipped on a developer's machine, but
    fail in CI (CI=true), where the server is always there.
    """
    import psycopg

    name = f"lats_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL at {POSTGRES_ADMIN_URL} ({type(e).__name__})")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


REDIS_URL = os.environ.get("LATS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A key prefix of this test's own on the local Redis; its keys are deleted after.

    Without a reachable server the Redis tests are skipped on a developer's machine, but fail
    in CI (CI=true), where the server is always there.
    """
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL, socket_timeout=1.0)
    try:
        await client.ping()
    except (OSError, aioredis.RedisError):
        await client.aclose()
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL}")
        pytest.skip(f"no Redis at {REDIS_URL}")
    name = f"plantree-test-{uuid.uuid4().hex[:10]}"
    yield name
    keys = [key async for key in client.scan_iter(f"{name}:*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
