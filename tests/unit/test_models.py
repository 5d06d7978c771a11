"""The model factory: role resolution, temperatures, and clear configuration errors."""

from __future__ import annotations

import pytest
from langchain_google_genai import ChatGoogleGenerativeAI

from agents.errors import ConfigError
from agents.models import ROLE_TEMPERATURE, SettingsModelFactory
from agents.settings import Settings


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_gemini_is_built_per_role_with_the_role_temperature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    factory = SettingsModelFactory(_settings())

    voter = factory.for_role("voter")
    replanner = factory.for_role("replanner")

    assert isinstance(voter, ChatGoogleGenerativeAI)
    assert voter.model.endswith("gemini-2.5-flash")
    assert voter.temperature == ROLE_TEMPERATURE["voter"] == 0.0
    assert replanner.temperature == ROLE_TEMPERATURE["replanner"]
    assert factory.for_role("voter") is voter


def test_a_missing_gemini_key_names_the_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)

    with pytest.raises(ConfigError, match="set GOOGLE_API_KEY"):
        SettingsModelFactory(_settings()).check()


def test_a_bare_model_name_is_refused_with_the_expected_shape() -> None:
    with pytest.raises(ConfigError, match="must be 'provider:model'"):
        SettingsModelFactory(_settings(model="gemini-2.5-flash")).for_role("planner")


def test_an_unknown_provider_is_a_config_error_with_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        SettingsModelFactory(_settings(model="nosuch:thing")).for_role("executor")

    assert "\n" not in str(info.value)
    assert "nosuch:thing" in str(info.value)


def test_a_provider_package_not_installed_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="not installed"):
        SettingsModelFactory(_settings(model_voter="mistralai:mistral-small")).for_role("voter")
