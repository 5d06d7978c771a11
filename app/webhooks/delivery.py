"""Delivering one webhook: signed POSTs, retried with exponential backoff (the one retry loop,
`calls.retry.retrying`) on a connection failure, a timeout, a 408, 429 or 5xx; every attempt
reported as it ends, so the run's record shows how the delivery stands."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from app.keys.signing import signed_headers
from app.store.base import WebhookDelivery
from app.webhooks.targets import Resolver, WebhookRefused, check_target, system_resolve
from calls.retry import Backoff, Verdict, parse_retry_after, retrying

logger = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({408, 429})
MAX_BACKOFF_S = 60.0

Report = Callable[[WebhookDelivery], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """Timeout per attempt, most attempts, the first retry's backoff ceiling (doubled after)."""

    timeout_s: float
    max_attempts: int
    retry_base_s: float
    allow_private: bool


class _AttemptFailed(Exception):
    def __init__(self, status: int | None, error: str | None, retry: bool, hint_s: float | None):
        super().__init__(error or f"HTTP {status}")
        self.status = status
        self.error = error
        self.retry = retry
        self.hint_s = hint_s


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookSender:
    """Sends signed deliveries with `client` (its own connection pool, no redirects)."""

    key: bytes
    policy: DeliveryPolicy
    client: httpx.AsyncClient
    resolve: Resolver = system_resolve
    sleep: Sleep = asyncio.sleep
    clock: Callable[[], float] = time.time
    backoff: Backoff = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "backoff", Backoff(self.policy.retry_base_s, MAX_BACKOFF_S))

    async def deliver(
        self, url: str, webhook_id: str, body: bytes, report: Report, *, run_id: str
    ) -> WebhookDelivery:
        """POST `body` to `url` until a 2xx answers, a failure is not worth retrying, or the
        attempts are spent; `report` gets the delivery's state after every attempt."""
        attempts = 0
        reported: list[WebhookDelivery] = []

        async def told(delivery: WebhookDelivery) -> WebhookDelivery:
            reported.append(delivery)
            await report(delivery)
            return delivery

        async def attempt() -> WebhookDelivery:
            nonlocal attempts
            attempts += 1
            try:
                status = await self._post(url, webhook_id, body)
            except _AttemptFailed as failed:
                final = attempts >= self.policy.max_attempts or not failed.retry
                state = "failed" if final else "delivering"
                await told(self._state(webhook_id, attempts, failed.status, failed.error, state))
                logger.warning("run=%s webhook attempt %d failed: %s", run_id, attempts, failed)
                raise
            delivered = await told(self._state(webhook_id, attempts, status, None, "delivered"))
            logger.info("run=%s webhook delivered (HTTP %d, attempt %d)", run_id, status, attempts)
            return delivered

        def judge(error: Exception) -> Verdict:
            if isinstance(error, _AttemptFailed):
                return Verdict(retry=error.retry, hint_s=error.hint_s)
            return Verdict(retry=False)

        try:
            return await retrying(
                attempt,
                judge,
                max_retries=self.policy.max_attempts - 1,
                backoff=self.backoff,
                sleep=self.sleep,
            )
        except _AttemptFailed:
            return reported[-1]  # the last attempt's state, told as "failed"

    async def _post(self, url: str, webhook_id: str, body: bytes) -> int:
        """One attempt; its status when 2xx, else `_AttemptFailed`."""
        try:
            await check_target(url, allow_private=self.policy.allow_private, resolve=self.resolve)
        except WebhookRefused as e:
            raise _AttemptFailed(None, str(e), retry=False, hint_s=None) from e
        headers = signed_headers(self.key, webhook_id, int(self.clock()), body)
        try:
            response = await self.client.post(
                url, content=body, headers=headers, timeout=self.policy.timeout_s
            )
        except httpx.InvalidURL as e:
            raise _AttemptFailed(None, "invalid URL", retry=False, hint_s=None) from e
        except httpx.TimeoutException as e:
            raise _AttemptFailed(None, "timeout", retry=True, hint_s=None) from e
        except httpx.HTTPError as e:
            raise _AttemptFailed(None, type(e).__name__, retry=True, hint_s=None) from e
        status = response.status_code
        if 200 <= status < 300:
            return status
        retry = status in RETRIED_STATUSES or status >= 500
        hint = parse_retry_after(response.headers.get("retry-after")) if retry else None
        hint = min(hint, MAX_BACKOFF_S) if hint is not None else None
        raise _AttemptFailed(status, None, retry=retry, hint_s=hint)

    @staticmethod
    def _state(
        webhook_id: str, attempts: int, status: int | None, error: str | None, state: str
    ) -> WebhookDelivery:
        return WebhookDelivery.model_validate(
            {
                "webhook_id": webhook_id,
                "attempts": attempts,
                "last_status": status,
                "last_error": error,
                "state": state,
                "updated_at": datetime.now(UTC),
            }
        )
