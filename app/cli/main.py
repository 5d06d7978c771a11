"""`lats`: serve the API (with or without a worker), run a worker, solve a task (in-process or
against a server, on a thread, over document collections), answer a plan waiting for approval,
list and show runs, keep a server's document collections (`lats docs`, app/cli/documents.py)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
from langchain_core.tools import BaseTool
from pydantic import ValidationError
from rich.console import Console

from agents.params import RunParams
from app.cli import documents
from app.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CliError
from app.cli.remote import approve, auth_headers, runs, show, solve_remote, thread
from app.cli.render import JsonLines, LiveTree, Renderer, TreePrinter
from app.errors import ServiceError
from app.http.schemas import MAX_TASK_CHARS
from app.logs import configure as configure_logging
from app.settings import Settings
from calls.errors import ConfigError, LatsError
from calls.models import ModelFactory

PARAM_FLAGS = (
    "max_paths",
    "max_candidates",
    "max_depth",
    "max_nodes",
    "max_llm_calls",
    "max_tokens",
    "max_concurrency",
    "deadline_s",
    "strategy",
)
# Long-running processes: their own INFO lines are their log, shown without -v.
SERVICES = frozenset({"serve", "worker", "mcp"})


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as e:
        problems = "; ".join(
            f"LATS_{'.'.join(map(str, x['loc'])).upper()}: {x['msg']}" for x in e.errors()
        )
        raise CliError(f"invalid settings: {problems}") from e


def _params(args: argparse.Namespace) -> RunParams:
    given = {k: getattr(args, k) for k in PARAM_FLAGS if getattr(args, k) is not None}
    if getattr(args, "approve_plan", False):
        given["approve_plan"] = True
    try:
        return RunParams(**given)
    except ValidationError as e:
        problems = "; ".join(
            f"--{str(x['loc'][0]).replace('_', '-')}: {x['msg']}" for x in e.errors()
        )
        raise CliError(f"invalid option: {problems}") from e


def _with_collections(params: RunParams, ids: list[str]) -> RunParams:
    """`params` searching the collections `ids` (`--collection`, resolved by the server)."""
    try:
        return RunParams(**params.model_dump(exclude_defaults=True), collections=ids)
    except ValidationError as e:
        raise CliError(f"invalid option: --collection: {e.errors()[0]['msg']}") from e


def _started(settings: Settings) -> tuple[ModelFactory, list[BaseTool]]:
    """The models and tools a service starts with, built once and checked; or a `CliError`."""
    from app import startup

    try:
        return startup.model_factory(settings), startup.research_tools(settings)
    except ConfigError as e:
        raise CliError(f"cannot start: {e}") from e


# -- commands ---------------------------------------------------------------------------------
def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app

    settings = _settings()
    models, tools = _started(settings)
    uvicorn.run(
        create_app(settings, models=models, tools=tools, worker=not args.no_worker, host=args.host),
        host=args.host,
        port=args.port,
        log_config=None,
        # Open event streams are closed after this, then running runs are drained.
        timeout_graceful_shutdown=settings.shutdown_grace_s,
    )
    return EXIT_OK


def worker(args: argparse.Namespace) -> int:
    from app.worker import run_worker

    settings = _settings()
    try:
        asyncio.run(run_worker(settings))
    except ConfigError as e:
        raise CliError(f"cannot start: {e}") from e
    return EXIT_OK


def mcp(args: argparse.Namespace) -> int:
    """`lats mcp`: the MCP server over stdio (stdout carries the protocol; logs go to stderr)."""
    from app.main import create_app
    from app.mcp_api.server import serve_stdio

    settings = _settings()
    models, tools = _started(settings)
    app = create_app(settings, models=models, tools=tools)
    asyncio.run(serve_stdio(app))
    return EXIT_OK


async def _solve_local(task: str, params: RunParams, renderer: Renderer) -> int:
    from agents.engine import Engine
    from app import startup

    settings = _settings()
    models, tools = _started(settings)
    engine = Engine(settings=settings, models=models, tools=tools)
    code = EXIT_FAILED
    async with startup.local_docs_alone(settings):  # its folder is searched in the store
        async for event in engine.stream(task, params):
            renderer.handle(event.model_dump(mode="json"))
            if event.type == "done":
                code = EXIT_OK
    return code


def solve(args: argparse.Namespace) -> int:
    task = args.task.strip()
    if not task or len(task) > MAX_TASK_CHARS:
        raise CliError(f"the task must be 1 to {MAX_TASK_CHARS} characters")
    params = _params(args)
    if not args.url and (args.thread or params.approve_plan or args.collection):
        raise CliError("--thread, --approve-plan and --collection need a server (--url)")
    if args.collection:
        names = documents.collection_ids(args.url, args.collection, auth_headers(args))
        params = _with_collections(params, asyncio.run(names))
    with _renderer(args.json) as renderer:
        if args.url:
            return asyncio.run(
                solve_remote(
                    args.url, task, params, renderer, auth_headers(args), thread_id=args.thread
                )
            )
        return asyncio.run(_solve_local(task, params, renderer))


@contextmanager
def _renderer(as_json: bool) -> Iterator[Renderer]:
    """JSON Lines with `--json`; on a terminal (not `TERM=dumb`) the tree under a live
    progress line; else the tree as plain lines."""
    console = Console(file=sys.stdout)
    if as_json:
        yield JsonLines(sys.stdout)
    elif console.is_terminal and not console.is_dumb_terminal:
        with LiveTree(console) as live:
            yield live
    else:
        yield TreePrinter(sys.stdout)


def migrate(args: argparse.Namespace) -> int:
    return asyncio.run(migrate_async(args))


async def migrate_async(args: argparse.Namespace) -> int:
    """`lats migrate`: copy every run, event and checkpoint to another store, then verify."""
    try:
        from app.store import migrate as moving
    except ImportError as e:
        raise CliError("lats migrate needs the postgres extra (psycopg)", EXIT_FAILED) from e
    try:
        source_at, target_at = moving.locations(args.source, args.target)
    except moving.LocationError as e:
        raise CliError(str(e)) from e
    settings = _settings()

    def progress(kind: str, copied: int) -> None:
        if copied % args.batch == 0:
            print(f"copied {copied} {kind}s", file=sys.stderr)

    async with (
        moving.open_side(source_at, settings, source=True) as source,
        moving.open_side(target_at, settings, source=False) as target,
    ):
        report = await moving.migrate(
            source, target, merge=args.merge, batch=args.batch, progress=progress
        )
    print("\n".join(report.lines()))
    for problem in report.mismatches:
        print(f"lats: verification: {problem}", file=sys.stderr)
    return EXIT_OK if report.verified else EXIT_FAILED


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


# -- entry --------------------------------------------------------------------------------------
def _command(sub: Any, func: Callable[[argparse.Namespace], int], about: str) -> Any:
    """The subcommand named after `func`, which runs it."""
    p = sub.add_parser(func.__name__, help=about)
    p.set_defaults(func=func)
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="-v: INFO logs, the libraries' included; -vv: DEBUG",
    )
    return p


def _remote(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--url", required=required, help="a running server, e.g. http://127.0.0.1:8000")
    p.add_argument("--api-key", default=None, help="sent as Authorization: Bearer")


def _service_commands(sub: Any) -> None:
    p = _command(sub, serve, "run the HTTP service (and a worker, unless --no-worker)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default loopback only; with no API key configured, requests "
        "must name an allowed host: LATS_ALLOWED_HOSTS)",
    )
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--no-worker",
        action="store_true",
        help="serve the API only; runs execute in `lats worker` processes",
    )
    _command(sub, worker, "execute runs, no HTTP (scale by starting more)")
    _command(sub, mcp, "serve the MCP tools over stdio (for desktop MCP clients)")


def _run_commands(sub: Any) -> None:
    p = _command(sub, solve, "answer a task, showing the search live")
    p.add_argument("task")
    _remote(p, required=False)
    p.add_argument(
        "--json",
        action="store_true",
        help="print every event as one JSON object per line (JSON Lines) and nothing else",
    )
    for name in PARAM_FLAGS:
        kind: Any = float if name == "deadline_s" else (str if name == "strategy" else int)
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None)
    p.add_argument("--thread", default=None, help="ask on this thread (`lats thread`; --url)")
    p.add_argument(
        "--approve-plan",
        action="store_true",
        help="stop at the plan until `lats approve` answers it (--url)",
    )
    p.add_argument(
        "--collection",
        action="append",
        default=[],
        metavar="NAME",
        help="search this document collection too (`lats docs`; repeatable; --url)",
    )
    p = _command(sub, thread, "start a thread on a server; prints its id")
    _remote(p, required=True)
    p = _command(sub, approve, "answer a run waiting for its plan's approval")
    p.add_argument("run_id")
    p.add_argument("--edit", default=None, metavar="FILE", help="run these steps, one a line")
    p.add_argument("--reject", action="store_true", help="reject the plan: the run is cancelled")
    _remote(p, required=True)
    p = _command(sub, runs, "list runs on a server")
    _remote(p, required=True)
    p.add_argument("--status", default=None)
    p.add_argument("--limit", type=int, default=20)
    p = _command(sub, show, "show one run and its tree")
    p.add_argument("run_id")
    _remote(p, required=True)


def _store_commands(sub: Any) -> None:
    p = _command(sub, migrate, "copy every run, event and checkpoint to another store, and verify")
    where = "a postgresql:// URL or the data directory of a SQLite store"
    p.add_argument("--from", dest="source", required=True, help=where)
    p.add_argument("--to", dest="target", required=True, help=where)
    p.add_argument(
        "--merge",
        action="store_true",
        help="add to a target that holds other runs (a run on both sides must be equal)",
    )
    p.add_argument("--batch", type=_positive, default=100, help="runs read per page")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="lats", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    _service_commands(sub)
    _run_commands(sub)
    _store_commands(sub)
    documents.add_commands(sub, _command, _remote)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """The `lats` command; returns the exit code."""
    args = parser().parse_args(argv)
    configure_logging(args.verbose, service=args.command in SERVICES)
    try:
        code: int = args.func(args)
        return code
    except CliError as e:
        print(f"lats: {e}", file=sys.stderr)
        return e.code
    except (LatsError, ServiceError) as e:
        print(f"lats: {e}", file=sys.stderr)
        return EXIT_FAILED
    except httpx.HTTPError as e:
        print(f"lats: cannot reach the server ({type(e).__name__})", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (`lats solve --json | head`): no traceback, and no
        # second error when the interpreter flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
