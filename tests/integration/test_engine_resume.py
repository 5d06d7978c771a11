"""Checkpointing: a run stopped mid-search resumes from its SQLite checkpoint and finishes
without executing a completed node again. Cancellation stops in-flight calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.engine import Engine
from agents.errors import RunNotFound
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, FakeModels, Reply, executed_steps, step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

TREE = Scenario(plan=["A"], replans={"A": ["B", "C", "D"]})
PARAMS = RunParams(strategy="mcts", max_paths=3)


class SignallingSaver(AsyncSqliteSaver):
    """A real SQLite saver that tells the test each time a checkpoint is written."""

    written: asyncio.Event

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        out = await super().aput(*args, **kwargs)
        self.written.set()
        return out


async def _saver(path: Path, kind: type[AsyncSqliteSaver] = SignallingSaver) -> tuple[Any, Any]:
    """An open saver of `kind` on the SQLite file `path`, and its context manager."""
    manager = kind.from_conn_string(str(path))
    saver = await manager.__aenter__()
    saver.written = asyncio.Event()  # type: ignore[attr-defined]
    return saver, manager


async def _resumed(
    settings: Settings, db: Path, run_id: str
) -> tuple[RunResult, FakeModels, EventLog]:
    """`run_id` resumed by a fresh engine on the checkpoints in `db`: the result, the new
    engine's models, and the events it sent."""
    saver, manager = await _saver(db)
    models = FakeModels(TREE)
    engine = Engine(settings=settings, models=models, tools=[], checkpointer=saver)
    events = EventLog()
    result = await engine.resume(run_id, sink=events)
    await manager.__aexit__(None, None, None)
    return result, models, events


async def test_a_stopped_run_resumes_from_its_checkpoint_without_redoing_finished_nodes(
    settings: Settings, tmp_path: Path
) -> None:
    db = tmp_path / "checkpoints.sqlite"
    stuck = asyncio.Event()

    async def first_script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) == "D":
            await stuck.wait()  # D is in flight when the run is stopped
        return TREE.reply(call)

    saver, manager = await _saver(db)
    first_models = FakeModels(first_script)
    first = Engine(settings=settings, models=first_models, tools=[], checkpointer=saver)
    run = asyncio.create_task(first.run("task?", PARAMS, run_id="r1"))
    config = {"configurable": {"thread_id": "r1"}}
    async with asyncio.timeout(10):
        while True:
            await saver.written.wait()
            saver.written.clear()
            nodes = (await first.graph.aget_state(config)).values.get("nodes", {})  # type: ignore[arg-type]
            if sum(1 for n in nodes.values() if n["answer"]) == 2:
                break
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await manager.__aexit__(None, None, None)
    saved_done = sorted(n["step"] for n in nodes.values() if n["status"] == "done")
    assert saved_done == ["A", "B", "C"]

    result, second_models, events = await _resumed(settings, db, "r1")

    assert executed_steps(second_models) == ["D"]
    assert second_models.recorder.by_role("planner") == []
    assert len(second_models.recorder.by_role("responder")) == 1
    assert result.status == "done"
    assert result.metrics["paths_completed"] == 3
    assert events.types()[-1] == "done"


async def test_resuming_a_finished_run_makes_no_calls(settings: Settings, tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        models = FakeModels(TREE)
        engine = Engine(settings=settings, models=models, tools=[], checkpointer=saver)
        first = await engine.run("task?", PARAMS, run_id="r2")
        calls = len(models.recorder.calls)

        events = EventLog()
        again = await engine.resume("r2", sink=events)

    assert len(models.recorder.calls) == calls
    assert again.answer == first.answer
    assert again.status == "done"
    # Its end is said again (the first time may never have been stored): one terminal event.
    assert events.types() == ["done"]
    assert events.of("done")[0].answer == first.answer


async def test_resuming_an_unknown_run_raises_run_not_found(
    settings: Settings, tmp_path: Path
) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        engine = Engine(settings=settings, models=FakeModels(TREE), tools=[], checkpointer=saver)
        with pytest.raises(RunNotFound):
            await engine.resume("nope")


async def test_cancelling_a_run_cancels_in_flight_calls_and_emits_cancelled(
    make_engine: EngineMaker, events: EventLog
) -> None:
    started = asyncio.Event()
    waiting: list[str] = []
    interrupted: list[str] = []

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) != "A":
            waiting.append(step_to_execute(call))
            if len(waiting) == 3:
                started.set()  # B, C and D are all in flight
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                interrupted.append(step_to_execute(call))
                raise
        return TREE.reply(call)

    engine, _ = make_engine(script)
    run = asyncio.create_task(engine.run("task?", PARAMS, sink=events))
    async with asyncio.timeout(5):
        await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert sorted(interrupted) == ["B", "C", "D"]
    assert events.types()[-1] == "cancelled"


async def test_stream_yields_events_in_order_ending_with_the_terminal_one(
    make_engine: EngineMaker,
) -> None:
    engine, _ = make_engine(TREE)

    seen = [event.type async for event in engine.stream("task?", PARAMS)]

    assert seen[0] == "run_started"
    assert seen[1] == "plan"
    assert seen[-1] == "done"
    assert seen.count("path_completed") == 3


class CheckpointsFailAfter(AsyncSqliteSaver):
    """A real SQLite saver whose checkpoints stop being written after the `allowed`-th, as
    when the database goes away between a step's saved writes and the checkpoint after it;
    the writes themselves (`aput_writes`) still land."""

    allowed: int
    saved = 0

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        if self.saved >= self.allowed:
            raise ConnectionError("the checkpoint database went away")
        self.saved += 1
        return await super().aput(*args, **kwargs)


async def test_a_run_whose_last_step_saved_its_writes_but_no_checkpoint_resumes_from_them(
    settings: Settings, tmp_path: Path
) -> None:
    db = tmp_path / "checkpoints.sqlite"
    saver, manager = await _saver(db, CheckpointsFailAfter)
    saver.allowed = 4  # input, plan, then two search rounds
    first_models = FakeModels(TREE)
    first = Engine(settings=settings, models=first_models, tools=[], checkpointer=saver)
    failed = await first.run("task?", PARAMS, run_id="r2")
    assert failed.status == "failed"
    config: Any = {"configurable": {"thread_id": "r2"}}
    snapshot = await first.graph.aget_state(config)
    await manager.__aexit__(None, None, None)
    # What the store holds: the step's writes, no checkpoint after them, so no `next`.
    assert snapshot.next == ()
    assert [t.name for t in snapshot.tasks] == ["search"]

    result, second_models, events = await _resumed(settings, db, "r2")

    assert result.status == "done"
    assert events.types()[-1] == "done"
    # The first engine's executed steps are not executed again.
    first_steps = executed_steps(first_models)
    again = executed_steps(second_models)
    assert first_steps
    assert not set(first_steps) & set(again)
