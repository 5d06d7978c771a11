"""The model factory: role resolution, defaults, temperatures, and clear configuration errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_google_genai import ChatGoogleGenerativeAI

from app import startup
from app.settings import Settings
from calls.errors import ConfigError
from calls.models import (
    PROVIDER_TIMEOUT_MARGIN_S,
    ROLE_TEMPERATURE,
    ResilientChatModel,
    SettingsModelFactory,
)
from tests.support.model_settings import model_settings

pytestmark = pytest.mark.usefixtures("no_model_environment")


@pytest.fixture
def gemini_key(no_model_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Gemini API key in the environment (a fake one: nothing is called), set after the
    model variables are cleared."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")


def _inner(factory: SettingsModelFactory, role: str) -> object:
    model = factory.for_role(role)  # type: ignore[arg-type]
    assert isinstance(model, ResilientChatModel)
    return model.inner


def _geminis(factory: SettingsModelFactory, *roles: str) -> list[ChatGoogleGenerativeAI]:
    """The provider models of `roles` behind the call policy, each a Gemini client."""
    found = []
    for role in roles:
        model = _inner(factory, role)
        assert isinstance(model, ChatGoogleGenerativeAI)
        found.append(model)
    return found


@pytest.mark.usefixtures("gemini_key")
def test_gemini_is_built_per_role_with_the_role_temperature() -> None:
    factory = SettingsModelFactory(model_settings())

    voter, replanner = _geminis(factory, "voter", "replanner")

    assert voter.model.endswith("gemini-2.5-flash")
    assert voter.temperature == ROLE_TEMPERATURE["voter"] == 0.0
    assert ROLE_TEMPERATURE["evaluator"] == 0.0
    assert replanner.temperature == ROLE_TEMPERATURE["replanner"] > 0.5
    assert factory.for_role("voter") is factory.for_role("voter")


@pytest.mark.usefixtures("gemini_key")
def test_gemini_sdk_retries_are_off_and_our_policy_has_themodel_settings() -> None:
    settings = model_settings(model_timeout_s=12.5, model_max_retries=3)

    model = SettingsModelFactory(settings).for_role("planner")

    assert isinstance(model, ResilientChatModel)
    assert isinstance(model.inner, ChatGoogleGenerativeAI)
    assert model.inner.max_retries == 1  # 1 = one attempt; 0 would mean the SDK default
    assert model.inner.timeout == 12.5 + PROVIDER_TIMEOUT_MARGIN_S  # ours fires first
    assert (model.timeout_s, model.max_retries) == (12.5, 3)


@pytest.mark.usefixtures("gemini_key")
def test_lats_model_sets_every_role_and_a_role_variable_overrides_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LATS_MODEL", "google_genai:gemini-2.0-flash")
    monkeypatch.setenv("LATS_MODEL_VOTER", "google_genai:gemini-2.5-pro")
    factory = SettingsModelFactory(model_settings())

    planner, voter = _geminis(factory, "planner", "voter")

    assert planner.model.endswith("gemini-2.0-flash")
    assert voter.model.endswith("gemini-2.5-pro")


def test_a_missing_gemini_key_names_the_variable_to_set() -> None:
    settings = model_settings(model="google_genai:gemini-2.5-flash")

    with pytest.raises(ConfigError, match="set GOOGLE_API_KEY"):
        SettingsModelFactory(settings).check()


@pytest.mark.usefixtures("gemini_key")
def test_with_a_key_and_no_model_gemini_is_the_default() -> None:
    factory = SettingsModelFactory(model_settings())

    assert factory.model_string("planner") == "google_genai:gemini-2.5-flash"


def test_a_missing_local_model_file_is_a_clear_config_error(tmp_path: Path) -> None:
    settings = model_settings(model="local", local_model_path=tmp_path / "nope.gguf")

    with pytest.raises(ConfigError, match=r"local model .* unavailable: no model file"):
        SettingsModelFactory(settings).for_role("planner")


def test_a_bare_model_name_is_refused_with_the_expected_shape() -> None:
    with pytest.raises(ConfigError, match="must be 'provider:model'"):
        SettingsModelFactory(model_settings(model="gemini-2.5-flash")).for_role("planner")


def test_an_unknown_provider_is_a_config_error_with_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        SettingsModelFactory(model_settings(model="nosuch:thing")).for_role("executor")

    assert "\n" not in str(info.value)
    assert "nosuch:thing" in str(info.value)


def test_a_provider_package_not_installed_is_reported() -> None:
    with pytest.raises(ConfigError, match="not installed"):
        SettingsModelFactory(model_settings(model_voter="mistralai:mistral-small")).for_role(
            "voter"
        )


@pytest.mark.usefixtures("gemini_key")
def test_every_factory_of_the_process_shares_one_rate_limiter() -> None:
    first = SettingsModelFactory(model_settings(model_rps=3.0)).for_role("planner")
    second = SettingsModelFactory(model_settings(model_rps=3.0)).for_role("voter")
    adaptive = SettingsModelFactory(model_settings(model_rps=0)).for_role("planner")

    assert isinstance(first, ResilientChatModel)
    assert isinstance(second, ResilientChatModel)
    assert isinstance(adaptive, ResilientChatModel)
    assert first.limiter is not None
    assert first.limiter is second.limiter
    # With no ceiling the rate still adapts to the provider's 429s.
    assert adaptive.limiter is not None
    assert adaptive.limiter.stats().rate is None


@pytest.mark.usefixtures("gemini_key")
def test_the_service_s_redis_url_shares_the_model_limiter_between_processes() -> None:
    from app.backends.model_limiter_redis import RedisLimiter
    from calls.ratelimit import LocalLimiter

    service = Settings(_env_file=None, redis_url="redis://127.0.0.1:1/0")  # type: ignore[call-arg]
    shared = startup.model_factory(service).for_role("voter")
    alone = SettingsModelFactory(model_settings()).for_role("voter")

    assert isinstance(shared, ResilientChatModel)
    assert isinstance(alone, ResilientChatModel)
    assert isinstance(shared.limiter, RedisLimiter)
    assert isinstance(alone.limiter, LocalLimiter)
    assert not hasattr(model_settings(), "redis_url")  # a deployment URL is the service's setting
