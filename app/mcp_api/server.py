"""The MCP server: research runs as MCP tools and resources.

Tools: `solve` (runs a search, reporting progress as the tree grows, and returns the answer,
sources and run id), `start_run`, `get_run`, `list_runs`, `cancel_run`. Resources:
`plantree://runs` (recent runs) and `plantree://runs/{run_id}` (one run with its tree).

Served over streamable HTTP at `/mcp` (stateless, so any replica can answer any request; the
API keys guard it like every other route, and a key reaches only its own runs) and over stdio
by `lats mcp` (the single user). Runs belong to the run
manager: a client that disconnects stops only its wait, never the run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from fastapi import FastAPI
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.server import StreamableHTTPASGIApp
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agents.params import RunParams
from app.access.limits import RateLimited
from app.access.run_access import Runs
from app.errors import ServiceError
from app.http.auth import require_key
from app.http.errors import Unauthorized
from app.http.responses import view
from app.http.schemas import MAX_TASK_CHARS
from app.keys.tenancy import Caller
from app.observability.progress import Progress
from app.runs.following import Broken, Ended, Paused, Step
from app.store.base import RunStatus
from calls.errors import LatsError

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The caller of the MCP request being served over HTTP (set by `_KeyGuard`).
_caller: ContextVar[Caller | None] = ContextVar("mcp_caller", default=None)

INSTRUCTIONS = (
    "plantree answers hard research questions by searching a tree of plans (web search, arXiv, "
    "Wikipedia). `solve` runs a search and waits for the answer, reporting progress; "
    "`start_run` starts one in the background (follow it with `get_run`)."
)


def build_server(runs: Callable[[], Runs]) -> FastMCP[Any]:
    """An MCP server over the runs that `runs()` gives access to."""
    server: FastMCP[Any] = FastMCP(
        "plantree",
        instructions=INSTRUCTIONS,
        stateless_http=True,
        streamable_http_path="/mcp",
        # The app checks the Host header (app/http/hosts.py) and the keys in front of this.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    _add_tools(server, runs)
    _add_resources(server, runs)
    return server


def _add_tools(server: FastMCP[Any], runs: Callable[[], Runs]) -> None:
    """The run tools: `solve`, `start_run`, `get_run`, `list_runs`, `cancel_run`."""

    @server.tool()
    async def solve(
        task: str, ctx: Context[Any, Any, Any], params: RunParams | None = None
    ) -> dict[str, Any]:
        """Research `task` with a tree search and return the answer, its sources and the run
        id. Sends progress notifications (steps run, paths completed, stage) as the tree
        grows. `params` are the run API's parameters (max_paths, strategy, …); for
        `approve_plan`, use `start_run` and the run API."""
        params = params or RunParams()
        if params.approve_plan:
            raise ToolError("approve_plan needs start_run and POST /runs/{id}/resume")
        return await _solve(runs(), _task(task), params, ctx)

    @server.tool()
    async def start_run(task: str, params: RunParams | None = None) -> dict[str, Any]:
        """Start a search in the background; returns its run id (follow it with get_run)."""
        record = await _guard(runs().submit(_task(task), params or RunParams()))
        return {"run_id": record.id, "status": record.status}

    @server.tool()
    async def get_run(run_id: str, include_tree: bool = False) -> dict[str, Any]:
        """A run: status, answer, sources, stop reason, metrics (and its tree if asked)."""
        access = runs()
        record = await _guard(access.get(run_id))
        nodes = await access.tree(record) if include_tree else None
        return view(record, nodes).model_dump(
            mode="json", exclude=None if include_tree else {"nodes"}
        )

    @server.tool()
    async def list_runs(
        status: RunStatus | None = None, limit: int = 20, offset: int = 0
    ) -> dict[str, Any]:
        """Runs, newest first (`limit` 1-100), and the offset of the next page."""
        if not 1 <= limit <= 100 or offset < 0:
            raise ToolError("limit must be 1 to 100 and offset at least 0")
        records, next_offset = await runs().list(status=status, limit=limit, offset=offset)
        return {
            "runs": [_brief(view(r).model_dump(mode="json")) for r in records],
            "next_offset": next_offset,
        }

    @server.tool()
    async def cancel_run(run_id: str) -> dict[str, Any]:
        """Cancel a run (idempotent; a finished run is returned as it is)."""
        record = await _guard(runs().cancel(run_id))
        return _brief(view(record).model_dump(mode="json"))


def _add_resources(server: FastMCP[Any], runs: Callable[[], Runs]) -> None:
    """The run resources: `plantree://runs` and `plantree://runs/{run_id}`."""

    @server.resource("plantree://runs", mime_type="application/json")
    async def recent_runs() -> str:
        """The 20 most recent runs."""
        records, _ = await runs().list(limit=20)
        return json.dumps([_brief(view(r).model_dump(mode="json")) for r in records])

    @server.resource("plantree://runs/{run_id}", mime_type="application/json")
    async def run_resource(run_id: str) -> str:
        """One run with its tree."""
        access = runs()
        record = await _guard(access.get(run_id))
        return view(record, await access.tree(record)).model_dump_json()


async def _solve(
    access: Runs, task: str, params: RunParams, ctx: Context[Any, Any, Any]
) -> dict[str, Any]:
    """Submit `task`, report its progress to `ctx` as the tree grows, and return the run."""
    record = await _guard(access.submit(task, params))
    progress = Progress()
    async for item in access.follow(record):
        match item:
            case Step(event) | Paused(event) | Ended(event) if event is not None:
                line = progress.update(event.type, json.loads(event.data))
                if line is not None:
                    message = f"[{progress.stage}] {line} · {progress.counts}"
                    await ctx.report_progress(event.seq, None, message)
            case Broken(_, why):
                raise ToolError(f"{why} (run {record.id})")
    done = await access.wait(record.id)
    return _brief(view(done).model_dump(mode="json"))


def _task(task: str) -> str:
    task = task.strip()
    if not 1 <= len(task) <= MAX_TASK_CHARS:
        raise ToolError(f"the task must be 1 to {MAX_TASK_CHARS} characters")
    return task


async def _guard(work: Awaitable[T]) -> T:
    """Await `work`, turning the core's and the service's errors into tool errors with their
    safe messages."""
    try:
        return await work
    except (LatsError, ServiceError) as e:
        raise ToolError(str(e)) from e


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    """A run without its tree and parameters: what a client needs to answer with."""
    keep = (
        "run_id",
        "status",
        "task",
        "answer",
        "partial",
        "sources",
        "citations",
        "groundedness",
        "unsupported",
        "rejected",
        "stop_reason",
        "error",
        "reused_from",
    )
    return {k: run.get(k) for k in keep} | {"metrics": _costs(run.get("metrics") or {})}


def _costs(metrics: dict[str, Any]) -> dict[str, Any]:
    keys = ("llm_calls", "input_tokens", "output_tokens", "tool_calls", "paths_completed", "wall_s")
    return {k: metrics[k] for k in keys if k in metrics}


class _KeyGuard:
    """The API keys in front of the MCP endpoint (it is an ASGI app, outside FastAPI's
    dependencies)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            try:
                caller = await require_key(
                    request, request.headers.get("authorization"), request.headers.get("x-api-key")
                )
            except Unauthorized as e:
                body = {"code": e.code, "message": str(e)}
                headers = {"WWW-Authenticate": "Bearer"}
                await JSONResponse(body, 401, headers=headers)(scope, receive, send)
                return
            except RateLimited as e:
                body = {"code": e.code, "message": str(e)}
                headers = {"Retry-After": str(e.retry_after_s)}
                await JSONResponse(body, 429, headers=headers)(scope, receive, send)
                return
            token = _caller.set(caller)
            try:
                await self.app(scope, receive, send)
            finally:
                _caller.reset(token)
            return
        await self.app(scope, receive, send)


