"""The FastAPI application: `create_app` and its lifespan (store, engine, run manager)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from langchain_core.tools import BaseTool
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from app import startup
from app.access.limits import KeyLimits
from app.agent_server import assistants as agent_server_assistants
from app.agent_server import routes as agent_server
from app.agent_server import run_routes as agent_server_runs
from app.backends.key_limits_redis import RedisKeyLimits
from app.collections.intake import DocumentIntake
from app.http import errors, openapi, security_headers
from app.http.event_stream import PlantreeApp
from app.http.hosts import HostCheck, allowed_hosts
from app.http.routes import collections, commands, health, runs, threads, ui
from app.mcp_api import server as mcp_server
from app.observability import metrics, metrics_route, telemetry
from app.openai_api import routes as openai_api
from app.service import run_service
from app.settings import Settings, get_settings
from calls.models import ModelFactory

logger = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    models: ModelFactory | None = None,
    tools: Sequence[BaseTool] | None = None,
    worker: bool = True,
    host: str | None = None,
) -> FastAPI:
    """The service. `models` and `tools` replace the configured ones (tests, benchmarks);
    `worker=False` serves the API only (runs execute in worker processes); `host` is the
    address the server binds (an allowed Host when no key is configured)."""
    settings = settings or get_settings()
    keys = settings.key_ring()
    app = PlantreeApp(
        title="plantree",
        version="0.1.0",
        summary="Answers research questions by searching a tree of plans.",
        lifespan=_lifespan(settings, models, tools, worker),
        docs_url=None,  # app/http/openapi.py serves /docs and /redoc from vendored files
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.keys = keys
    redis = startup.redis(settings)
    app.state.limits = KeyLimits(
        rps=settings.key_rps,
        burst=settings.key_burst,
        max_streams=settings.key_max_streams,
        max_runs=settings.max_runs_per_key,
        shared=RedisKeyLimits(redis) if redis is not None else None,
    )
    app.state.documents = DocumentIntake.from_settings(settings)
    errors.add_handlers(app)
    app.include_router(health.router)
    app.include_router(metrics_route.router)  # /metrics
    app.include_router(runs.router)
    app.include_router(threads.router)
    app.include_router(commands.router)
    app.include_router(collections.router)
    # An upload's body may hold its files at their bounds, not only LATS_MAX_BODY_BYTES.
    app.include_router(collections.uploads, max_body_size=app.state.documents.upload_bytes)
    app.include_router(openai_api.router)  # OpenAI-compatible: /v1/chat/completions, /v1/models
    app.include_router(agent_server.router)  # the LangGraph Agent Server's API, under /lg
    app.include_router(agent_server_assistants.router)
    app.include_router(agent_server_runs.router)
    app.state.mcp_sessions = mcp_server.mount(app)  # MCP at /mcp
    _add_middleware(app, settings, allowed_hosts(settings.allowed_hosts, keys.enabled, host))
    telemetry.install()  # OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set
    openapi.install(app)
    ui.install(app)  # the web page at / and its files under /static
    return app


def _lifespan(
    settings: Settings,
    models: ModelFactory | None,
    tools: Sequence[BaseTool] | None,
    worker: bool,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the model factory, the tools and the run service (store, engine,
    run manager) for as long as the app serves, then the last traces flushed."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Misconfiguration fails here, with a clear message, when the caller built nothing.
        factory = models if models is not None else startup.model_factory(settings)
        builtin = list(tools) if tools is not None else startup.research_tools(settings)
        toolset = builtin + await startup.mcp_tools(settings)
        try:
            async with run_service(
                settings,
                models=factory,
                tools=toolset,
                worker=worker,
                queue=metrics.watched_queue(settings),
            ) as manager:
                app.state.manager = manager
                logger.info("service ready")
                async with app.state.mcp_sessions.run():  # the MCP endpoint's task group
                    yield
        finally:
            telemetry.flush()  # the drained runs' last spans

    return lifespan


def _add_middleware(app: FastAPI, settings: Settings, hosts: frozenset[str] | None) -> None:
    """The middleware, each around the ones before it (`add_middleware` wraps what is there):

    `PlainErrorsAsJson` > `SecurityHeaders` > `UnexpectedErrors` > body limit > `HttpMetrics`
    > `HostCheck` > the routes.

    The body limit is added here rather than as FastAPI's `max_body_size` (which would sit
    outside all of these), so its plain 413 gets the headers and the JSON body as well."""
    app.add_middleware(HostCheck, allowed=hosts)
    metrics.install(app)  # HttpMetrics and the run observer
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=settings.max_body_bytes)
    app.add_middleware(errors.UnexpectedErrors)
    app.add_middleware(security_headers.SecurityHeaders)
    app.add_middleware(errors.PlainErrorsAsJson)
