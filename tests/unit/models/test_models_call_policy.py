"""The call policy every factory model has: retries only for retryable errors, bounded; a
timeout per attempt; the rate limiter per attempt; one clear `ModelError` at the end; and the
provider's own `bind_tools` / `with_structured_output` still going through the policy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from langchain_core.exceptions import ModelInvalidRequestError, ModelRateLimitError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict, Field

from calls.errors import ConfigError, ModelError
from calls.policy import ResilientChatModel
from calls.ratelimit import LimiterStats, Outcome, Permit
from calls.retarget import retarget
from calls.retry import is_retryable


class HttpError(Exception):
    """A provider error that only carries a status code (like google-genai's APIError)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}")
        self.code = code


class Flaky(BaseChatModel):
    """Answers from `outcomes` in order (an exception is raised, "hang" never returns);
    records the kwargs of every attempt. Binds the way provider models do (`self.bind`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    outcomes: list[Any] = Field(default_factory=list)
    seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "flaky"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[getattr(t, "name", str(t)) for t in tools], **kwargs)

    def _next(self, kwargs: dict[str, Any]) -> Any:
        self.seen.append(kwargs)
        return self.outcomes.pop(0) if self.outcomes else "ok"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("async only")

    # `stop` and the run manager are named so that `seen` records only the call's own kwargs.
    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        outcome = self._next(kwargs)
        if outcome == "hang":
            await asyncio.Event().wait()
        if isinstance(outcome, BaseException):
            raise outcome
        message = outcome if isinstance(outcome, AIMessage) else AIMessage(content=str(outcome))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        outcome = self._next(kwargs)
        if isinstance(outcome, BaseException):
            raise outcome
        for piece in str(outcome).split():
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece + " "))


class CountingLimiter:
    """A limiter that admits everything and records what it was told."""

    def __init__(self) -> None:
        self.taken = 0
        self.outcomes: list[tuple[Outcome, float | None]] = []

    async def acquire(self) -> Permit:
        self.taken += 1
        return Permit(granted_at=float(self.taken))

    async def release(
        self, permit: Permit, outcome: Outcome, retry_after_s: float | None = None
    ) -> None:
        self.outcomes.append((outcome, retry_after_s))

    def stats(self) -> LimiterStats:
        return LimiterStats(None, 0, 1, self.taken, 0, 0)


def _wrap(
    *outcomes: Any, retries: int = 2, timeout_s: float = 5.0
) -> tuple[ResilientChatModel, Flaky]:
    inner = Flaky(outcomes=list(outcomes))
    model = ResilientChatModel(
        inner=inner,
        role="planner",
        timeout_s=timeout_s,
        max_retries=retries,
        retry_base_delay_s=0.0,
        limiter=CountingLimiter(),
    )
    return model, inner


async def test_a_rate_limit_is_retried_and_the_call_succeeds() -> None:
    model, inner = _wrap(ModelRateLimitError("429"), HttpError(503), "fine")

    reply = await model.ainvoke("hi")

    assert reply.text == "fine"
    assert len(inner.seen) == 3


async def test_retries_are_bounded_and_end_in_one_clear_model_error() -> None:
    model, inner = _wrap(*[HttpError(503)] * 5, retries=2)

    with pytest.raises(ModelError) as info:
        await model.ainvoke("hi")

    assert len(inner.seen) == 3
    assert str(info.value) == (
        "the planner model call hit a provider server error (HTTP 503, 3 attempts)"
    )
    assert not is_retryable(info.value)  # an outer retry loop will not multiply the attempts


@pytest.mark.parametrize(
    "error", [ModelInvalidRequestError("bad schema"), HttpError(400), HttpError(404)]
)
async def test_a_rejected_request_is_not_retried(error: Exception) -> None:
    model, inner = _wrap(error, "never reached")

    with pytest.raises(ModelError, match="not retried"):
        await model.ainvoke("hi")

    assert len(inner.seen) == 1


async def test_the_status_is_found_through_a_wrapping_error() -> None:
    try:
        raise HttpError(400)
    except HttpError as cause:
        wrapped = ModelInvalidRequestError("Error calling model")
        wrapped.__cause__ = cause
    model, _ = _wrap(wrapped)

    with pytest.raises(ModelError, match=r"rejected by the provider \(HTTP 400; not retried\)"):
        await model.ainvoke("hi")


async def test_an_attempt_that_hangs_times_out_and_is_retried() -> None:
    model, inner = _wrap("hang", "after the timeout", timeout_s=0.05)

    reply = await model.ainvoke("hi")

    assert reply.text == "after the timeout"
    assert len(inner.seen) == 2


async def test_timeouts_on_every_attempt_say_so() -> None:
    model, _ = _wrap("hang", "hang", retries=1, timeout_s=0.05)

    with pytest.raises(ModelError, match=r"timed out after 0.05s \(2 attempts\)"):
        await model.ainvoke("hi")


async def test_every_attempt_waits_for_the_rate_limiter() -> None:
    model, _ = _wrap(HttpError(429), "ok")

    await model.ainvoke("hi")

    assert isinstance(model.limiter, CountingLimiter)
    assert model.limiter.taken == 2


async def test_bound_tools_reach_the_provider_through_the_policy() -> None:
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return query

    model, inner = _wrap(HttpError(503), "with tools")

    reply = await model.bind_tools([lookup]).ainvoke("hi")

    assert reply.text == "with tools"
    assert [kw["tools"] for kw in inner.seen] == [["lookup"], ["lookup"]]


async def test_structured_output_goes_through_the_policy() -> None:
    class Pick(BaseModel):
        choice: str

    answer = AIMessage(
        content="", tool_calls=[{"name": "Pick", "args": {"choice": "n2"}, "id": "1"}]
    )
    model, inner = _wrap(HttpError(429), answer)

    out = await model.with_structured_output(Pick, include_raw=True).ainvoke("pick")

    assert isinstance(out, dict)
    assert out["parsed"] == Pick(choice="n2")
    assert len(inner.seen) == 2


async def test_streaming_retries_before_the_first_chunk() -> None:
    model, inner = _wrap(HttpError(503), "streamed reply")

    chunks = [chunk.text async for chunk in model.astream("hi")]

    assert "".join(chunks).split() == ["streamed", "reply"]
    assert len(inner.seen) == 2


def test_a_runnable_that_bypasses_the_model_is_refused() -> None:
    model, _ = _wrap()

    with pytest.raises(ConfigError, match="cannot apply the call policy"):
        retarget(RunnableLambda(lambda x: x), model)