def _http_runs(app: FastAPI) -> Runs:
    """The runs the current MCP-over-HTTP request's caller may reach."""
    caller = _caller.get()
    if caller is None:  # never served outside `_KeyGuard`
        raise ToolError("no caller for this request")
    return Runs(app.state.manager, caller, app.state.limits)


def mount(app: FastAPI) -> StreamableHTTPSessionManager:
    """Serve MCP over streamable HTTP at `/mcp`; the returned session manager must run for
    the app's lifetime (`async with manager.run()` in the lifespan)."""
    server = build_server(lambda: _http_runs(app))
    server.streamable_http_app()  # creates the session manager
    sessions = server.session_manager
    guarded = _KeyGuard(StreamableHTTPASGIApp(sessions))
    # A Route (not a Mount) so that `/mcp` itself answers, without a redirect to `/mcp/`;
    # Starlette runs a non-function endpoint as an ASGI app, which its types do not say.
    app.add_route("/mcp", guarded, ["GET", "POST", "DELETE"], include_in_schema=False)  # type: ignore[arg-type]
    logger.debug("MCP server mounted at /mcp")
    return sessions


async def serve_stdio(app: FastAPI) -> None:
    """Serve MCP over stdin/stdout with the whole service (store, engine, run manager) in this
    process, set up by the app's own lifespan; for desktop clients that start a command."""
    server = build_server(lambda: Runs(app.state.manager))
    async with app.router.lifespan_context(app):
        await server.run_stdio_async()
