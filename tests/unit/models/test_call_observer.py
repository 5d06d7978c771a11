"""The call observer: each model or tool call read once, the reading handed to every
subscriber, a failing subscriber logged without breaking the call, the owner able to stop it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from calls.errors import BudgetExhausted
from calls.observers import CallObserver
from calls.readings import CallSubscriber, ModelCall, ModelReading, ToolReading
from testkit.clock import FakeClock
from testkit.fakes import FakeCall, FakeModels, Reply


class Heard(CallSubscriber):
    """Keeps every start and reading it hears."""

    def __init__(self) -> None:
        self.starts: list[ModelCall] = []
        self.readings: list[ModelReading] = []
        self.tools: list[ToolReading] = []

    async def model_started(self, call: ModelCall) -> None:
        self.starts.append(call)

    async def model_ended(self, reading: ModelReading) -> None:
        self.readings.append(reading)

    async def tool_ended(self, reading: ToolReading) -> None:
        self.tools.append(reading)


class Broken(CallSubscriber):
    async def model_started(self, call: ModelCall) -> None:
        raise RuntimeError("a broken subscriber")

    async def model_ended(self, reading: ModelReading) -> None:
        raise RuntimeError("a broken subscriber")


class Refusing(CallSubscriber):
    async def model_started(self, call: ModelCall) -> None:
        raise BudgetExhausted("budget_llm_calls")


def _usage(tokens_in: int, tokens_out: int) -> Any:
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }


def _answer(call: FakeCall) -> Reply:
    return AIMessage(content="an answer", usage_metadata=_usage(30, 7))


def _config(observer: CallObserver) -> RunnableConfig:
    return RunnableConfig(callbacks=[observer])


async def test_every_subscriber_hears_the_same_one_reading_of_a_call() -> None:
    first, second, owner = Heard(), Heard(), Heard()
    observer = CallObserver("r1", "n1", "executor", [first, second], owner=owner)
    model = FakeModels(_answer).for_role("executor")

    await model.ainvoke("question", config=_config(observer))

    assert len(first.readings) == len(second.readings) == len(owner.readings) == 1
    reading = first.readings[0]
    assert second.readings[0] is reading
    assert owner.readings[0] is reading
    assert (reading.call.run_id, reading.call.node_id, reading.call.role) == (
        "r1",
        "n1",
        "executor",
    )
    assert (reading.input_tokens, reading.output_tokens, reading.total_tokens) == (30, 7, 37)
    assert reading.cache_hit is False
    assert reading.error is None
    assert first.starts == [reading.call]


async def test_two_calls_give_two_readings_one_each() -> None:
    heard = Heard()
    observer = CallObserver("r1", None, "planner", [heard])
    model = FakeModels(_answer).for_role("planner")

    await model.ainvoke("one", config=_config(observer))
    await model.ainvoke("two", config=_config(observer))

    assert len(heard.readings) == 2
    assert heard.readings[0].call.key != heard.readings[1].call.key


async def test_a_call_s_latency_is_read_off_the_injected_clock() -> None:
    clock = FakeClock()
    heard = Heard()
    observer = CallObserver("r1", None, "planner", [heard], clock=clock)

    async def slow(call: FakeCall) -> Reply:
        clock.now += 2.5
        return "late"

    await FakeModels(slow).for_role("planner").ainvoke("q", config=_config(observer))

    assert heard.readings[0].seconds == 2.5


async def test_a_failed_call_is_read_with_its_error_and_whether_it_was_a_rate_limit() -> None:
    heard = Heard()
    observer = CallObserver("r1", None, "planner", [heard])

    def refuse(call: FakeCall) -> Reply:
        return RuntimeError("429 RESOURCE_EXHAUSTED: quota")

    with pytest.raises(RuntimeError):
        await FakeModels(refuse).for_role("planner").ainvoke("q", config=_config(observer))

    (reading,) = heard.readings
    assert (reading.error, reading.rate_limited) == ("RuntimeError", True)
    assert reading.input_tokens == 0


async def test_a_failing_subscriber_is_logged_and_neither_the_call_nor_the_others_suffer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard, owner = Heard(), Heard()
    observer = CallObserver("r1", "n1", "executor", [Broken(), heard], owner=owner)

    with caplog.at_level(logging.ERROR, logger="calls.observers"):
        reply = (
            await FakeModels(_answer).for_role("executor").ainvoke("q", config=_config(observer))
        )

    assert reply.text == "an answer"
    assert len(heard.readings) == len(owner.readings) == 1
    assert sum("Broken failed" in r.getMessage() for r in caplog.records) == 2


async def test_the_owner_s_refusal_stops_the_call_before_the_model_is_asked() -> None:
    heard = Heard()
    observer = CallObserver("r1", None, "planner", [heard], owner=Refusing())
    models = FakeModels(_answer)

    with pytest.raises(BudgetExhausted):
        await models.for_role("planner").ainvoke("q", config=_config(observer))

    assert models.recorder.calls == []
    assert len(heard.starts) == 1
    assert heard.readings == []


async def test_a_tool_call_is_read_once_with_its_outcome() -> None:
    @tool(response_format="content_and_artifact")
    def lookup(query: str) -> tuple[str, dict[str, Any]]:
        """Look something up."""
        return "nothing found", {"ok": False, "error_kind": "no_results"}

    heard, owner = Heard(), Heard()
    observer = CallObserver("r1", "n1", "executor", [heard], owner=owner)
    call = {"name": "lookup", "args": {"query": "q"}, "id": "call-7", "type": "tool_call"}

    output = await lookup.ainvoke(call, config=_config(observer))

    assert isinstance(output, ToolMessage)
    (reading,) = heard.tools
    assert owner.tools == [reading]
    assert (reading.call.name, reading.ok, reading.error_kind) == ("lookup", False, "no_results")
    assert reading.output is output
