from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from agents.settings import Settings
from testkit.fakes import Script
from tests.support.server import Service, serve

ServiceMaker = Callable[..., AbstractAsyncContextManager[Service]]


@pytest.fixture
def service_for(settings: Settings) -> ServiceMaker:
    """`async with service_for(script, **setting_overrides) as svc:` — a running server."""

    def make(script: Script, **overrides: Any) -> AbstractAsyncContextManager[Service]:
        return serve(settings.model_copy(update=overrides), script)

    return make
