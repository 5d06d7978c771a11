"""A finished run's result answers an identical request: the same task, run parameters (all
but `use_cache`), models (each role's model identity, as the model-call cache keys it), tools
and thread context, within `result_reuse_s` of the first run's end.

Why reuse the result instead of replaying the search through the model-call cache: with jobs
in parallel the search's choices depend on the order in which replies arrive, so a rerun may
take a branch the first run never took and pay for its calls (after a `max_paths` stop with
calls in flight, or when a slow call finished late). A reused result costs no model call
whatever the first run's timing.

With `use_cache=false` a run never reuses a result, and its own result replaces the kept one
(as its tool calls refresh the tools' cache). A run that waited for its plan's approval or
was steered is never kept or reused: a caller shaped it. The store is the model-call cache's
(`calls/cache.py`: in memory, a SQLite file, Redis or Postgres), so reuse reaches across the
processes that share that cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any, get_args

from agents.context import RunContext
from agents.result import RunResult
from calls.cache import CacheStore, aget, aput
from calls.settings import Role

logger = logging.getLogger(__name__)

_PREFIX = "plantree-run-result:"


def reuse_key(ctx: RunContext) -> str | None:
    """The key of the run's request, or None when its result may not be kept or reused."""
    params = ctx.params
    if params.approve_plan or params.collections or ctx.settings.result_reuse_s <= 0:
        return None  # (a collection's documents change between runs)
    try:
        models = {role: ctx.model(role)._get_llm_string() for role in get_args(Role)}
    except Exception as e:  # a role's model cannot be built: the run will say so if it needs it
        logger.warning("run=%s no reuse: a model's identity is unknown (%r)", ctx.run_id, e)
        return None
    request: dict[str, Any] = {
        "task": ctx.task,
        "params": params.model_dump(exclude={"use_cache"}),
        "known": ctx.known,
        "models": models,
        "tools": [(tool.name, tool.description) for tool in ctx.tools],
    }
    text = json.dumps(request, sort_keys=True, default=str)
    return _PREFIX + hashlib.sha256(text.encode()).hexdigest()


async def reusable(ctx: RunContext, store: CacheStore, key: str) -> RunResult | None:
    """The kept result for `key`, if the run may reuse one and one is young enough."""
    if not ctx.params.use_cache:
        return None
    try:
        text = await aget(store, key)
    except Exception as e:  # a cache is an optimisation: the run searches instead
        logger.warning("run=%s no result could be looked up for reuse: %r", ctx.run_id, e)
        return None
    if text is None:
        return None
    kept = json.loads(text)
    if time.time() - kept["at"] > ctx.settings.result_reuse_s:
        return None
    return RunResult.model_validate(kept["result"])


async def keep(ctx: RunContext, store: CacheStore, key: str, result: RunResult) -> None:
    """Keep a `done` run's result for the identical requests after it."""
    if result.status != "done" or result.answer is None or result.partial:
        return
    value = json.dumps({"at": time.time(), "result": result.model_dump(mode="json")})
    try:
        await aput(store, key, value)
    except Exception as e:  # a cache is an optimisation: the run's own end stands
        logger.warning("run=%s its result was not kept for reuse: %r", ctx.run_id, e)
