from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from app.settings import ServiceSettings
from testkit.fakes import Script
from tests.conftest import POSTGRES_ADMIN_URL
from tests.support.server import Service, serve

ServiceMaker = Callable[..., AbstractAsyncContextManager[Service]]


@pytest.fixture
def service_for(settings: ServiceSettings) -> ServiceMaker:
    """`async with service_for(script, **setting_overrides) as svc:` — a running server."""

    def make(script: Script, **overrides: Any) -> AbstractAsyncContextManager[Service]:
        return serve(settings.model_copy(update=overrides), script)

    return make


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """An empty database of its own for one test (claim tests see every claimable run)."""
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
        try:
            yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
