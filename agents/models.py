"""The one model factory: nodes ask it for the model of a role, never build provider classes."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from agents.errors import ConfigError
from agents.settings import ROLES, Role, Settings

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

    def check(self) -> None:
        """Build every role's model now, so misconfiguration fails at start-up."""
        for role in ROLES:
            self.for_role(role)

    def _build(self, role: Role) -> BaseChatModel:
        spec = self._settings.model_for(role)
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
        except ValueError as e:
            raise ConfigError(f"cannot use model {spec!r} for role {role}: {e}") from e
        except Exception as e:  # provider constructors raise their own types (e.g. missing key)
            raise ConfigError(f"cannot build model {spec!r} for role {role}: {e}") from e
        logger.info("model for role=%s: %s", role, spec)
        return model
