"""The factory's Gemini models through the real langchain-google-genai client and SDK, against
the simulator: what goes over the wire, and how faults are handled."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from app.settings import Settings
from calls.decoding import DECODING_KEY, Decoding
from calls.errors import ModelError
from calls.models import SettingsModelFactory
from testkit.gemini_script import Call, Delayed, Disconnect, Fault, Json, Malformed, Slow, Text
from testkit.gemini_sim import SimRequest, SimulatorMaker


class Plan(BaseModel):
    steps: list[str] = Field(description="Research steps.")


def _factory(**overrides: Any) -> SettingsModelFactory:
    values: dict[str, Any] = {
        "model": "google_genai:gemini-2.5-flash",
        "model_retry_base_delay_s": 0.0,
        "model_rps": 0,
        **overrides,
    }
    return SettingsModelFactory(Settings(_env_file=None, **values))


def _always(reply: Any) -> Any:
    return lambda _request: reply


async def test_structured_output_sends_the_json_schema_and_parses_the_reply(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(_always(Json({"steps": ["look", "write"]})))
    model = _factory().for_role("planner")

    out = await model.with_structured_output(Plan, method="json_schema").ainvoke(
        [SystemMessage(content="plan it"), HumanMessage(content="Task: x")]
    )

    assert out == Plan(steps=["look", "write"])
    (request,) = sim.requests
    assert request.generation_config["responseMimeType"] == "application/json"
    assert request.response_schema == Plan.model_json_schema()
    assert request.system == "plan it"
    assert request.generation_config["temperature"] == 0.3


async def test_tool_declarations_go_out_and_tool_results_come_back(
    gemini_sim: SimulatorMaker,
) -> None:
    @tool
    def lookup(query: str) -> str:
        """Look a query up in the encyclopedia."""
        return f"facts about {query}"

    def script(request: SimRequest) -> Any:
        if not request.function_responses:
            return Call("lookup", {"query": "otters"})
        return Text("otters hold hands")

    sim = gemini_sim(script)
    model = _factory().for_role("executor").bind_tools([lookup])

    first = await model.ainvoke([HumanMessage(content="research otters")])
    result = lookup.invoke(first.tool_calls[0])
    assert isinstance(result, ToolMessage)
    second = await model.ainvoke([HumanMessage(content="research otters"), first, result])

    assert first.tool_calls[0]["name"] == "lookup"
    assert first.tool_calls[0]["args"] == {"query": "otters"}
    assert second.text == "otters hold hands"
    declaration = sim.requests[0].function_declarations[0]
    assert declaration["name"] == "lookup"
    assert declaration["description"] == "Look a query up in the encyclopedia."
    assert list(declaration["parameters"]["properties"]) == ["query"]
    (response,) = sim.requests[1].function_responses
    assert response["name"] == "lookup"
    assert "facts about otters" in json.dumps(response["response"])


async def test_thinking_tokens_are_counted_in_output_tokens(gemini_sim: SimulatorMaker) -> None:
    gemini_sim(_always(Text("short answer", thoughts_tokens=120)))
    model = _factory().for_role("responder")

    reply = await model.ainvoke("answer")

    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 120 + len("short answer") // 4 + 1
    assert reply.usage_metadata.get("output_token_details", {}).get("reasoning") == 120


async def test_streaming_uses_server_sent_events(gemini_sim: SimulatorMaker) -> None:
    sim = gemini_sim(_always(Slow(Text("one two three four", thoughts_tokens=5), 0.01)))
    model = _factory().for_role("responder")

    chunks = [chunk async for chunk in model.astream("answer")]

    assert len(chunks) >= 2
    assert "".join(c.text for c in chunks) == "one two three four"
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert total.usage_metadata is not None
    assert total.usage_metadata["output_tokens"] >= 5
    assert [r.stream for r in sim.requests] == [True]


@pytest.mark.parametrize(
    ("failure", "status", "retries"),
    [
        # Retried by our layer alone: the client's own retries would send a third request.
        pytest.param(Fault(429), 429, 3, id="rate_limit"),
        pytest.param(Disconnect(), 0, 1, id="dropped_connection"),
    ],
)
async def test_a_transient_failure_is_retried_once(
    gemini_sim: SimulatorMaker, failure: Any, status: int, retries: int
) -> None:
    replies: list[Any] = [failure, Text("after the failure")]
    sim = gemini_sim(lambda _request: replies.pop(0))
    model = _factory(model_max_retries=retries).for_role("responder")

    reply = await model.ainvoke("answer")

    assert reply.text == "after the failure"
    assert [r.status for r in sim.requests] == [status, 200]


async def test_a_400_is_sent_once_and_surfaces_as_a_clear_error(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(_always(Fault(400, "Invalid JSON payload: secret detail")))
    model = _factory(model_max_retries=5).for_role("voter")

    with pytest.raises(ModelError) as info:
        await model.ainvoke("vote")

    assert str(info.value) == (
        "the voter model call was rejected by the provider (HTTP 400; not retried)"
    )
    assert "secret detail" not in str(info.value)
    assert len(sim.requests) == 1


async def test_persistent_server_errors_stop_after_the_bounded_attempts(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(_always(Fault(503)))
    model = _factory(model_max_retries=2).for_role("planner")

    with pytest.raises(ModelError, match=r"server error \(HTTP 503, 3 attempts\)"):
        await model.ainvoke("plan")

    assert [r.status for r in sim.requests] == [503, 503, 503]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_malformed_body_is_retried(gemini_sim: SimulatorMaker, stream: bool) -> None:
    replies: list[Any] = [Malformed(), Text("readable")]
    sim = gemini_sim(lambda _request: replies.pop(0))
    model = _factory(model_max_retries=1).for_role("responder")

    if stream:
        text = "".join([chunk.text async for chunk in model.astream("answer")])
    else:
        text = (await model.ainvoke("answer")).text

    assert text == "readable"
    assert len(sim.requests) == 2


async def test_malformed_bodies_end_in_a_clear_error(gemini_sim: SimulatorMaker) -> None:
    sim = gemini_sim(_always(Malformed()))
    model = _factory(model_max_retries=1).for_role("planner")

    with pytest.raises(ModelError) as info:
        await model.ainvoke("plan")

    assert str(info.value) == (
        "the planner model call got an unreadable response from the provider (2 attempts)"
    )
    assert [r.status for r in sim.requests] == [200, 200]


async def test_a_reply_slower_than_the_timeout_is_cut_and_retried(
    gemini_sim: SimulatorMaker,
) -> None:
    replies: list[Any] = [Delayed(Text("too late"), 5.0), Text("in time")]
    sim = gemini_sim(lambda _request: replies.pop(0))
    model = _factory(model_timeout_s=0.3, model_max_retries=1).for_role("responder")

    started = time.monotonic()
    reply = await model.ainvoke("answer")

    assert reply.text == "in time"
    assert len(sim.requests) == 2
    assert time.monotonic() - started < 3.0


async def test_requests_carry_the_key_header_and_the_model_path(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(_always(Text("ok")))

    await _factory(model_voter="google_genai:gemini-2.5-pro").for_role("voter").ainvoke("hi")

    (request,) = sim.requests
    assert request.api_key == "simulated-key"
    assert request.model == "gemini-2.5-pro"


async def test_the_process_rate_limit_spaces_requests(gemini_sim: SimulatorMaker) -> None:
    sim = gemini_sim(_always(Text("ok")))
    # Two factories (two "runs") with the same setting share one limiter.
    first = _factory(model_rps=20.0, model_burst=1).for_role("responder")
    second = _factory(model_rps=20.0, model_burst=1).for_role("responder")

    started = time.monotonic()
    for model in (first, second, first, second, first):
        await model.ainvoke("hi")
    elapsed = time.monotonic() - started

    assert len(sim.requests) == 5
    assert elapsed >= 4 / 20.0 * 0.9


async def test_a_call_s_decoding_reaches_gemini_as_its_temperature_and_seed(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(_always(Json({"steps": ["look"]})))
    model = _factory().for_role("replanner").with_structured_output(Plan, method="json_schema")
    messages = [HumanMessage(content="Task: x")]

    def config(decoding: Decoding) -> RunnableConfig:
        return RunnableConfig(metadata={DECODING_KEY: decoding.as_metadata()})

    await model.ainvoke(messages, config=config(Decoding(greedy=True, seed=41)))
    await model.ainvoke(messages, config=config(Decoding(greedy=False, seed=42)))
    await model.ainvoke(messages)

    greedy, sampled, plain = (r.generation_config for r in sim.requests)
    assert (greedy["temperature"], greedy["seed"]) == (0.0, 41)
    # Sampled at the role's own temperature, with its seed.
    assert (sampled["temperature"], sampled["seed"]) == (0.8, 42)
    assert plain["temperature"] == 0.8
    assert "seed" not in plain
