"""The call policy every model call goes through (`ResilientChatModel`): per attempt, the run's
budget is asked first (`AttemptHook`), then the model's adaptive rate limiter, then the attempt
runs under a timeout; failures are retried by `calls.retry` and the last one surfaces as
`ModelError`, which nothing retries again.

Retry rule: a 429 (rate limited) is not the call's failure. The limiter cuts the shared rate and
holds every caller until the provider's `retryDelay` / `Retry-After`, then the attempt is made
again; such attempts do not use up `max_retries` and go on for at most `rate_limit_patience_s`.
Other retryable failures (5xx, timeouts, connection, unreadable replies) use up `max_retries`.

Accounting rule: every attempt that reaches the provider counts as a model call and its tokens
count against the run's budgets (a retry is billed like a first try); an attempt answered 429
costs nothing at the provider and is counted as `rate_limited` instead. Cache hits never get
here, so they are free.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar, cast
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field

from calls import observers
from calls.errors import LatsError, ModelError
from calls.ratelimit import LimiterStats, ModelLimiter, Outcome
from calls.retarget import retarget
from calls.retry import (
    Backoff,
    Verdict,
    describe_failure,
    is_rate_limit,
    is_retryable,
    retry_after_s,
    retrying,
)
from calls.settings import Role

logger = logging.getLogger(__name__)

T = TypeVar("T")

# What a reply is assumed to cost before it is known: the token budget reserves the prompt's
# estimate plus this, and settles with the real usage after.
OUTPUT_TOKENS_ESTIMATE = 512


class AttemptHook:
    """Receives every attempt the policy makes; a run's `CallTracker` is one. The policy finds
    it among the call's callback handlers (the run's config), so it needs no global state."""

    def begin_attempt(self, call_id: UUID | None, estimate_tokens: int) -> None:
        """An attempt is about to go out: count it, or raise `BudgetExhausted`."""

    def end_attempt(
        self,
        call_id: UUID | None,
        estimate_tokens: int,
        usage: UsageMetadata | None,
        *,
        rate_limited: bool,
        limiter: LimiterStats | None,
    ) -> None:
        """The attempt is over: settle its reservation with the real usage."""

    def add_usage(self, usage: UsageMetadata) -> None:
        """Usage that arrived later (the rest of a stream)."""


def estimate_tokens(messages: Sequence[BaseMessage]) -> int:
    """A cheap upper-ish estimate of one call's tokens: prompt characters / 4 plus a reply."""
    return sum(len(m.text) for m in messages) // 4 + 1 + OUTPUT_TOKENS_ESTIMATE


def _hook(run_manager: Any) -> AttemptHook | None:
    for handler in getattr(run_manager, "handlers", None) or []:
        if isinstance(handler, AttemptHook):
            return handler
    return None


def _usage(result: ChatResult) -> UsageMetadata | None:
    total: UsageMetadata | None = None
    for generation in result.generations:
        usage = getattr(generation.message, "usage_metadata", None)
        if usage:
            total = usage if total is None else add_usage(total, usage)
    return total


