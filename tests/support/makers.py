"""The types of the factory fixtures tests request by name (`make_engine`, `service_for`,
`open_store`), for annotating a test's parameters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from agents.engine import Engine
from app.store.protocols import RunStore
from testkit.fakes import FakeModels
from tests.support.server import Service

EngineMaker = Callable[..., tuple[Engine, FakeModels]]
ServiceMaker = Callable[..., AbstractAsyncContextManager[Service]]
Opener = Callable[[], Awaitable[RunStore]]
