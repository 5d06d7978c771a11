"""The real app (or any ASGI app) served by uvicorn on a free loopback port, inside the test's
event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from app.main import create_app
from app.settings import Settings
from calls.ratelimit import LimiterSource, model_limiter
from testkit.fakes import FakeModels, Script
from testkit.policy_models import ThroughPolicy


@dataclass
class Service:
    url: str
    client: httpx.AsyncClient
    models: FakeModels

    async def get_each(self, *paths: str) -> list[httpx.Response]:
        """GET each of `paths` in turn."""
        return [await self.client.get(path) for path in paths]


@contextlib.asynccontextmanager
async def serve(
    settings: Settings,
    script: Script,
    tools: list[Any] | None = None,
    *,
    policy: bool = False,
    limiters: LimiterSource = model_limiter,
) -> AsyncIterator[Service]:
    """Serve the app with scripted models (behind the production call policy with
    `policy`, whose model limiters come from `limiters`); yields once it accepts connections."""
    models = FakeModels(script)
    factory = ThroughPolicy(models, settings, limiters=limiters) if policy else models
    app = create_app(settings, models=factory, tools=tools or [])
    async with (
        serving(app, lifespan="on") as url,
        httpx.AsyncClient(base_url=url, timeout=20) as client,
    ):
        yield Service(url=url, client=client, models=models)


@contextlib.asynccontextmanager
async def serving(app: Callable[..., Any], **options: Any) -> AsyncIterator[str]:
    """Serve the ASGI `app` with uvicorn (`options` for its config) on a free loopback port;
    yields its base URL once it accepts connections, and stops it after."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", **options)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()  # surfaces a start-up failure
                await asyncio.sleep(0.01)  # polling uvicorn's flag: it has no start event
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
