"""Parallel scheduling: concurrency reaches its limit, never exceeds it, and a slow branch does
not hold back the others. Measured on the fakes' in-flight counter; nothing sleeps."""

from __future__ import annotations

import asyncio
import threading

import pytest
from langchain_core.tools import tool

from agents.jobs import StopGate
from agents.params import RunParams
from agents.slots import RunSlots
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, Reply, step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

FAN = Scenario(plan=["A"], replans={"A": ["B", "C", "D", "E"]})


@pytest.mark.parametrize("limit", [1, 2, 4])
async def test_concurrency_reaches_max_concurrency_and_never_exceeds_it(
    make_engine: EngineMaker, limit: int
) -> None:
    full = asyncio.Event()
    holder: dict[str, object] = {}

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) != "A":
            recorder = holder["recorder"]
            if recorder.in_flight >= limit:  # type: ignore[attr-defined]
                full.set()
            async with asyncio.timeout(5):
                await full.wait()
        return FAN.reply(call)

    engine, models = make_engine(script)
    holder["recorder"] = models.recorder

    result = await engine.run(
        "task?", RunParams(strategy="mcts", max_candidates=4, max_concurrency=limit)
    )

    assert result.status == "done"
    assert models.recorder.max_in_flight == limit


async def test_a_slow_branch_does_not_hold_back_the_others(
    make_engine: EngineMaker, events: EventLog
) -> None:
    slow_released = asyncio.Event()

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) == "B":
            await slow_released.wait()
        return FAN.reply(call)

    engine, _ = make_engine(script)

    result = await engine.run(
        "task?", RunParams(strategy="mcts", max_candidates=4, max_paths=3), sink=events
    )

    completed = [e.node_id for e in events.of("path_completed")]
    assert sorted(completed) == ["n1.2", "n1.3", "n1.4"]
    assert result.stop_reason == "max_paths"
    b_finished = [e for e in events.of("node_finished") if e.node_id == "n1.1"]
    assert [e.status for e in b_finished] == ["cancelled"]


# Four branches whose steps each call a tool that holds (a 3 s rate-limit spacing, a slow
# host) until the test lets it go.
HELD_TOOLS = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D", "E"], "B": [], "C": [], "D": [], "E": []},
    tools={step: ("held_lookup", {"query": step}) for step in "BCDE"},
)


async def test_branches_waiting_for_tools_give_their_model_slots_to_other_branches(
    make_engine: EngineMaker,
) -> None:
    """With `max_concurrency` 2, B and C wait inside their tool calls; D and E still get
    their model calls while a tool holds (before any returns), then wait for one of the 2
    tool slots. Held tools would time out, and D and E ask only after, if a job in a tool
    call kept its slot."""
    release = asyncio.Event()
    tools_running: list[int] = [0, 0]  # now, most at once
    asked_while_held: set[str] = set()

    @tool
    async def held_lookup(query: str) -> str:
        """Look the query up."""
        tools_running[0] += 1
        tools_running[1] = max(tools_running[1], tools_running[0])
        try:
            async with asyncio.timeout(5):  # without the slots, nothing ever releases it
                await release.wait()
        except TimeoutError:
            pass
        finally:
            tools_running[0] -= 1
        return f"found {query}"

    async def script(call: FakeCall) -> Reply:
        step = step_to_execute(call) if call.role == "executor" else None
        if step in ("D", "E") and not release.is_set() and tools_running[0] > 0:
            asked_while_held.add(step)
            if asked_while_held == {"D", "E"}:
                release.set()
        return HELD_TOOLS.reply(call)

    engine, models = make_engine(script, tools=[held_lookup])

    result = await engine.run(
        "task?", RunParams(strategy="mcts", max_candidates=4, max_paths=4, max_concurrency=2)
    )

    assert result.status == "done"
    assert asked_while_held == {"D", "E"}  # their model calls came while B and C's tools held
    assert tools_running[1] == 2  # never more tool calls than tool slots
    assert models.recorder.max_in_flight <= 2  # never more model calls than model slots
    assert result.metrics["tool_calls"] == 4


SYNC_TOOLS = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D", "E"], "B": [], "C": [], "D": [], "E": []},
    tools={step: ("sync_lookup", {"query": step}) for step in "BCDE"},
)


@pytest.mark.timeout(60)
async def test_sync_tools_in_threads_move_their_jobs_between_slots_on_the_runs_loop(
    make_engine: EngineMaker,
) -> None:
    """A sync tool runs in a thread, where LangChain calls the slots' handlers in an event
    loop of its own. With one model slot for four branches, a job whose tool ended must wait
    there for the slot: the wait is the run's loop's, and the run ends."""
    threads: set[int] = set()

    @tool
    def sync_lookup(query: str) -> str:
        """Look the query up."""
        threads.add(threading.get_ident())
        return f"found {query}"

    engine, models = make_engine(SYNC_TOOLS.reply, tools=[sync_lookup])

    async with asyncio.timeout(30):
        result = await engine.run(
            "task?", RunParams(strategy="mcts", max_candidates=4, max_paths=4, max_concurrency=1)
        )

    assert result.status == "done"
    assert result.metrics["tool_calls"] == 4
    assert threads  # the tool ran in a worker thread, not on the run's loop
    assert models.recorder.max_in_flight == 1


async def test_a_tool_reported_from_a_thread_leaves_the_slots_to_the_runs_loop() -> None:
    """What LangChain does for a sync tool: its start and end are reported in its worker
    thread, the async handlers run there in an event loop of their own, which may not touch
    the run's slots (their waits would never be woken). The job keeps its model slot, and
    neither report waits, though another job waits for that slot."""
    slots = RunSlots(limit=1)
    in_tool, other = StopGate(slots), StopGate(slots)
    slots.started(in_tool)
    slots.started(other)  # waits behind it for the one model slot
    ended = threading.Event()

    def report() -> None:  # a daemon: if a report waited for ever, the test fails, not hangs
        asyncio.run(in_tool.on_tool_start())
        asyncio.run(in_tool.on_tool_end())
        ended.set()

    threading.Thread(target=report, daemon=True).start()

    assert await asyncio.to_thread(ended.wait, 5)
    assert slots.model_load == 2  # both still count on the model slots
    assert slots.in_tools == 0
