"""`lats` against a running server (`--url`): a task solved on it, its runs listed and shown, a
thread started, a plan answered; and the JSON calls they make."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import httpx

from agents.params import RunParams
from app.cli.errors import EXIT_FAILED, EXIT_OK, CliError
from app.cli.render import Renderer, footnotes
from app.http.sse import aframes

REVIEWED = {"approve": "approved", "edit": "edited", "reject": "rejected"}


def auth_headers(args: argparse.Namespace) -> dict[str, str]:
    """The `Authorization` header `--api-key` asks for (none without one)."""
    return {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}


async def solve_remote(
    url: str,
    task: str,
    params: RunParams,
    renderer: Renderer,
    headers: dict[str, str],
    *,
    thread_id: str | None = None,
) -> int:
    """Run `task` on the server at `url` (on thread `thread_id`, if given), rendering its SSE
    stream until the run ends, or waits for its plan's approval; the exit code."""
    body: dict[str, Any] = {"task": task, **params.model_dump(exclude_defaults=True)}
    if thread_id is not None:
        body["thread_id"] = thread_id
    code = EXIT_FAILED
    async with (
        httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30, read=60)) as client,
        client.stream("POST", "/solve", json=body, headers=headers) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            raise CliError(_http_problem(response), EXIT_FAILED)
        async for frame in aframes(response.aiter_lines()):
            event = frame.json()
            renderer.handle(event)
            if event["type"] == "done":
                code = EXIT_OK
            if event["type"] == "interrupt":
                return EXIT_OK  # the run waits: `lats approve` answers it
    return code


def _http_problem(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"server said {response.status_code}: {body.get('message', body)}"
    except ValueError:
        return f"server said {response.status_code}"


async def fetch_json(url: str, path: str, headers: dict[str, str]) -> Any:
    """GET `path` on the server; the JSON body, or a `CliError` with the server's message."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.get(path, headers=headers)
    if response.status_code != 200:
        raise CliError(_http_problem(response), EXIT_FAILED)
    return response.json()


def runs(args: argparse.Namespace) -> int:
    return asyncio.run(runs_async(args))


async def runs_async(args: argparse.Namespace) -> int:
    """`lats runs`: one line per run, newest first."""
    query = f"/runs?limit={args.limit}" + (f"&status={args.status}" if args.status else "")
    body = await fetch_json(args.url, query, auth_headers(args))
    for run in body["runs"]:
        task = run["task"] if len(run["task"]) <= 60 else run["task"][:57] + "..."
        print(f"{run['run_id']}  {run['status']:<11} {run['created_at'][:19]}  {task}")
    return EXIT_OK


def show(args: argparse.Namespace) -> int:
    return asyncio.run(show_async(args))


async def show_async(args: argparse.Namespace) -> int:
    """`lats show`: the run, its tree (the chosen path starred) and its answer."""
    run = await fetch_json(args.url, f"/runs/{args.run_id}", auth_headers(args))
    print(f"run {run['run_id']} · {run['status']} · stop: {run['stop_reason']}")
    print(f"task: {run['task']}")
    children: dict[str | None, list[dict[str, Any]]] = {}
    for node in run.get("nodes") or []:
        children.setdefault(node["parent_id"], []).append(node)

    def draw(parent: str | None, depth: int) -> None:
        for node in children.get(parent, []):
            mark = "★" if node["id"] in run["path"] else " "
            print(f"{'  ' * depth}{mark} {node['id']} [{node['status']}] {node['step']}")
            draw(node["id"], depth + 1)

    draw(None, 1)
    if run.get("answer"):
        print(f"\nanswer:\n{run['answer']}")
        print(footnotes(run), end="")
    return EXIT_OK if run["status"] != "failed" else EXIT_FAILED


async def post_json(
    url: str, path: str, headers: dict[str, str], body: dict[str, Any] | None = None
) -> Any:
    """POST `body` to `path` on the server; the JSON body, or a `CliError` with the server's
    message."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post(path, json=body, headers=headers)
    if response.status_code not in (200, 201, 202):
        raise CliError(_http_problem(response), EXIT_FAILED)
    return response.json()


def thread(args: argparse.Namespace) -> int:
    return asyncio.run(thread_async(args))


async def thread_async(args: argparse.Namespace) -> int:
    """`lats thread`: a new thread on the server; prints its id (for `solve --thread`)."""
    made = await post_json(args.url, "/threads", auth_headers(args))
    print(made["thread_id"])
    return EXIT_OK


def plan_steps(path: str) -> list[str]:
    """The steps of an edited plan: one a line of the file (blank lines skipped)."""
    try:
        with open(path, encoding="utf-8") as handle:
            steps = [line.strip() for line in handle if line.strip()]
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from e
    if not steps:
        raise CliError(f"{path} holds no step")
    return steps


def approve(args: argparse.Namespace) -> int:
    return asyncio.run(approve_async(args))


async def approve_async(args: argparse.Namespace) -> int:
    """`lats approve RUN [--edit FILE | --reject]`: answer a run waiting for its plan."""
    if args.edit and args.reject:
        raise CliError("--edit and --reject exclude each other")
    body: dict[str, Any] = {"action": "reject" if args.reject else "approve"}
    if args.edit:
        body = {"action": "edit", "steps": plan_steps(args.edit)}
    run = await post_json(args.url, f"/runs/{args.run_id}/resume", auth_headers(args), body)
    print(f"run {run['run_id']} · plan {REVIEWED[body['action']]} · {run['status']}")
    return EXIT_OK
