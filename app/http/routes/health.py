"""Liveness and readiness."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.http.deps import AppSettings, Manager

logger = logging.getLogger(__name__)
router = APIRouter(tags=["health"])
# A readiness probe answers within its own timeout (a hung database answers nothing).
CHECK_TIMEOUT_S = 3.0


@router.get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="The store answers and a model is configured")
async def readyz(manager: Manager, settings: AppSettings) -> JSONResponse:
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
    checks["model"] = settings.model if settings.model else "missing"
    ready = checks["database"] == "ok" and checks["model"] != "missing"
    return JSONResponse(
        {
            "status": "ready" if ready else "not_ready",
            "checks": checks,
            "active_runs": manager.queue.active,
            "queued_runs": manager.queue.waiting,
            # Stored runs no worker holds yet, whichever process stored them (None: no store).
            "waiting_runs": waiting,
        },
        200 if ready else 503,
        headers=None if ready else {"Retry-After": "5"},
    )
