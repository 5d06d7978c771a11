"""The attempts of one model call under the call policy (the rules are `calls.policy`'s): per
attempt the run's budget (`AttemptHook`), the model's limiter (`calls.permits`) and a timeout;
`retrying` repeats what `judge` allows, and the last failure surfaces as `ModelError`.

`judge` and `estimate_tokens` are pure; `CallPolicy` is plain data with the loop on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast
from uuid import UUID

from langchain_core.messages import BaseMessage
from langchain_core.messages.ai import UsageMetadata

from calls import observers
from calls.errors import LatsError, ModelError
from calls.permits import LimiterSlot, attempt_outcome
from calls.ratelimit import LimiterStats, ModelLimiter, Outcome
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


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """How one attempt of call `call_id` went: the tokens reserved for it (`estimate_tokens`),
    the usage it reported, whether the provider refused it with a 429, and the limiter's
    figures after it (None without a limiter)."""

    call_id: UUID | None
    estimate_tokens: int
    usage: UsageMetadata | None
    rate_limited: bool
    limiter: LimiterStats | None


class AttemptHook:
    """Receives every attempt the policy makes; a run's `CallTracker` is one. The policy finds
    it as the owner of the call's `CallObserver` (the run's config), so it needs no global
    state."""

    def begin_attempt(self, call_id: UUID | None, estimate_tokens: int) -> None:
        """An attempt is about to go out: count it, or raise `BudgetExhausted`."""

    def end_attempt(self, attempt: AttemptEnd) -> None:
        """The attempt is over: settle its reservation with the real usage."""

    def add_usage(self, usage: UsageMetadata) -> None:
        """Usage that arrived later (the rest of a stream)."""


def estimate_tokens(messages: Sequence[BaseMessage]) -> int:
    """A cheap upper-ish estimate of one call's tokens: prompt characters / 4 plus a reply."""
    return sum(len(m.text) for m in messages) // 4 + 1 + OUTPUT_TOKENS_ESTIMATE


def find_hook(run_manager: Any) -> AttemptHook | None:
    """The call's `AttemptHook`: the owner of its `CallObserver`, among its callback handlers."""
    for handler in getattr(run_manager, "handlers", None) or []:
        if isinstance(handler, observers.CallObserver) and isinstance(handler.owner, AttemptHook):
            return handler.owner
    return None


def judge(error: Exception, *, limited: bool) -> Verdict:
    """Whether a failed attempt is tried again. A 429 under a limiter (`limited`) does not use
    up the retries: the limiter holds the next attempt back until the provider's delay."""
    if isinstance(error, LatsError):
        return Verdict(retry=False)
    if is_rate_limit(error):
        if limited:
            return Verdict(retry=True, counted=False)
        return Verdict(retry=True, hint_s=retry_after_s(error))
    return Verdict(retry=is_retryable(error))


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """The policy for the calls of one model: who it serves, its limits and its limiter."""

    role: str
    model_label: str  # the provider's model name, as metrics and traces label it
    timeout_s: float
    max_retries: int
    retry_base_delay_s: float
    rate_limit_patience_s: float
    limiter: ModelLimiter | None

    async def run(
        self,
        call: Callable[[], Awaitable[T]],
        messages: Sequence[BaseMessage],
        run_manager: Any,
        usage_of: Callable[[T], UsageMetadata | None],
    ) -> T:
        """Run `call` under the policy and return its result, or raise `ModelError`."""
        attempt = _Attempt(
            self,
            call,
            usage_of,
            hook=find_hook(run_manager),
            call_id=getattr(run_manager, "run_id", None),
            estimate=estimate_tokens(messages),
        )
        try:
            return await retrying(
                attempt,
                lambda error: judge(error, limited=self.limiter is not None),
                max_retries=self.max_retries,
                backoff=Backoff(self.retry_base_delay_s),
                patience_s=self.rate_limit_patience_s,
                on_retry=self._log_retry,
            )
        except LatsError:
            raise
        except Exception as e:
            raise self.failure(e, max(1, attempt.made)) from e

    def run_sync(self, call: Callable[[], T]) -> T:
        """`call` with bounded retries only, relying on the provider's own timeout, with no
        limiter (it is async) and no accounting: the synchronous path, for completeness."""
        attempt = 0
        backoff = Backoff(self.retry_base_delay_s)
        while True:
            try:
                return call()
            except LatsError:
                raise
            except Exception as e:
                if attempt >= self.max_retries or not is_retryable(e):
                    raise self.failure(e, attempt + 1) from e
                time.sleep(backoff.delay_s(attempt, retry_after_s(e)))
                attempt += 1

    def failure(self, error: BaseException, attempts: int) -> ModelError:
        """The `ModelError` a call that failed with `error` after `attempts` surfaces as."""
        reason = describe_failure(error, timeout_s=self.timeout_s, attempts=attempts)
        logger.warning("%s model call %s: %s", self.role, reason, type(error).__name__)
        return ModelError(f"the {self.role} model call {reason}")

    def _log_retry(self, error: Exception, retries: int, delay: float) -> None:
        reason = "429" if is_rate_limit(error) else type(error).__name__
        observers.model_retry(cast(Role, self.role), self.model_label, reason)
        if self.limiter is not None and is_rate_limit(error):
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


class _Attempt(Generic[T]):
    """One call's attempts, one per `await attempt()`: the budget asked, a limiter permit, the
    call under the timeout, then the limiter and the budget told how it went."""

    def __init__(
        self,
        policy: CallPolicy,
        call: Callable[[], Awaitable[T]],
        usage_of: Callable[[T], UsageMetadata | None],
        *,
        hook: AttemptHook | None,
        call_id: UUID | None,
        estimate: int,
    ) -> None:
        self.policy = policy
        self.call = call
        self.usage_of = usage_of
        self.hook = hook
        self.call_id = call_id
        self.estimate = estimate
        self.made = 0  # attempts that got past the limiter

    async def __call__(self) -> T:
        if self.hook is not None:
            self.hook.begin_attempt(self.call_id, self.estimate)
        slot = LimiterSlot(self.policy.limiter, self.policy.model_label)
        result: T | None = None
        outcome: Outcome = "error"
        hint: float | None = None
        try:
            await slot.acquire()
            self.made += 1
            async with asyncio.timeout(self.policy.timeout_s):
                result = await self.call()
            outcome = "ok"
            return result
        except Exception as e:
            outcome, hint = attempt_outcome(e)
            raise
        finally:
            await slot.release(outcome, hint)
            if self.hook is not None:
                self.hook.end_attempt(
                    AttemptEnd(
                        call_id=self.call_id,
                        estimate_tokens=self.estimate,
                        usage=self.usage_of(result) if result is not None else None,
                        rate_limited=outcome == "rate_limited",
                        limiter=slot.stats(),
                    )
                )
