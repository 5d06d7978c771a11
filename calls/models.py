"""The one model factory: nodes ask it for the model of a role, never build provider classes.

Every model it gives is a `ResilientChatModel` (`calls.policy`): the provider's chat model
(built by `init_chat_model`, or the bundled local model) behind one call policy — run budgets
per attempt, the model's adaptive rate limiter shared by every run, a timeout per attempt,
bounded retries, and one `ModelError` at the end. Provider SDK retries are switched off so the
policy is the only retry layer.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol, runtime_checkable

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from calls.errors import ConfigError
from calls.policy import ResilientChatModel
from calls.ratelimit import LimiterSource, ModelLimiter, model_limiter
from calls.retry import describe_failure
from calls.settings import DEFAULT_MODEL, ROLES, ModelSettings, Role

logger = logging.getLogger(__name__)

__all__ = [
    "LOCAL_MODEL",
    "ModelChooser",
    "ModelFactory",
    "ResilientChatModel",
    "RunModels",
    "SettingsModelFactory",
    "describe_failure",
    "provider_of",
    "with_policy",
]

LOCAL_MODEL = "local"
"""The model string that selects the bundled offline model (SmolLM2 run by llama.cpp)."""


def provider_of(spec: str) -> str | None:
    """The provider a model string names: `local` for the local model, else the part before
    the colon of `provider:model`; None when it is neither (a bare name, an empty part), a
    string the factory cannot build. The one check of a model string's shape: the factory's
    and the settings' allow-list's."""
    if spec == LOCAL_MODEL:
        return LOCAL_MODEL
    provider, sep, name = spec.partition(":")
    return provider if sep and provider and name else None


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
    """Gives the chat model for a role, and says which model string that is (after its
    defaults: what `/readyz` reports)."""

    def for_role(self, role: Role) -> BaseChatModel: ...

    def model_string(self, role: Role) -> str: ...


@runtime_checkable
class ModelChooser(ModelFactory, Protocol):
    """A factory that also builds a role's model from a model string a run chose."""

    def for_model(self, role: Role, spec: str) -> BaseChatModel: ...


class RunModels:
    """One run's models: the roles in `overrides` from their model strings (built by the
    chooser, which caches them per model string), the others the chooser's own."""

    def __init__(self, chooser: ModelChooser, overrides: dict[Role, str]) -> None:
        self._chooser = chooser
        self._overrides = dict(overrides)

    def for_role(self, role: Role) -> BaseChatModel:
        spec = self._overrides.get(role)
        if spec is None:
            return self._chooser.for_role(role)
        return self._chooser.for_model(role, spec)

    def model_string(self, role: Role) -> str:
        """The model string the run chose for `role`, else the chooser's."""
        return self._overrides.get(role) or self._chooser.model_string(role)


# The provider's own HTTP timeout is a backstop a little past ours, so our timeout (a clean,
# retryable TimeoutError) is the one that normally fires.
PROVIDER_TIMEOUT_MARGIN_S = 5.0


# Providers whose chat model takes a per-call `seed` (calls.decoding); others get temperature only.
SEEDED_PROVIDERS = frozenset({LOCAL_MODEL, "google_genai", "openai"})


def with_policy(
    inner: BaseChatModel,
    role: Role,
    settings: ModelSettings,
    limiter: ModelLimiter | None,
    *,
    seeded: bool = False,
) -> ResilientChatModel:
    """`inner` behind the call policy with the settings' timeouts and retries; `seeded` when it
    takes a per-call seed. The factory uses it for every model; scripted models in tests and
    benchmarks use it to run through the same policy as production."""
    return ResilientChatModel(
        inner=inner,
        role=role,
        timeout_s=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
        retry_base_delay_s=settings.model_retry_base_delay_s,
        rate_limit_patience_s=settings.model_rate_limit_patience_s,
        limiter=limiter,
        profile=inner.profile,
        seeded=seeded,
    )


def limiter_for(
    settings: ModelSettings, model: str, limiters: LimiterSource = model_limiter
) -> ModelLimiter:
    """The shared limiter for `model` under `settings`, from `limiters` (in-process by
    default; the service's may share it with every process of the deployment)."""
    return limiters(
        model,
        ceiling=settings.model_rps or None,
        burst=settings.model_burst,
        max_in_flight=settings.model_max_in_flight,
    )


def _env_has(*names: str) -> bool:
    return any(os.environ.get(name) for name in names)


class SettingsModelFactory:
    """Builds each role's model from `Settings`, once, behind the call policy.

    `LATS_MODEL` (an `init_chat_model` string, or `local`) sets every role, `LATS_MODEL_<ROLE>`
    one role. With neither set and no Gemini key, the bundled local model is used, and the
    factory says so once.
    """

    def __init__(self, settings: ModelSettings, *, limiters: LimiterSource = model_limiter) -> None:
        self._settings = settings
        self._limiters = limiters
        self._cache: dict[tuple[Role, str], BaseChatModel] = {}
        self._said_local = False

    def for_role(self, role: Role) -> BaseChatModel:
        """The model for `role`, built on first use and reused after."""
        return self.for_model(role, self.model_string(role))

    def for_model(self, role: Role, spec: str) -> BaseChatModel:
        """`role`'s model from the model string `spec` (a run's choice, or the settings'),
        built on first use and reused after: one per role and model string."""
        key = (role, spec)
        if key not in self._cache:
            self._cache[key] = self._build(role, spec)
        return self._cache[key]

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

    def _build(self, role: Role, spec: str) -> BaseChatModel:
        settings = self._settings
        provider = provider_of(spec)
        if provider is None:
            raise ConfigError(
                f"model {spec!r} for role {role} must be 'provider:model' or 'local', "
                f"e.g. {DEFAULT_MODEL!r} (a bare Gemini name would route to Vertex AI)"
            )
        local = provider == LOCAL_MODEL
        inner = self._local(role) if local else self._provider(role, spec, provider)
        logger.info("model for role=%s: %s", role, spec)
        # One llama.cpp instance serves the process in turn; a request rate means nothing.
        limiter = None if local else limiter_for(settings, spec, self._limiters)
        return with_policy(inner, role, settings, limiter, seeded=provider in SEEDED_PROVIDERS)

    def _local(self, role: Role) -> BaseChatModel:
        from calls.local_catalog import CATALOG
        from calls.local_model import LocalChatModel, LocalModelUnavailable, model_file

        settings = self._settings
        spec = CATALOG[settings.local_model]
        try:
            path = settings.local_model_path or model_file(spec.name, settings.local_models_dir)
            return LocalChatModel(
                model_path=path,
                temperature=ROLE_TEMPERATURE[role],
                n_ctx=settings.local_n_ctx or spec.n_ctx,
                instructions_last=spec.instructions_last
                if settings.local_instructions_last is None
                else settings.local_instructions_last,
                max_tokens=settings.local_max_tokens,
                n_threads=settings.local_threads,
                seed=settings.local_seed,
                kv_cache_mb=settings.local_kv_cache_mb,
            )
        except LocalModelUnavailable as e:
            hint = "" if self._has_google_key() else " (or set GOOGLE_API_KEY to use Gemini)"
            raise ConfigError(f"the local model for role {role} is unavailable: {e}{hint}") from e

    def _provider(self, role: Role, spec: str, provider: str) -> BaseChatModel:
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
