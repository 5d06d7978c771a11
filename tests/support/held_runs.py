"""Runs started through the API and held by a gate (testkit/gate.py) at its step."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from testkit.gate import Gate
from tests.support.makers import ServiceMaker
from tests.support.server import Service


async def start_held(
    client: httpx.AsyncClient,
    gate: Gate,
    body: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    within_s: float = 5.0,
) -> str:
    """POST /runs with `body` and wait (up to `within_s`) until `gate` holds a call of the run;
    the run's id."""
    run_id: str = (await client.post("/runs", json=body, headers=headers)).json()["run_id"]
    await gate.reached(within_s)
    return run_id


@contextlib.asynccontextmanager
async def service_with_held_run(
    service_for: ServiceMaker, body: dict[str, Any], **settings: Any
) -> AsyncIterator[tuple[Service, Gate, str]]:
    """A service (with `settings`) on a fresh `Gate`, and a run of `body` started on it and
    held at the gate: the service, the gate and the run's id."""
    gate = Gate()
    async with service_for(gate, **settings) as svc:
        yield svc, gate, await start_held(svc.client, gate, body)
