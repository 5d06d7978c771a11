"""plantree's threads, runs and assistants in the LangGraph Agent Server's shapes
(`langgraph_sdk.schema`): Thread, Run, ThreadState, the thread's `values` and Assistant. Pure:
built from stored records.

A thread's `values` are its conversation as LangChain messages (each run's question, and its
answer with its sources as an AI message carrying the citations) plus the latest run's state
(`run_id`, `status`, `answer`, `citations`, `sources`, `metrics`, …). A thread's checkpoints
are its runs: the state after run k has the id of run k.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from app.agent_server.bodies import GRAPH_ID
from app.observability.progress import with_sources
from app.store.assistant_base import AssistantRecord
from app.store.base import RunRecord, RunStatus, ThreadRecord

AgentRunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
RUN_STATUS: dict[RunStatus, AgentRunStatus] = {
    "queued": "pending",
    "running": "running",
    "done": "success",
    "failed": "error",
    "cancelled": "interrupted",  # the Agent Server's word for a run stopped by a cancel
    "interrupted": "interrupted",
}
THREAD_STATUS: dict[RunStatus, ThreadStatus] = {
    "queued": "busy",
    "running": "busy",
    "interrupted": "interrupted",
    "failed": "error",
    "done": "idle",
    "cancelled": "idle",
}
APPROVAL_NODE = "approve"  # the graph node a run waits at for its plan's answer


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def interrupt_of(run: RunRecord, steps: Sequence[str]) -> dict[str, Any]:
    """The Interrupt a run waiting for its plan's answer shows."""
    return {"value": {"kind": "plan", "steps": list(steps)}, "id": f"{run.id}:plan"}


def messages(runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """The runs as a LangChain conversation: a human message per question, an AI message per
    answer (with its sources appended, its citations in `additional_kwargs`)."""
    out: list[dict[str, Any]] = []
    for run in runs:
        out.append(
            {
                "type": "human",
                "id": f"{run.id}:question",
                "content": run.task,
                "additional_kwargs": {},
                "response_metadata": {},
                "name": None,
            }
        )
        answer = answer_message(run)
        if answer is not None:
            out.append(answer)
    return out


def answer_message(run: RunRecord) -> dict[str, Any] | None:
    """The run's answer as an AI message, once it has one."""
    result = run.result
    if run.status != "done" or result is None or result.answer is None:
        return None
    return {
        "type": "ai",
        "id": f"{run.id}:answer",
        "content": with_sources(result.answer, result.sources),
        "additional_kwargs": {"citations": result.citations, "sources": result.sources},
        "response_metadata": {
            "run_id": run.id,
            "stop_reason": result.stop_reason,
            "groundedness": result.groundedness,
        },
        "name": None,
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": _usage(result.metrics),
    }


def _usage(metrics: dict[str, Any]) -> dict[str, int] | None:
    tokens_in, tokens_out = metrics.get("input_tokens"), metrics.get("output_tokens")
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
        return None
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }


def values(runs: Sequence[RunRecord]) -> dict[str, Any]:
    """The thread's values after `runs` (oldest first): its messages and the last run's
    state."""
    if not runs:
        return {"messages": []}
    last = runs[-1]
    state = {
        "run_id": last.id,
        "status": last.status,
        "task": last.task,
        "params": last.params.model_dump(mode="json"),
        **last.answer_fields(),
    }
    return {"messages": messages(runs), **state}


def joined(runs: Sequence[RunRecord], waiting: dict[str, Any] | None) -> dict[str, Any]:
    """The values a wait for a run answers: the thread's, with `__interrupt__` when its last
    run waits for its plan's answer."""
    shown = values(runs)
    return {**shown, "__interrupt__": [waiting]} if waiting is not None else shown


def thread_status(runs: Sequence[RunRecord]) -> ThreadStatus:
    return THREAD_STATUS[runs[-1].status] if runs else "idle"


def thread(
    record: ThreadRecord, runs: Sequence[RunRecord], waiting: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Thread object; `waiting` is the interrupt of its last run when that run waits."""
    updated = max([record.created_at, *(r.updated_at for r in runs)])
    return {
        "thread_id": record.id,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(updated),
        "metadata": {"graph_id": GRAPH_ID},
        "status": thread_status(runs),
        "values": values(runs),
        "interrupts": {runs[-1].id: [waiting]} if waiting is not None and runs else {},
    }


def run(record: RunRecord) -> dict[str, Any]:
    """A Run object. A run keeps its parameters (`kwargs.context`), not the name of the preset
    they started from, so `assistant_id` is the graph's, which both presets run."""
    return {
        "run_id": record.id,
        "thread_id": record.thread_id,
        "assistant_id": GRAPH_ID,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
        "status": RUN_STATUS[record.status],
        "metadata": {},
        "multitask_strategy": "reject",
        "kwargs": {
            "input": {"task": record.task},
            "context": record.params.model_dump(mode="json"),
        },
    }


def assistant(record: AssistantRecord) -> dict[str, Any]:
    """An Assistant object: its parameters are one set, shown both as `config.configurable`
    and as `context`."""
    return {
        "assistant_id": record.id,
        "graph_id": GRAPH_ID,
        "name": record.name,
        "description": record.description,
        "config": {"configurable": dict(record.params)},
        "context": dict(record.params),
        "metadata": dict(record.metadata),
        "version": record.version,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
    }


def checkpoint(thread_id: str, run_id: str) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": run_id,
        "checkpoint_map": None,
    }


def state(
    thread_id: str, runs: Sequence[RunRecord], waiting: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ThreadState after `runs` (oldest first); `waiting` is the interrupt of the last
    run when it waits for its plan's answer (then `next` is the approval node)."""
    if not runs:
        return {
            "values": values(runs),
            "next": [],
            "checkpoint": checkpoint(thread_id, ""),
            "metadata": {},
            "created_at": None,
            "parent_checkpoint": None,
            "tasks": [],
            "interrupts": [],
        }
    last = runs[-1]
    interrupts = [waiting] if waiting is not None else []
    tasks = [
        {
            "id": f"{last.id}:{APPROVAL_NODE}",
            "name": APPROVAL_NODE,
            "error": None,
            "interrupts": interrupts,
            "checkpoint": None,
            "state": None,
            "result": None,
        }
    ]
    return {
        "values": values(runs),
        "next": [APPROVAL_NODE] if waiting is not None else [],
        "checkpoint": checkpoint(thread_id, last.id),
        "metadata": {"run_id": last.id, "source": "loop", "step": len(runs)},
        "created_at": _iso(last.updated_at),
        "parent_checkpoint": checkpoint(thread_id, runs[-2].id) if len(runs) > 1 else None,
        "tasks": tasks if waiting is not None else [],
        "interrupts": interrupts,
    }


def history(
    thread_id: str,
    runs: Sequence[RunRecord],
    waiting: dict[str, Any] | None,
    limit: int,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """The thread's states, newest first: one after each run, at most `limit`, only those
    older than the checkpoint `before` when given."""
    end = len(runs)
    if before is not None:
        ids = [r.id for r in runs]
        end = ids.index(before) if before in ids else 0
    states = []
    for k in range(end, max(end - limit, 0), -1):
        states.append(state(thread_id, runs[:k], waiting if k == len(runs) else None))
    return states
