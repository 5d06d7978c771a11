"""The one model factory: nodes ask it for the model of a role, never build provider classes."""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from agents.errors import ConfigError
from agents.settings import DEFAULT_MODEL, ROLES, Role, Settings

logger = logging.getLogger(__name__)

# The replanner should propose varied alternatives; judging roles should be repeatable.
ROLE_TEMPERATURE: dict[Role, float] = {
    "planner": 0.3,
    "executor": 0.2,
    "replanner": 0.8,
    "evaluator": 0.0,
    "responder": 0.2,
    "voter": 0.0,
}


class ModelFactory(Protocol):
    """Gives the chat model for a role."""

    def for_role(self, role: Role) -> BaseChatModel: ...


class SettingsModelFactory:
    """Builds models from `Settings` through `init_chat_model`, one instance per role."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cache: dict[Role, BaseChatModel] = {}

    def for_role(self, role: Role) -> BaseChatModel:
        """The model for `role`, built on first use and reused after."""
        if role not in self._cache:
            self._cache[role] = self._build(role)
        return self._cache[role]

    def _has_google_key(self) -> bool:
        if self._settings.google_api_key is not None:
            return bool(self._settings.google_api_key.get_secret_value())
        return bool(os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY"))

    def check(self) -> None:
        """Build every role's model now, so misconfiguration fails at start-up."""
        for role in ROLES:
            self.for_role(role)

    def _build(self, role: Role) -> BaseChatModel:
        spec = self._settings.model_for(role)
        provider, sep, name = spec.partition(":")
        if not sep or not provider or not name:
            raise ConfigError(
                f"model {spec!r} for role {role} must be 'provider:model', "
                f"e.g. {DEFAULT_MODEL!r} (a bare Gemini name would route to Vertex AI)"
            )
        if provider == "google_genai" and not self._has_google_key():
            raise ConfigError(
                f"model {spec!r} for role {role} needs a Gemini API key: set GOOGLE_API_KEY"
            )
        kwargs: dict[str, Any] = {
            "temperature": ROLE_TEMPERATURE[role],
            "timeout": self._settings.model_timeout_s,
            "max_retries": self._settings.model_max_retries,
        }
        if spec.startswith("google_genai:") and self._settings.google_api_key is not None:
            kwargs["api_key"] = self._settings.google_api_key
        try:
            model: BaseChatModel = init_chat_model(spec, **kwargs)
        except ImportError as e:
            raise ConfigError(
                f"model {spec!r} for role {role} needs a provider package that is not installed"
            ) from e
        except Exception as e:  # provider constructors raise their own types
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"cannot use model {spec!r} for role {role}: {first_line}") from e
        logger.info("model for role=%s: %s", role, spec)
        return model