class ResilientChatModel(BaseChatModel):
    """A provider chat model behind the call policy (budget, rate limit, timeout, retries).

    `bind_tools` and `with_structured_output` are the provider's own, re-pointed at this
    wrapper, so tool declarations and structured-output schemas reach the provider unchanged.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel = Field(description="The provider's chat model.")
    role: str = Field(description="The engine role this model serves (for messages and logs).")
    timeout_s: float = Field(gt=0, description="Limit for one attempt, from when it goes out.")
    max_retries: int = Field(ge=0, description="Retries of retryable failures after the first.")
    retry_base_delay_s: float = Field(ge=0, description="Backoff ceiling of the first retry.")
    rate_limit_patience_s: float = Field(
        default=300.0, ge=0, description="How long a call keeps retrying 429s."
    )
    limiter: Any = Field(default=None, exclude=True, description="A `ModelLimiter`, or None.")

    def __repr_args__(self) -> Any:
        # LangChain serialises a model it cannot `dumps` through its repr for every callback
        # (once per model copy, and each structured call makes one): the full pydantic repr of
        # the provider model inside cost more CPU than the rest of a call.
        return [("role", self.role), ("inner", type(self.inner).__name__)]

    def _dict_for_compat(self) -> dict[str, Any]:
        # Asked on every call (callbacks' invocation params, the cache key). The default goes
        # through the deprecated `dict()` under a warnings filter, which costs more than this.
        return self.asdict()

    @property
    def _llm_type(self) -> str:
        return self.inner._llm_type

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"role": self.role, **self.inner._identifying_params}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return self.inner._get_ls_params(stop=stop, **kwargs)

    # binding: the provider decides the wire format, we keep the call path ----------------

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        """The provider's `bind_tools`, calling through this wrapper."""
        return retarget(self.inner.bind_tools(tools, tool_choice=tool_choice, **kwargs), self)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, dict[str, Any] | BaseModel]:
        """The provider's `with_structured_output`, calling through this wrapper."""
        runnable = self.inner.with_structured_output(schema, include_raw=include_raw, **kwargs)
        return retarget(runnable, self)

    # the policy -------------------------------------------------------------------------------

    def _judge(self, error: Exception) -> Verdict:
        if isinstance(error, LatsError):
            return Verdict(retry=False)
        if is_rate_limit(error):
            if self.limiter is not None:
                return Verdict(retry=True, counted=False)  # the limiter holds us back
            return Verdict(retry=True, hint_s=retry_after_s(error))
        return Verdict(retry=is_retryable(error))

    @cached_property
    def _model_label(self) -> str:
        """The provider's model name, as metrics and traces label it (asked once: it is
        reported on every attempt)."""
        params = self.inner._get_ls_params()
        return str(params.get("ls_model_name") or type(self.inner).__name__)

    async def _attempts(
        self,
        call: Callable[[], Awaitable[T]],
        messages: Sequence[BaseMessage],
        run_manager: Any,
        usage_of: Callable[[T], UsageMetadata | None],
    ) -> T:
        """Run `call` under the policy and return its result, or raise `ModelError`."""
        hook = _hook(run_manager)
        call_id: UUID | None = getattr(run_manager, "run_id", None)
        estimate = estimate_tokens(messages)
        limiter: ModelLimiter | None = self.limiter
        attempts = 0

        async def attempt() -> T:
            nonlocal attempts
            if hook is not None:
                hook.begin_attempt(call_id, estimate)
            result: T | None = None
            outcome: Outcome = "error"
            hint: float | None = None
            permit = None
            try:
                if limiter is not None:
                    permit = await limiter.acquire()
                attempts += 1
                async with asyncio.timeout(self.timeout_s):
                    result = await call()
                outcome = "ok"
                return result
            except Exception as e:
                if is_rate_limit(e):
                    outcome, hint = "rate_limited", retry_after_s(e)
                raise
            finally:
                if permit is not None and limiter is not None:
                    await limiter.release(permit, outcome, hint)
                    rate = limiter.stats().rate
                    observers.rate_limit_changed(self._model_label, rate or 0.0)
                if hook is not None:
                    hook.end_attempt(
                        call_id,
                        estimate,
                        usage_of(result) if result is not None else None,
                        rate_limited=outcome == "rate_limited",
                        limiter=limiter.stats() if limiter is not None else None,
                    )

        def log_retry(error: Exception, retries: int, delay: float) -> None:
            reason = "429" if is_rate_limit(error) else type(error).__name__
            observers.model_retry(cast(Role, self.role), self._model_label, reason)
            if limiter is not None and is_rate_limit(error):
                logger.info("%s model call rate limited; waiting for the limiter", self.role)
                return
            logger.warning(
                "%s model call failed (%s); retry %d/%d in %.2fs",
                self.role,
                type(error).__name__,
                retries,
                self.max_retries,
                delay,
            )

        try:
            return await retrying(
                attempt,
                self._judge,
                max_retries=self.max_retries,
                backoff=Backoff(self.retry_base_delay_s),
                patience_s=self.rate_limit_patience_s,
                on_retry=log_retry,
            )
        except LatsError:
            raise
        except Exception as e:
            raise self._failure(e, max(1, attempts)) from e

    def _failure(self, error: BaseException, attempts: int) -> ModelError:
        reason = describe_failure(error, timeout_s=self.timeout_s, attempts=attempts)
        logger.warning("%s model call %s: %s", self.role, reason, type(error).__name__)
        return ModelError(f"the {self.role} model call {reason}")

    # calls ------------------------------------------------------------------------------------

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await self._attempts(
            lambda: self.inner._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs),
            messages,
            run_manager,
            _usage,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The engine is async; this path exists for completeness: bounded retries only, relying
        # on the provider's own timeout, with no rate limiter (it is async) and no accounting.
        attempt = 0
        backoff = Backoff(self.retry_base_delay_s)
        while True:
            try:
                return self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            except LatsError:
                raise
            except Exception as e:
                if attempt >= self.max_retries or not is_retryable(e):
                    raise self._failure(e, attempt + 1) from e
                time.sleep(backoff.delay_s(attempt, retry_after_s(e)))
                attempt += 1

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        inner_type = type(self.inner)
        if (
            inner_type._astream is BaseChatModel._astream
            and inner_type._stream is BaseChatModel._stream
        ):
            # A model without streaming answers in one chunk.
            result = await self._agenerate(messages, stop, run_manager, **kwargs)
            message = result.generations[0].message
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=message.content,
                    tool_calls=getattr(message, "tool_calls", []),
                    usage_metadata=getattr(message, "usage_metadata", None),
                )
            )
            return

        async def open_stream() -> tuple[AsyncIterator[ChatGenerationChunk], ChatGenerationChunk]:
            # Retries are only safe before the first chunk has gone out.
            stream = self.inner._astream(messages, stop=stop, run_manager=run_manager, **kwargs)
            try:
                return stream, await anext(stream)
            except BaseException:
                await _close(stream)
                raise

        def first_usage(opened: tuple[Any, ChatGenerationChunk]) -> UsageMetadata | None:
            return getattr(opened[1].message, "usage_metadata", None)

        hook = _hook(run_manager)
        stream, first = await self._attempts(open_stream, messages, run_manager, first_usage)
        try:
            yield first
            while True:
                try:
                    chunk = await asyncio.wait_for(anext(stream), self.timeout_s)
                except StopAsyncIteration:
                    return
                except LatsError:
                    raise
                except Exception as e:
                    raise self._failure(e, 1) from e
                usage = getattr(chunk.message, "usage_metadata", None)
                if usage and hook is not None:
                    hook.add_usage(usage)
                yield chunk
        finally:
            await _close(stream)


async def _close(stream: AsyncIterator[Any]) -> None:
    """Close a provider's stream (and its HTTP response) that will not be read to the end."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


_retarget = retarget  # the name the call-policy tests use
