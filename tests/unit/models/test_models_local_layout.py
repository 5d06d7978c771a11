"""How the local model lays out a prompt. By default (SmolLM2) the role's system text opens it
and the tool list ends the user's turn, where a 135M model follows it best. With
`instructions_last` (Qwen) one fixed system message opens every prompt and each call's own
instructions end the user's turn, so that calls of different roles on one path begin with the
same text — the task and the path so far — and one call's KV state serves the next."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage

from agents.prompts import (
    EXECUTOR_SYSTEM,
    executor_messages,
    replanner_messages,
    responder_messages,
)
from agents.state import NodeRecord, new_node
from calls.local_grammar import SHARED_SYSTEM, chat_messages
from calls.local_kv import common_prefix
from calls.local_model import LocalChatModel, default_model_path
from tests.support.lookup_tool import TOOLS

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


def test_with_instructions_last_the_system_message_is_fixed_and_instructions_end_the_turn() -> None:
    model = LocalChatModel(model_path=default_model_path(), instructions_last=True)

    first, second = _messages(model, FIRST), _messages(model, SECOND)
    plain, _ = model._request(FIRST, None)

    assert (
        first[0]
        == second[0]
        == plain["messages"][0]
        == {
            "role": "system",
            "content": SHARED_SYSTEM,
        }
    )
    assert first[1]["content"].startswith("Step: bees.\n\nYou research.\n\nYou can call one")
    assert "- Lookup: Look a query up." in first[1]["content"]
    assert first[1]["content"].endswith('"action_input" to its arguments.')
    # The second round: the tool's result comes before the instructions, and the tool list
    # is gone once only an answer is allowed.
    assert second[1]["content"].startswith("Step: bees.\n\nResult of Lookup(query: bees):")
    assert second[1]["content"].endswith("in two or three plain sentences.")
    assert "You can call" not in second[1]["content"]
    assert plain["messages"][1]["content"] == "Step: bees.\n\nYou research."


def test_by_default_the_listing_ends_the_users_turn_of_a_tool_round() -> None:
    model = LocalChatModel(model_path=default_model_path())

    first, second = _messages(model, FIRST), _messages(model, SECOND)

    assert first[0]["content"] == "You research."
    assert "You can call one tool at a time:\n- Lookup" in first[-1]["content"]
    assert "You can call" not in second[-1]["content"]


def _done(parent: NodeRecord | None, index: int, step: str, result: str) -> NodeRecord:
    node = new_node(parent=parent, index=index, step=step, planned=["compare them"])
    node["status"] = "done"
    node["result"] = result
    return node


def _text(messages: list[dict[str, str]]) -> str:
    return "".join(f"<{m['role']}>{m['content']}" for m in messages)


def test_calls_of_different_roles_on_one_path_share_the_whole_path_as_their_prefix() -> None:
    task = "Which writer was from England, Henry Roth or Robert Erskine Childers?"
    root = _done(None, 1, "Look up Henry Roth.", "Henry Roth was an American novelist. " * 20)
    child = _done(root, 1, "Look up Childers.", "Robert Erskine Childers was English. " * 20)
    path_text = _text(
        chat_messages(executor_messages(task, [root, child], "x", [], 3000), instructions_last=True)
    )
    # The text every call on this path can share: up to the end of the child's result.
    shared = path_text[: path_text.index("English. \n") + len("English. ")]

    prompts = {
        "replanner": replanner_messages(task, [root, child], 3, 3000),
        # The executor's agent puts its system prompt first, as this does.
        "executor of a grandchild": [
            SystemMessage(content=EXECUTOR_SYSTEM),
            *executor_messages(task, [root, child], "Compare the two.", [], 3000),
        ],
        "responder": responder_messages(task, [root, child], {}, 3000, partial=False),
    }
    for laid_out in (True, False):
        texts = {
            role: _text(chat_messages(messages, instructions_last=laid_out))
            for role, messages in prompts.items()
        }
        for role, text in texts.items():
            assert text.startswith(shared) is laid_out, role
    # Laid out the other way, two roles share only the chat template's first token or so.
    replanner = _text(chat_messages(prompts["replanner"]))
    responder = _text(chat_messages(prompts["responder"]))
    assert common_prefix(tuple(replanner), tuple(responder)) < 20
