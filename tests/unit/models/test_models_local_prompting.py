"""How the local model's pure helpers shape llama.cpp requests: grammar schemas, bounded
numbers, and tool traffic shown as text."""

from __future__ import annotations

from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from calls.local_model import (
    _bounded,
    _chat,
)


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
