"""The process's start-up heap, kept out of the garbage collector's full collections.

A service process holds a few hundred thousand objects from its imports alone (LangChain,
LangGraph, pydantic, the provider SDKs) that live as long as it does. CPython's full
collection walks all of them every time, and with runs allocating steadily that happened
often enough to cost about a quarter of a small run's CPU. `gc.freeze()` moves everything
alive at start-up into a permanent generation that collections skip; what runs allocate
later is collected as before.
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)


_done = False


def freeze_startup_heap() -> None:
    """Collect once, then freeze every surviving object. Once per process: a later call (a
    second service in the same process, as tests start) changes nothing."""
    global _done
    if _done:
        return
    _done = True
    gc.collect()
    gc.freeze()
    logger.info("heap: %s start-up objects frozen out of collections", gc.get_freeze_count())
