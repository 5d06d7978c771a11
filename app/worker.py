"""`lats worker`: a process that executes runs and serves no HTTP.

It claims runs that API processes store, and runs whose worker died; SIGTERM or SIGINT drains
its runs (they go back to the store for the next worker) and exits.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal

from app import startup
from app.service import run_service
from app.settings import Settings

logger = logging.getLogger(__name__)


async def run_worker(settings: Settings) -> None:
    """Work until SIGTERM or SIGINT, then drain."""
    models = startup.model_factory(settings)
    tools = startup.research_tools(settings) + await startup.mcp_tools(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with run_service(settings, models=models, tools=tools, worker=True) as manager:
        # What start-up built lives as long as the process: kept out of every collection,
        # including the ones at exit, which would otherwise scan it for seconds.
        gc.freeze()
        logger.info("worker owner=%s ready", manager.lease.owner)
        await stop.wait()
        logger.info("worker owner=%s stopping", manager.lease.owner)
