"""Liveness and readiness."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.http.deps import Manager
from calls.settings import ROLES

logger = logging.getLogger(__name__)
router = APIRouter(tags=["health"])
# A readiness probe answers within its own timeout (a hung database answers nothing).
CHECK_TIMEOUT_S = 3.0


@router.get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="The store answers; the model each role uses")
async def readyz(manager: Manager) -> JSONResponse:
    checks: dict[str, str] = {}
    waiting: int | None = None
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await manager.store.ping()
            waiting = await manager.store.leases.count_unclaimed()
        checks["database"] = "ok"
    except Exception as e:
        logger.warning("not ready: the store is unreachable (%s)", type(e).__name__)
        checks["database"] = "unreachable"
    # The model each role actually uses: with no model configured and no Gemini key, that is
    # the bundled local model, not the Gemini default the settings name.
    models = {role: manager.engine.models.model_string(role) for role in ROLES}
    ready = checks["database"] == "ok"
    return JSONResponse(
        {
            "status": "ready" if ready else "not_ready",
            "checks": checks,
            "models": models,
            "active_runs": manager.queue.active,
            "queued_runs": manager.queue.waiting,
            # Stored runs no worker holds yet, whichever process stored them (None: no store).
            "waiting_runs": waiting,
        },
        200 if ready else 503,
        headers=None if ready else {"Retry-After": "5"},
    )
