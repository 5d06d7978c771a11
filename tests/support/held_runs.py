"""Runs started through the API and held by a gate (testkit/gate.py) at its step."""

from __future__ import annotations

from typing import Any

import httpx

from testkit.gate import Gate


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
