"""Grammar bounding and prompt rendering for the local model: the JSON schemas llama.cpp's
grammar is built from (bounded so a reply fits the token limit and a small model cannot loop),
the tool-choice schema (`{"action", "action_input"}`), and LangChain messages as llama.cpp chat
messages with tool traffic as text. Pure functions, tested without the model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolCall, ToolMessage

FINAL_ANSWER = "final_answer"
_UNQUOTABLE = re.compile(r'["\\]')
PARTIAL_ANSWER = re.compile(r'"action_input"\s*:\s*"(.*)', re.DOTALL)

# Grammar bounds keep a constrained reply inside `max_tokens`: a JSON object cut short by the
# token limit would be unparseable, and a small model happily repeats list items forever.
_MAX_ITEMS = 4
MAX_ITEM_CHARS = 160
# Conservative: SmolLM2 writes some degenerate text (identifiers, repeats) at ~2 chars a token.
CHARS_PER_TOKEN = 2


def bounded(schema: Any, string_chars: int) -> Any:
    """The schema the grammar is built from: `schema` with 1 to _MAX_ITEMS items in every list,
    a size limit on every free string, and in every object all properties written, yes/no flags
    last.

    Property order matters to a small model: asked for `complete` first, SmolLM2 answers
    `true` almost always; asked for its next steps first, it commits to the flag after writing
    them. The caller's own validation still applies to the result.
    """
    if isinstance(schema, list):
        return [bounded(s, string_chars) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: bounded(v, MAX_ITEM_CHARS if k == "items" else string_chars) for k, v in schema.items()
    }
    kind = out.get("type")
    if isinstance(out.get("enum"), list):
        # llama.cpp's schema converter escapes a double quote or a backslash in a literal
        # twice, and the grammar then fails to parse (the process aborts): such values go.
        out["enum"] = [v for v in out["enum"] if not (isinstance(v, str) and _UNQUOTABLE.search(v))]
        if not out["enum"]:
            out = {"type": "string", "maxLength": string_chars}
            kind = "string"
    if isinstance(out.get("const"), str) and _UNQUOTABLE.search(out["const"]):
        raise ValueError(f"a grammar cannot hold the constant {out['const']!r}")
    if kind == "array" and "maxItems" not in out:
        out["maxItems"] = _MAX_ITEMS
    if kind == "array" and "minItems" not in out:
        # An empty list is SmolLM2's way to skip thinking: "[ ]" then "complete": true every
        # time. Engine lists (plan steps, next steps) are ignored when a flag says "done".
        out["minItems"] = 1
    if kind == "string" and "enum" not in out and "const" not in out and "maxLength" not in out:
        out["maxLength"] = string_chars
    low, high = out.get("minimum"), out.get("maximum")
    if kind == "number" and isinstance(low, int | float) and isinstance(high, int | float):
        # llama.cpp's grammar cannot bound a float: a score in [0, 1] came back as 2. Eleven
        # evenly spaced values keep it in range.
        out = {k: v for k, v in out.items() if k not in ("type", "minimum", "maximum")}
        out["enum"] = [round(low + (high - low) * i / 10, 6) for i in range(11)]
    elif kind == "integer" and isinstance(low, int) and isinstance(high, int) and high - low <= 20:
        out = {k: v for k, v in out.items() if k not in ("type", "minimum", "maximum")}
        out["enum"] = list(range(low, high + 1))
    properties = out.get("properties")
    if kind == "object" and isinstance(properties, dict) and properties:
        flags_last = sorted(properties, key=lambda name: properties[name].get("type") == "boolean")
        out["properties"] = {name: properties[name] for name in flags_last}
        out["required"] = flags_last
    return out


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


SHARED_SYSTEM = "You are a careful research assistant."
"""Plain on purpose: a 0.5B planner given a system message with instructions in it ("read
the material first") took them for the plan's steps."""


def chat_messages(
    messages: Sequence[BaseMessage],
    note: str = "",
    *,
    system_note: str = "",
    instructions_last: bool = False,
) -> list[dict[str, str]]:
    """LangChain messages as llama.cpp chat messages. Tool traffic becomes text in the user's
    turn ("Result of lookup(query: x): ..."): with its own tool calls in the history, in JSON or
    in words, SmolLM2 keeps writing tool calls when it is asked for its findings. `note` ends
    the user's turn; `system_note` ends the system message.

    With `instructions_last`, the system message is `SHARED_SYSTEM` for every call, and the
    callers' system text and `system_note` end the user's turn, before `note`. Every role's
    prompt then starts with the same text — the task, then the path's steps and results — so
    a call reuses the KV state of any earlier call on the path, whatever its role."""
    system = [_text(m) for m in messages if isinstance(m, SystemMessage)]
    if system_note:
        system.append(system_note)
    out: list[dict[str, str]] = []
    if instructions_last:
        out.append({"role": "system", "content": SHARED_SYSTEM})
        note = "\n\n".join([*system, note] if note else system)
    elif system:
        out.append({"role": "system", "content": "\n\n".join(system)})
    calls: dict[str, ToolCall] = {}
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, AIMessage) and message.tool_calls:
            calls.update({str(c["id"]): c for c in message.tool_calls})
        elif isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id)
            name = message.name or (call["name"] if call else "the tool")
            args = ", ".join(f"{k}: {v}" for k, v in call["args"].items()) if call else ""
            text = f"Result of {name}({args}):\n{_text(message)}"
            if out and out[-1]["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + text}
            else:
                out.append({"role": "user", "content": text})
        elif isinstance(message, AIMessage):
            out.append({"role": "assistant", "content": _text(message)})
        else:
            out.append({"role": "user", "content": _text(message)})
    if note:
        # A small model follows the last thing it read best: the note ends the user's turn.
        if out and out[-1]["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + note}
        else:
            out.append({"role": "user", "content": note})
    return out
