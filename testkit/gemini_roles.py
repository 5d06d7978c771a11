"""Engine-aware helpers for the Gemini simulator: which role sent a request (from its system
instruction), and the declarative `Scenario` of the scripted-model tests turned into a
simulator script, so one tree scenario drives both the fakes and the real Gemini client."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agents import prompts
from calls.settings import ROLES, Role
from testkit.fakes import FakeCall, Reply
from testkit.gemini_script import Call, Fault, Json, Script, SimRequest, Text
from testkit.gemini_script import Reply as SimReply
from testkit.scenario import Scenario


def _pattern(template: str) -> re.Pattern[str]:
    # Format fields ({max_steps}, {k}) match anything; the literal text must match exactly.
    literals = [literal for literal, *_ in string.Formatter().parse(template)]
    return re.compile(".*?".join(re.escape(lit) for lit in literals), re.DOTALL)


# Every role's system prompt(s): any module-level *_SYSTEM constant of agents.prompts whose
# name starts with the role's name in capitals (EVALUATOR_PROGRESS_SYSTEM is the evaluator's).
_SYSTEM_PROMPTS: list[tuple[Role, re.Pattern[str]]] = [
    (role, _pattern(value))
    for name, value in vars(prompts).items()
    if name.endswith("_SYSTEM") and isinstance(value, str)
    for role in ROLES
    if name.startswith(role.upper())
]


def role_of(request: SimRequest) -> Role | None:
    """The engine role whose system prompt the request carries (None if none matches)."""
    system = request.system.strip()
    for role, pattern in _SYSTEM_PROMPTS:
        if pattern.fullmatch(system):
            return role
    return None


def messages_of(request: SimRequest) -> list[BaseMessage]:
    """The request's conversation as LangChain messages (tool results as `ToolMessage`s)."""
    out: list[BaseMessage] = []
    for content in request.contents:
        parts = content.get("parts", [])
        text = "\n".join(p["text"] for p in parts if "text" in p)
        if content.get("role") == "model":
            out.append(AIMessage(content=text))
            continue
        for part in parts:
            if "functionResponse" in part:
                response = part["functionResponse"]
                out.append(
                    ToolMessage(
                        content=_tool_text(response.get("response")),
                        tool_call_id=str(response.get("id") or response.get("name")),
                        name=str(response.get("name")),
                    )
                )
        if text:
            out.append(HumanMessage(content=text))
    return out


def _tool_text(response: object) -> str:
    """A function response as the engine's tool message held it: the client sends a text result
    as `{"output": text}` and any other as it is."""
    text = response.get("output") if isinstance(response, dict) and len(response) == 1 else None
    return text if isinstance(text, str) else json.dumps(response)


def fake_call(request: SimRequest) -> FakeCall:
    """The request seen as the scripted-model tests see a call (role, messages, tools, schema)."""
    role = role_of(request)
    if role is None:
        raise AssertionError(f"no engine role matches system instruction {request.system[:80]!r}")
    return FakeCall(role, messages_of(request), request.tool_names, request.response_schema)


def to_sim_reply(reply: Reply) -> SimReply:
    """A scripted-model reply as the simulator sends it."""
    if isinstance(reply, BaseException):
        return Fault(500, f"scripted failure: {reply}")
    if isinstance(reply, dict):
        return Json(reply)
    if isinstance(reply, str):
        return Text(reply)
    if reply.tool_calls:
        return [Call(c["name"], dict(c["args"])) for c in reply.tool_calls]
    return Text(reply.text)


def from_scenario(
    scenario: Scenario,
    *,
    override: Callable[[SimRequest, FakeCall], SimReply | None] = lambda *_: None,
) -> Script:
    """A simulator script answering as `scenario` does; `override` may answer first."""

    def script(request: SimRequest) -> SimReply:
        call = fake_call(request)
        special = override(request, call)
        if special is not None:
            return special
        return to_sim_reply(scenario.reply(call))

    return script


def research_scenario() -> Script:
    """A generic research run for server-level tests: a two-step plan, a branch after the
    first step, each step's executor calling the first declared tool once before it answers,
    answers naming their path, the vote for the first candidate shown."""

    def script(request: SimRequest) -> SimReply:
        call = fake_call(request)
        if call.role == "executor" and request.tool_names and not request.function_responses:
            return Call(request.tool_names[0], {"query": "simulated query"})
        return to_sim_reply(_RESEARCH.reply(call))

    return script


_RESEARCH = Scenario(
    plan=["Find sources", "Summarise them"],
    replans={"Find sources": ["Summarise them", "Compare them"]},
)

SCENARIOS: dict[str, Callable[[], Script]] = {"research": research_scenario}
