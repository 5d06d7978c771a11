"""What a run may choose, checked when it is created: its models (from the operator's
allow-list), its tools (from the server's enabled ones) and its webhook (a public address).
A refusal names the field, and the HTTP layer answers 422 with it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agents.params import RunParams
from app.errors import ServiceError
from app.settings import Settings
from app.webhooks.targets import Resolver, WebhookRefused, check_target, system_resolve


class RunOptionRefused(ServiceError, code="option_refused"):
    """A run parameter the server does not accept (a model, a tool, a webhook)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The server's side of a run's choices."""

    allowed_models: frozenset[str]
    tools: tuple[str, ...]
    webhooks: bool
    allow_private: bool
    resolve: Resolver = system_resolve

    @classmethod
    def from_settings(cls, settings: Settings, tools: Iterable[str]) -> RunOptions:
        """The options of a server with `settings` and the enabled `tools` (their names)."""
        return cls(
            frozenset(settings.allowed_models),
            tuple(tools),
            settings.webhook_secret is not None,
            settings.webhook_allow_private,
        )

    def check_params(self, params: RunParams) -> None:
        """Refuse a model outside the allow-list (or any model without one) and a tool the
        server does not have enabled."""
        for field, spec in self._chosen_models(params):
            if not self.allowed_models:
                raise RunOptionRefused(
                    field,
                    "this server does not let runs choose a model (LATS_ALLOWED_MODELS is not set)",
                )
            if spec not in self.allowed_models:
                allowed = ", ".join(sorted(self.allowed_models))
                raise RunOptionRefused(
                    field, f"model {spec!r} is not allowed on this server; allowed: {allowed}"
                )
        unknown = sorted(set(params.tools or ()) - set(self.tools))
        if unknown:
            enabled = ", ".join(self.tools) or "none"
            raise RunOptionRefused(
                "tools",
                f"tool(s) {', '.join(unknown)} not enabled on this server; enabled: {enabled}",
            )

    @staticmethod
    def _chosen_models(params: RunParams) -> list[tuple[str, str]]:
        chosen = [("model", params.model)] if params.model is not None else []
        chosen += [(f"models.{role}", spec) for role, spec in (params.models or {}).items()]
        return chosen

    async def check_webhook(self, url: str | None) -> None:
        """Refuse a webhook when the server signs none, or its URL is not a public http(s)
        address (unless private ones are allowed)."""
        if url is None:
            return
        if not self.webhooks:
            raise RunOptionRefused(
                "webhook", "this server sends no webhooks (LATS_WEBHOOK_SECRET is not set)"
            )
        try:
            await check_target(url, allow_private=self.allow_private, resolve=self.resolve)
        except WebhookRefused as e:
            raise RunOptionRefused("webhook", str(e)) from e
