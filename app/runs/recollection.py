"""What a run asked on a thread starts from: the thread's earlier finished runs, read from the
store, turned into the engine's recollection (agents/recall.py) when the run first starts. A
resumed run finds it in its checkpoint instead."""

from __future__ import annotations

import logging

from agents.recall import EarlierRun, recall
from agents.state import Recollection
from app.store.base import RunRecord
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)
MAX_EARLIER_RUNS = 20
"""The latest runs of a thread a new run reads (older ones are left out)."""


def earlier_run(record: RunRecord) -> EarlierRun | None:
    """A finished run as a recollection reads it; None when it has no answer."""
    result = record.result
    if result is None or result.status != "done" or not result.answer:
        return None
    return EarlierRun(
        run_id=record.id,
        question=record.task,
        answer=result.answer,
        cited=[citation["quote"] for citation in result.citations],
        evidence=[item for node in result.nodes for item in node["evidence"]],
    )


async def recollection_for(store: RunStore, record: RunRecord) -> Recollection | None:
    """The recollection of `record`'s thread for it: the answered runs created before it."""
    if record.thread_id is None:
        return None
    runs = await store.threads.runs(record.thread_id)
    before = [r for r in runs if r.id != record.id and r.created_at <= record.created_at]
    earlier = [run for r in before[-MAX_EARLIER_RUNS:] if (run := earlier_run(r)) is not None]
    known = recall(record.task, earlier)
    logger.info(
        "run=%s thread=%s recalls %d earlier run(s), %d passage(s)",
        record.id,
        record.thread_id,
        len(earlier),
        len(known["evidence"]) if known else 0,
    )
    return known
