"""Scripted models behind the production call policy: any model factory (e.g. `FakeModels`)
wrapped so that every role's model is a `ResilientChatModel` with the settings' timeouts,
retries, budgets per attempt and the shared adaptive limiter, as `SettingsModelFactory` gives.
Benchmarks use it so that they measure what a user runs."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from calls.aimd import AimdState
from calls.models import ModelFactory, limiter_for, with_policy
from calls.ratelimit import LimiterSource, LocalLimiter, ModelLimiter, model_limiter
from calls.settings import ModelSettings, Role
from testkit.clock import FakeClock


class ThroughPolicy:
    """A model factory: `models`' role models, each behind the call policy, built once per
    role and reused (as `SettingsModelFactory` does)."""

    def __init__(
        self,
        models: ModelFactory,
        settings: ModelSettings,
        name: str = "scripted",
        *,
        limiters: LimiterSource = model_limiter,
    ) -> None:
        self.models = models
        self.settings = settings
        self.limiter = limiter_for(settings, name, limiters)
        self._built: dict[Role, BaseChatModel] = {}

    def for_role(self, role: Role) -> BaseChatModel:
        if role not in self._built:
            inner = self.models.for_role(role)
            self._built[role] = with_policy(inner, role, self.settings, self.limiter)
        return self._built[role]

    def model_string(self, role: Role) -> str:
        """The wrapped factory's model string for `role`."""
        return self.models.model_string(role)


def limiters_on(clock: FakeClock) -> LimiterSource:
    """A `LimiterSource` whose in-process limiters wait on `clock` (a 429's pause and the
    slower rate after it pass at once) and are the caller's own, shared with no other test."""

    def make(model: str, *, ceiling: float | None, burst: int, max_in_flight: int) -> ModelLimiter:
        state = AimdState(ceiling=ceiling or None, burst=burst)
        return LocalLimiter(state, max_in_flight, clock=clock, sleep=clock.sleep, name=model)

    return make
