"""The FastAPI application: `create_app` and its lifespan (store, engine, run manager)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI
from langchain_core.tools import BaseTool

from agents.engine import Engine
from agents.models import ModelFactory, SettingsModelFactory
from agents.settings import Settings, get_settings
from app import errors, openapi, security_headers
from app.manager import RunManager
from app.routes import health, runs, ui
from app.store import open_backend
from tools.registry import build_tools

logger = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    models: ModelFactory | None = None,
    tools: Sequence[BaseTool] | None = None,
) -> FastAPI:
    """The service. `models` and `tools` replace the configured ones (tests, benchmarks)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        factory = models
        if factory is None:
            settings_factory = SettingsModelFactory(settings)
            settings_factory.check()  # misconfiguration fails here, with a clear message
            factory = settings_factory
        toolset = list(tools) if tools is not None else build_tools(settings)
        async with open_backend(settings) as (store, checkpointer):
            engine = Engine(
                settings=settings, models=factory, tools=toolset, checkpointer=checkpointer
            )
            manager = RunManager(
                engine=engine, store=store, settings=settings, checkpointer=checkpointer
            )
            app.state.manager = manager
            await manager.resume_interrupted()
            logger.info("service ready")
            try:
                yield
            finally:
                await manager.drain()

    app = FastAPI(
        title="plantree",
        version="0.1.0",
        summary="Answers research questions by searching a tree of plans.",
        lifespan=lifespan,
        max_body_size=settings.max_body_bytes,
        docs_url=None,  # app/openapi.py serves /docs and /redoc from vendored files
        redoc_url=None,
    )
    security_headers.install(app)
    app.state.settings = settings
    errors.install(app)
    app.include_router(health.router)
    app.include_router(runs.router)
    openapi.install(app)
    ui.install(app)  # the web page at / and its files under /static
    return app
