"""Scripted chat models: a test says what each call returns; every call is recorded.

`bind_tools` and `with_structured_output` work (the structured path parses the reply's JSON
text, as a provider's `json_schema` mode does), so the real LangChain/LangGraph machinery runs.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

from calls.decoding import Decoding, decoding_of
from calls.settings import Role


@dataclass
class FakeCall:
    """One recorded model call."""

    role: str
    messages: list[BaseMessage]
    tools: list[str]
    schema: dict[str, Any] | None
    spec: str = "scripted"
    """The model string of the model that was called (`FakeModels.for_model`)."""
    decoding: Decoding | None = None
    """The decoding the engine asked of the call (calls.decoding), from its metadata."""
    options: dict[str, Any] = field(default_factory=dict)
    """The per-call options the model received (`temperature`, `seed`, …)."""

    @property
    def prompt(self) -> str:
        return "\n".join(m.text for m in self.messages)

    @property
    def enum(self) -> list[str]:
        """The vote schema's allowed choices."""
        assert self.schema is not None
        return list(self.schema["properties"]["choice"]["enum"])


Reply = AIMessage | str | dict[str, Any] | BaseException
Script = Callable[[FakeCall], Reply | Awaitable[Reply]]


@dataclass
class Recorder:
    """Shared by every role's fake: all calls, and how many were in flight at most."""

    calls: list[FakeCall] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def by_role(self, role: str) -> list[FakeCall]:
        return [c for c in self.calls if c.role == role]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies come from `script`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    role: str
    # Out of the repr: LangChain's cache key and tracing serialise the model, and a recorder
    # that grows with every call would make each call slower than the last.
    script: Any = Field(repr=False)
    recorder: Any = Field(repr=False)
    tool_names: list[str] = Field(default_factory=list)
    json_schema_sent: dict[str, Any] | None = None
    spec: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.model_copy(update={"tool_names": names})

    def with_structured_output(
        self,
        schema: dict[str, Any] | type[BaseModel],
        *,
        include_raw: bool = False,
        method: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, Any]:
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        json_schema = schema.model_json_schema() if is_model else schema  # type: ignore[union-attr]
        bound = self.model_copy(update={"json_schema_sent": json_schema})

        def parse(message: AIMessage) -> Any:
            parsed: Any = None
            error: Exception | None = None
            try:
                data = json.loads(message.text)
                parsed = schema.model_validate(data) if is_model else data  # type: ignore[union-attr]
            except Exception as e:
                error = e
            if include_raw:
                return {"raw": message, "parsed": parsed, "parsing_error": error}
            if error is not None:
                raise error
            return parsed

        async def aparse(message: AIMessage) -> Any:
            return parse(message)

        # With an async twin, LangChain parses inline (a plain function goes to a thread),
        # as a provider's output parser does.
        return bound | RunnableLambda(parse, afunc=aparse)

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the engine is async; use ainvoke")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = FakeCall(
            self.role,
            list(messages),
            list(self.tool_names),
            self.json_schema_sent,
            self.spec,
            decoding=decoding_of(run_manager.metadata if run_manager is not None else None),
            options=dict(kwargs),
        )
        rec: Recorder = self.recorder
        rec.calls.append(call)
        rec.in_flight += 1
        rec.max_in_flight = max(rec.max_in_flight, rec.in_flight)
        try:
            reply = self.script(call)
            if inspect.isawaitable(reply):
                reply = await reply
        finally:
            rec.in_flight -= 1
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, dict):
            reply = json.dumps(reply)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        if message.usage_metadata is None:
            tokens_in = sum(len(m.text) for m in messages) // 4 + 1
            tokens_out = len(message.text) // 4 + 1
            message.usage_metadata = {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            }
        return ChatResult(generations=[ChatGeneration(message=message)])


class FakeModels:
    """A model factory whose every role answers from one script."""

    def __init__(self, script: Script) -> None:
        self.recorder = Recorder()
        self.script = script

    def for_role(self, role: Role) -> BaseChatModel:
        return ScriptedChatModel(role=role, script=self.script, recorder=self.recorder)

    def model_string(self, role: Role) -> str:
        """The model string every role of this factory reports (`/readyz`)."""
        return "scripted"

    def for_model(self, role: Role, spec: str) -> BaseChatModel:
        """`role`'s model as a run chose it: the same script, its calls recorded with `spec`."""
        return ScriptedChatModel(role=role, script=self.script, recorder=self.recorder, spec=spec)


def tool_call(name: str, args: dict[str, Any], call_id: str = "call-1") -> AIMessage:
    """An executor reply that calls a tool."""
    return AIMessage(content="", tool_calls=[ToolCall(name=name, args=args, id=call_id)])


_STEP_TO_EXECUTE = re.compile(r"^Step to execute: (.*)$", re.MULTILINE)
_STEP_TO_REPLACE = re.compile(r"^Step to replace: (.*)$", re.MULTILINE)
_DONE_STEP = re.compile(r"^Step \d+: (.*)$", re.MULTILINE)


def step_to_execute(call: FakeCall) -> str:
    """The step an executor call is asked to run."""
    match = _STEP_TO_EXECUTE.search(call.prompt)
    assert match, "not an executor prompt"
    return match.group(1).strip()


def step_to_replace(call: FakeCall) -> str | None:
    """The step a proposal of alternatives (anytime search) asks to replace; None for any
    other call."""
    match = _STEP_TO_REPLACE.search(call.prompt)
    return match.group(1).strip() if match else None


def executed_steps(models: FakeModels) -> list[str]:
    """The steps `models`' executor was asked to run, in the order of the calls."""
    return [step_to_execute(c) for c in models.recorder.by_role("executor")]


def last_done_step(call: FakeCall) -> str:
    """The last step shown as done in a replanner/responder prompt (the path's leaf)."""
    steps = _DONE_STEP.findall(call.prompt)
    assert steps, "no done steps in the prompt"
    return str(steps[-1]).strip()


def done_steps(call: FakeCall) -> list[str]:
    return [s.strip() for s in _DONE_STEP.findall(call.prompt)]
