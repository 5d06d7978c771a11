"""Scripted models behind the production call policy: any model factory (e.g. `FakeModels`)
wrapped so that every role's model is a `ResilientChatModel` with the settings' timeouts,
retries, budgets per attempt and the shared adaptive limiter, as `SettingsModelFactory` gives.
Benchmarks use it so that they measure what a user runs."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from calls.models import ModelFactory, limiter_for, with_policy
from calls.ratelimit import LimiterSource, model_limiter
from calls.settings import ModelSettings, Role


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
