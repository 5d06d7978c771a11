"""Where the local model reads its tools: at the end of the user's turn (SmolLM2), or in the
system message (Qwen), where it is the same text in every round and every call with those
tools, so the prompt prefix — and its KV state — is shared."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from calls.local_model import LocalChatModel, default_model_path


class Lookup(BaseModel):
    """Look a query up."""

    query: str = Field(description="What to look up.")


TOOLS = [convert_to_openai_tool(Lookup)]
CALL = ToolCall(name="Lookup", args={"query": "bees"}, id="c1")
FIRST = [SystemMessage(content="You research."), HumanMessage(content="Step: bees.")]
SECOND = [
    *FIRST,
    AIMessage(content="", tool_calls=[CALL]),
    ToolMessage("Bees fly.", tool_call_id="c1"),
]


def _messages(model: LocalChatModel, history: list[Any]) -> list[dict[str, str]]:
    request, _ = model._request(history, None, tools=TOOLS)
    messages: list[dict[str, str]] = request["messages"]
    return messages


def test_in_the_system_message_the_listing_is_the_same_in_both_rounds() -> None:
    model = LocalChatModel(model_path=default_model_path(), tools_in_system=True)

    first, second = _messages(model, FIRST), _messages(model, SECOND)

    assert first[0]["role"] == second[0]["role"] == "system"
    assert first[0]["content"] == second[0]["content"]
    assert first[0]["content"].startswith("You research.\n\nYou can call one tool at a time:\n")
    assert "- Lookup: Look a query up." in first[0]["content"]
    assert first[-1]["content"].endswith('"action_input" to its arguments.')
    assert "You can call" not in first[-1]["content"]
    assert second[-1]["content"].endswith("in two or three plain sentences.")


def test_by_default_the_listing_ends_the_users_turn_of_a_tool_round() -> None:
    model = LocalChatModel(model_path=default_model_path())

    first, second = _messages(model, FIRST), _messages(model, SECOND)

    assert first[0]["content"] == "You research."
    assert "You can call one tool at a time:\n- Lookup" in first[-1]["content"]
    assert "You can call" not in second[-1]["content"]
