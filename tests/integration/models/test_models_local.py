"""The bundled local model (SmolLM2 via llama.cpp) as the factory gives it: structured output
that validates, a tool-call round trip, usage metadata, and a timeout that frees the model."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from app.settings import Settings
from calls.errors import ModelError
from calls.models import ResilientChatModel, SettingsModelFactory


class Plan(BaseModel):
    steps: list[str] = Field(description="Research steps, in order.")


VOTE = {
    "title": "Vote",
    "type": "object",
    "properties": {
        "choice": {"type": "string", "enum": ["n2", "n5"]},
        "reason": {"type": "string"},
    },
    "required": ["choice"],
}


def _factory(**overrides: Any) -> SettingsModelFactory:
    values: dict[str, Any] = {"model": "local", "local_max_tokens": 160, **overrides}
    return SettingsModelFactory(Settings(_env_file=None, **values))


async def test_structured_output_validates_against_a_pydantic_schema() -> None:
    model = _factory().for_role("planner")

    out = await model.with_structured_output(Plan, method="json_schema", include_raw=True).ainvoke(
        [
            SystemMessage(content="You plan research. Break the task into short steps."),
            HumanMessage(content="Task: Why is the sky blue?"),
        ]
    )

    assert isinstance(out, dict)
    assert out["parsing_error"] is None
    assert isinstance(out["parsed"], Plan)
    assert 1 <= len(out["parsed"].steps) <= 4
    usage = out["raw"].usage_metadata
    assert usage["input_tokens"] > 10
    assert usage["output_tokens"] > 0


async def test_structured_output_keeps_to_a_string_enum() -> None:
    model = _factory().for_role("voter")

    out = await model.with_structured_output(VOTE, method="json_schema").ainvoke(
        "Candidate n2 says the sky is blue from Rayleigh scattering; candidate n5 says it "
        "reflects the sea. Which candidate is right? Reply with its id."
    )

    assert isinstance(out, dict)
    assert out["choice"] in {"n2", "n5"}


async def test_a_tool_call_round_trip() -> None:
    @tool
    def encyclopedia(query: str) -> str:
        """Look a topic up in the encyclopedia."""
        return "Rayleigh scattering makes short (blue) wavelengths scatter most in air."

    model = _factory().for_role("executor").bind_tools([encyclopedia])
    messages: list[Any] = [
        SystemMessage(content="You research one step. Use the tools for facts."),
        HumanMessage(content="Step to execute: find out why the sky is blue."),
    ]

    first = await model.ainvoke(messages)
    assert [c["name"] for c in first.tool_calls] == ["encyclopedia"]
    assert isinstance(first.tool_calls[0]["args"]["query"], str)
    result = encyclopedia.invoke(first.tool_calls[0])
    assert isinstance(result, ToolMessage)
    second = await model.ainvoke([*messages, first, result])

    assert not second.tool_calls
    assert second.text.strip()
    assert second.usage_metadata is not None
    assert second.usage_metadata["output_tokens"] > 0


async def test_a_timed_out_generation_is_stopped_and_the_model_is_free_again() -> None:
    factory = _factory(model_timeout_s=0.05, model_max_retries=0, local_max_tokens=1024)
    slow = factory.for_role("responder")
    assert isinstance(slow, ResilientChatModel)

    with pytest.raises(ModelError, match=r"timed out after 0\.05s"):
        await slow.ainvoke("Write a long essay about the history of the sky.")

    # Had the 1024-token essay gone on in its thread, this call would wait for it (~10 s).
    quick = _factory(local_max_tokens=16).for_role("responder")
    started = time.monotonic()
    reply = await quick.ainvoke("Say hello.")
    assert reply.text.strip()
    assert time.monotonic() - started < 4.0
