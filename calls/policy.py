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

`ResilientChatModel` is the adapter: a LangChain chat model that puts the provider's behind the
policy. The attempts and retries are `calls.attempts`, the limiter's client `calls.permits`,
and the streaming path `calls.streaming`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import cached_property
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field

from calls import streaming
from calls.attempts import CallPolicy, find_hook
from calls.decoding import decoding_of
from calls.retarget import retarget
from calls.usage import call_cost


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
    seeded: bool = Field(
        default=False,
        description="The provider takes a per-call `seed` (calls.decoding): Gemini, OpenAI and "
        "the local model do; sending one to a provider that does not would fail the call.",
    )

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

    @cached_property
    def _model_label(self) -> str:
        """The provider's model name, as metrics and traces label it (asked once: it is
        reported on every attempt)."""
        params = self.inner._get_ls_params()
        return str(params.get("ls_model_name") or type(self.inner).__name__)

    def _policy(self) -> CallPolicy:
        return CallPolicy(
            role=self.role,
            model_label=self._model_label,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            retry_base_delay_s=self.retry_base_delay_s,
            rate_limit_patience_s=self.rate_limit_patience_s,
            limiter=self.limiter,
        )

    # calls ------------------------------------------------------------------------------------

    def _decoded(
        self,
        run_manager: AsyncCallbackManagerForLLMRun | CallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """The call's options with the decoding its config asked for (calls.decoding): the
        caller's own options win, so a test or a provider-specific option is never replaced."""
        decoding = decoding_of(run_manager.metadata if run_manager is not None else None)
        if decoding is None:
            return kwargs
        return {**decoding.options(seeded=self.seeded), **kwargs}

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kwargs = self._decoded(run_manager, kwargs)
        return await self._policy().run(
            lambda: self.inner._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs),
            messages,
            run_manager,
            lambda result: call_cost(result).usage,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The engine is async; this path exists for completeness.
        kwargs = self._decoded(run_manager, kwargs)
        return self._policy().run_sync(
            lambda: self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        )

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if not streaming.streams(self.inner):
            yield streaming.one_chunk(await self._agenerate(messages, stop, run_manager, **kwargs))
            return
        kwargs = self._decoded(run_manager, kwargs)
        policy = self._policy()
        hook = find_hook(run_manager)
        stream, first = await policy.run(
            lambda: streaming.open_stream(
                self.inner, messages, stop=stop, run_manager=run_manager, **kwargs
            ),
            messages,
            run_manager,
            streaming.first_usage,
        )
        try:
            yield first
            while True:
                chunk = await streaming.next_chunk(stream, self.timeout_s, policy.failure)
                if chunk is None:
                    return
                usage = streaming.chunk_usage(chunk)
                if usage and hook is not None:
                    hook.add_usage(usage)
                yield chunk
        finally:
            await streaming.close(stream)
