"""The one model factory: nodes ask it for the model of a role, never build provider classes.

Every model it gives is a `ResilientChatModel`: the provider's chat model (built by
`init_chat_model`, or the bundled local model) behind one call policy — each attempt waits for
the process-wide rate limit and has a timeout, retryable failures (`agents.retry.is_retryable`)
are retried with bounded jittered backoff, and the last failure surfaces as `ModelError`, which
nothing retries again. Provider SDK retries are switched off so this is the only retry layer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from langchain.chat_models import init_chat_model
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.rate_limiters import BaseRateLimiter
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field

from agents.errors import ConfigError, LatsError, ModelError
from agents.ratelimit import shared_limiter
from agents.retry import TIMEOUT_ERRORS, UNREADABLE_ERRORS, is_retryable
from agents.settings import DEFAULT_MODEL, ROLES, Role, Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")

LOCAL_MODEL = "local"
"""The model string that selects the bundled offline model (SmolLM2 run by llama.cpp)."""

# The replanner should propose varied alternatives; judging roles should be repeatable.
ROLE_TEMPERATURE: dict[Role, float] = {
    "planner": 0.3,
    "executor": 0.2,
    "replanner": 0.8,
    "evaluator": 0.0,
    "responder": 0.2,
    "voter": 0.0,
}

# Providers whose key comes from the environment, and the variable to name when it is missing.
_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "mistralai": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
}


class ModelFactory(Protocol):
    """Gives the chat model for a role."""

    def for_role(self, role: Role) -> BaseChatModel: ...


# -- the call policy -----------------------------------------------------------------------------


# The provider's own HTTP timeout is a backstop a little past ours, so our timeout (a clean,
# retryable TimeoutError) is the one that normally fires.
PROVIDER_TIMEOUT_MARGIN_S = 5.0


def _status_of(error: BaseException) -> int | None:
    # Provider wrappers (e.g. langchain-google-genai's GoogleInvalidRequestError) drop the HTTP
    # status but chain the SDK error that has it.
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return None
        status = getattr(seen, "status_code", None) or getattr(seen, "code", None)
        if isinstance(status, int) and 100 <= status < 600:
            return status
        seen = seen.__cause__ or seen.__context__
    return None


def describe_failure(error: BaseException, *, timeout_s: float, attempts: int) -> str:
    """What went wrong, safe to show a user: the kind and HTTP status, never provider text."""
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    status = _status_of(error)
    if isinstance(error, TIMEOUT_ERRORS):
        return f"timed out after {timeout_s:g}s ({tries})"
    if status == 429:
        return f"was rate limited by the provider (HTTP 429, {tries})"
    if status is not None and status >= 500:
        return f"hit a provider server error (HTTP {status}, {tries})"
    if status is not None:
        return f"was rejected by the provider (HTTP {status}; not retried)"
    if isinstance(error, UNREADABLE_ERRORS):
        return f"got an unreadable response from the provider ({tries})"
    if is_retryable(error):
        return f"could not reach the provider ({type(error).__name__}, {tries})"
    return f"failed ({type(error).__name__}; not retried)"


class ResilientChatModel(BaseChatModel):
    """A provider chat model behind the call policy (rate limit, timeout, bounded retries).

    `bind_tools` and `with_structured_output` are the provider's own, re-pointed at this
    wrapper, so tool declarations and structured-output schemas reach the provider unchanged.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel = Field(description="The provider's chat model.")
    role: str = Field(description="The engine role this model serves (for messages and logs).")
    timeout_s: float = Field(gt=0, description="Limit for one attempt.")
    max_retries: int = Field(ge=0, description="Retries of retryable failures after the first.")
    retry_base_delay_s: float = Field(ge=0, description="First backoff delay; doubles, jittered.")
    limiter: BaseRateLimiter | None = Field(default=None, exclude=True)

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
        return _retarget(self.inner.bind_tools(tools, tool_choice=tool_choice, **kwargs), self)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, dict[str, Any] | BaseModel]:
        """The provider's `with_structured_output`, calling through this wrapper."""
        runnable = self.inner.with_structured_output(schema, include_raw=include_raw, **kwargs)
        return _retarget(runnable, self)

    # calls ------------------------------------------------------------------------------------

    def _backoff_s(self, attempt: int) -> float:
        return float(self.retry_base_delay_s * 2.0**attempt * (0.5 + random.random()))

    async def _attempts(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run `call` under the policy: limiter and timeout per attempt, bounded retries of
        retryable failures, and `ModelError` for the last failure."""
        attempt = 0
        while True:
            try:
                if self.limiter is not None:
                    await self.limiter.aacquire()
                async with asyncio.timeout(self.timeout_s):
                    return await call()
            except LatsError:
                raise
            except Exception as e:
                if attempt >= self.max_retries or not is_retryable(e):
                    raise self._failure(e, attempt + 1) from e
                delay = self._backoff_s(attempt)
                attempt += 1
                logger.warning(
                    "%s model call failed (%s); retry %d/%d in %.2fs",
                    self.role,
                    type(e).__name__,
                    attempt,
                    self.max_retries,
                    delay,
                )
                await asyncio.sleep(delay)

    def _failure(self, error: BaseException, attempts: int) -> ModelError:
        reason = describe_failure(error, timeout_s=self.timeout_s, attempts=attempts)
        logger.warning("%s model call %s: %s", self.role, reason, type(error).__name__)
        return ModelError(f"the {self.role} model call {reason}")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await self._attempts(
            lambda: self.inner._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The engine is async; this path exists for completeness and relies on the provider's
        # own timeout (passed at construction, see PROVIDER_TIMEOUT_MARGIN_S) instead of ours.
        attempt = 0
        while True:
            try:
                if self.limiter is not None:
                    self.limiter.acquire()
                return self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            except LatsError:
                raise
            except Exception as e:
                if attempt >= self.max_retries or not is_retryable(e):
                    raise self._failure(e, attempt + 1) from e
                time.sleep(self._backoff_s(attempt))
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

        stream, first = await self._attempts(open_stream)
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
                yield chunk
        finally:
            await _close(stream)


async def _close(stream: AsyncIterator[Any]) -> None:
    """Close a provider's stream (and its HTTP response) that will not be read to the end."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _retarget(runnable: Runnable[Any, Any], wrapper: ResilientChatModel) -> Runnable[Any, Any]:
    """`runnable` (built by `wrapper.inner`) with every use of `wrapper.inner` replaced by
    `wrapper`; raises if there was none, so a provider that builds its runnables another way
    fails loudly instead of silently skipping the call policy."""
    replaced = 0

    def walk(value: Any) -> Any:
        nonlocal replaced
        if value is wrapper.inner:
            replaced += 1
            return wrapper
        if isinstance(value, list | tuple):
            items = [walk(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            mapped = {k: walk(v) for k, v in value.items()}
            return value if all(mapped[k] is value[k] for k in value) else mapped
        if isinstance(value, Runnable) and isinstance(value, BaseModel):
            updates = {}
            for name in type(value).model_fields:
                current = getattr(value, name, None)
                new = walk(current)
                if new is not current:
                    updates[name] = new
            return value.model_copy(update=updates) if updates else value
        return value

    out = walk(runnable)
    if not replaced:
        raise ConfigError(
            f"cannot apply the call policy to {type(wrapper.inner).__name__}: its runnable "
            "does not call the model it came from"
        )
    result: Runnable[Any, Any] = out
    return result


# -- the factory --------------------------------------------------------------------------------


def _env_has(*names: str) -> bool:
    return any(os.environ.get(name) for name in names)


class SettingsModelFactory:
    """Builds each role's model from `Settings`, once, behind the call policy.

    `LATS_MODEL` (an `init_chat_model` string, or `local`) sets every role, `LATS_MODEL_<ROLE>`
    one role. With neither set and no Gemini key, the bundled local model is used, and the
    factory says so once.
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cache: dict[Role, BaseChatModel] = {}
        self._limiter = shared_limiter(settings.model_rps, settings.model_burst)
        self._said_local = False

    def for_role(self, role: Role) -> BaseChatModel:
        """The model for `role`, built on first use and reused after."""
        if role not in self._cache:
            self._cache[role] = self._build(role)
        return self._cache[role]

    def check(self) -> None:
        """Build every role's model now, so misconfiguration fails at start-up."""
        for role in ROLES:
            self.for_role(role)

    def _has_google_key(self) -> bool:
        if self._settings.google_api_key is not None:
            return bool(self._settings.google_api_key.get_secret_value())
        return _env_has(*_KEY_VARIABLES["google_genai"])

    def model_string(self, role: Role) -> str:
        """The model string `role` uses after defaults: with no model configured at all and
        no Gemini key, that is `local` rather than a Gemini model that cannot work."""
        settings = self._settings
        spec = settings.model_for(role)
        configured = "model" in settings.model_fields_set or getattr(settings, f"model_{role}")
        if configured or spec != DEFAULT_MODEL or self._has_google_key():
            return spec
        if not self._said_local:
            self._said_local = True
            logger.warning(
                "LATS_MODEL is not set and there is no GOOGLE_API_KEY: using the bundled local "
                "model (SmolLM2-135M, offline; weak answers). Set GOOGLE_API_KEY for Gemini."
            )
        return LOCAL_MODEL

    def _build(self, role: Role) -> BaseChatModel:
        spec = self.model_string(role)
        settings = self._settings
        inner = self._local(role) if spec == LOCAL_MODEL else self._provider(role, spec)
        logger.info("model for role=%s: %s", role, spec)
        return ResilientChatModel(
            inner=inner,
            role=role,
            timeout_s=settings.model_timeout_s,
            max_retries=settings.model_max_retries,
            retry_base_delay_s=settings.model_retry_base_delay_s,
            # One llama.cpp instance serves the process in turn; a request rate means nothing.
            limiter=None if spec == LOCAL_MODEL else self._limiter,
            profile=inner.profile,
        )

    def _local(self, role: Role) -> BaseChatModel:
        from agents.local_model import LocalChatModel, LocalModelUnavailable, default_model_path

        settings = self._settings
        try:
            path = settings.local_model_path or default_model_path()
            return LocalChatModel(
                model_path=path,
                temperature=ROLE_TEMPERATURE[role],
                n_ctx=settings.local_n_ctx,
                max_tokens=settings.local_max_tokens,
                n_threads=settings.local_threads,
                seed=settings.local_seed,
            )
        except LocalModelUnavailable as e:
            hint = "" if self._has_google_key() else " (or set GOOGLE_API_KEY to use Gemini)"
            raise ConfigError(f"the local model for role {role} is unavailable: {e}{hint}") from e

    def _provider(self, role: Role, spec: str) -> BaseChatModel:
        provider, sep, name = spec.partition(":")
        if not sep or not provider or not name:
            raise ConfigError(
                f"model {spec!r} for role {role} must be 'provider:model' or 'local', "
                f"e.g. {DEFAULT_MODEL!r} (a bare Gemini name would route to Vertex AI)"
            )
        if provider == "google_genai" and not self._has_google_key():
            raise ConfigError(
                f"model {spec!r} for role {role} needs a Gemini API key: set GOOGLE_API_KEY"
            )
        kwargs: dict[str, Any] = {
            "temperature": ROLE_TEMPERATURE[role],
            "timeout": self._settings.model_timeout_s + PROVIDER_TIMEOUT_MARGIN_S,
            # Our call policy is the only retry layer. For ChatGoogleGenerativeAI 0 would mean
            # "the SDK default" (several attempts); 1 means one attempt and no SDK retries.
            "max_retries": 1 if provider == "google_genai" else 0,
        }
        if provider == "google_genai" and self._settings.google_api_key is not None:
            kwargs["api_key"] = self._settings.google_api_key
        try:
            model: BaseChatModel = init_chat_model(spec, **kwargs)
        except ImportError as e:
            raise ConfigError(
                f"model {spec!r} for role {role} needs a provider package that is not installed"
            ) from e
        except Exception as e:  # provider constructors raise their own types
            keys = _KEY_VARIABLES.get(provider)
            if keys and not _env_has(*keys):
                raise ConfigError(
                    f"model {spec!r} for role {role} needs an API key: set {keys[0]}"
                ) from e
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"cannot use model {spec!r} for role {role}: {first_line}") from e
        return model
