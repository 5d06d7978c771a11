"""Fixtures shared by every tier."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.tools import BaseTool

from agents import observers
from agents.engine import Engine
from app.settings import Settings
from calls.ratelimit import reset_model_limiters
from testkit.event_log import EventLog
from testkit.fakes import FakeModels, Script
from tests.support.model_settings import MODEL_VARIABLES
from tools.runtime import PROCESS_OUTAGES

pytest_plugins = ["tests.support.watchdog"]

if TYPE_CHECKING:
    from tests.support.makers import EngineMaker, ServiceMaker
    from tests.support.server import Service


@pytest.fixture(autouse=True)
def _process_registries() -> Iterator[None]:
    """What a test leaves in the process's registries leaves with it: the observers it
    installed (a tracer, the metrics of an app it builds) and the adaptive model rates its
    calls moved (the next test starts from a fresh rate)."""
    before = observers.installed()
    yield
    observers.reset(before)
    reset_model_limiters()
    PROCESS_OUTAGES.clear()


@pytest.fixture
def settings(tmp_path: Any) -> Settings:
    """Settings that ignore the environment and never back off for real."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        model="google_genai:gemini-2.5-flash",
        model_retry_base_delay_s=0.0,
        data_dir=tmp_path / "data",
        storage_reserve_bytes=64 * 1024,  # the full-disk reserve, small: tests start many stores
    )


@pytest.fixture
def no_model_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model or provider key from the environment: the factory sees only its settings."""
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def events() -> EventLog:
    return EventLog()


@pytest.fixture
def make_engine(settings: Settings) -> EngineMaker:
    def make(
        script: Script, tools: Sequence[BaseTool] = (), checkpointer: Any = None
    ) -> tuple[Engine, FakeModels]:
        models = FakeModels(script)
        engine = Engine(settings=settings, models=models, tools=tools, checkpointer=checkpointer)
        return engine, models

    return make


@pytest.fixture
def service_for(settings: Settings) -> ServiceMaker:
    """`async with service_for(script, tools=[…], **setting_overrides) as svc:` — the real app
    served on a loopback port with scripted models."""
    from tests.support.server import serve

    def make(
        script: Script, tools: list[BaseTool] | None = None, **overrides: Any
    ) -> AbstractAsyncContextManager[Service]:
        return serve(settings.model_copy(update=overrides), script, tools)

    return make


POSTGRES_ADMIN_URL = os.environ.get(
    "LATS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("LATS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _unreachable(what: str, url: str, error: Exception) -> None:
    """Skip on a developer's machine; fail in CI (CI=true), where the server is always there."""
    reason = f"no {what} at {url} ({type(error).__name__})"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """An empty database of its own on the local PostgreSQL, dropped after the test: claim
    tests see every claimable run, and migrations run against a database that lacks them."""
    import psycopg

    name = f"lats_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        _unreachable("PostgreSQL", POSTGRES_ADMIN_URL, e)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The local Redis, once it answers a ping."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=1.0, socket_connect_timeout=1.0)
    try:
        client.ping()
    except (OSError, redis.RedisError) as e:
        _unreachable("Redis", REDIS_URL, e)
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture
async def redis_prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix of this test's own on the local Redis; its keys are deleted after."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url, socket_timeout=1.0)
    name = f"plantree-test-{uuid.uuid4().hex[:10]}"
    yield name
    keys = [key async for key in client.scan_iter(f"{name}:*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
