"""The run's model and tool slots (agents/slots.py): a job inside a tool call gives its model
slot to another job, at most `limit` jobs hold each kind, a job back from its tool waits for a
model slot ahead of new jobs, and an ended job frees whatever it held or waited for."""

from __future__ import annotations

import asyncio

from agents.slots import RunSlots


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _b_started_while_a_is_in_its_tool() -> tuple[RunSlots, object, object]:
    """Slots of limit 1: job `a` started and went into a tool call, then job `b` started."""
    slots = RunSlots(1)
    a, b = object(), object()
    slots.started(a)
    await slots.to_tool(a)
    slots.started(b)
    return slots, a, b


async def test_a_job_in_a_tool_call_frees_its_model_slot_for_a_new_job() -> None:
    slots = RunSlots(2)
    a, b = object(), object()
    slots.started(a)
    slots.started(b)
    assert slots.free_for_new(jobs=2) == 0

    await slots.to_tool(a)

    assert slots.freed.is_set()
    assert (slots.model_load, slots.in_tools) == (1, 1)
    assert slots.free_for_new(jobs=2) == 1


async def test_tool_slots_are_bounded_and_a_waiting_job_holds_no_model_slot() -> None:
    slots, a, b = await _b_started_while_a_is_in_its_tool()

    waiting = asyncio.create_task(slots.to_tool(b))  # the one tool slot is a's
    await _settle()
    assert not waiting.done()
    assert slots.model_load == 0
    assert slots.free_for_new(jobs=2) == 0  # at most 2 * limit jobs

    await slots.to_model(a)  # a's tool ended: its tool slot goes to b
    await _settle()
    assert waiting.done()
    assert (slots.model_load, slots.in_tools) == (1, 1)


async def test_a_job_back_from_its_tool_waits_for_a_model_slot_ahead_of_new_jobs() -> None:
    slots, a, b = await _b_started_while_a_is_in_its_tool()  # b took the model slot a gave back

    back = asyncio.create_task(slots.to_model(a))
    await _settle()
    assert not back.done()
    assert slots.free_for_new(jobs=2) == 0  # a waits for the model slot: no new job

    slots.ended(b)
    await _settle()
    assert back.done()
    assert slots.model_load == 1


async def test_a_parallel_tool_call_waits_with_its_job_and_an_ended_job_frees_waiters() -> None:
    slots, a, b = await _b_started_while_a_is_in_its_tool()
    first = asyncio.create_task(slots.to_tool(b))
    second = asyncio.create_task(slots.to_tool(b))  # b's parallel call: same tool slot
    await _settle()
    assert not first.done()
    assert not second.done()

    slots.ended(a)  # a was cancelled inside its tool
    await _settle()

    assert first.done()
    assert second.done()
    assert slots.in_tools == 1
    slots.ended(b)
    assert (slots.model_load, slots.in_tools) == (0, 0)
    assert slots.free_for_new(jobs=0) == 1
