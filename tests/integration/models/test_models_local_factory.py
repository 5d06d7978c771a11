"""The model factory's local model: the default without a model or a key, and the role
settings it is built with (the factory resolves the bundled GGUF)."""

from __future__ import annotations

import logging

import pytest

from calls.local_model import LocalChatModel
from calls.models import ROLE_TEMPERATURE, ResilientChatModel, SettingsModelFactory
from tests.support.model_settings import model_settings

pytestmark = pytest.mark.usefixtures("no_model_environment")


def test_without_a_model_or_a_key_the_local_model_is_used_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    factory = SettingsModelFactory(model_settings())

    with caplog.at_level(logging.WARNING, logger="calls.models"):
        factory.check()

    assert factory.model_string("planner") == "local"
    executor = factory.for_role("executor")
    assert isinstance(executor, ResilientChatModel)
    assert isinstance(executor.inner, LocalChatModel)
    notices = [r for r in caplog.records if "bundled local model" in r.getMessage()]
    assert len(notices) == 1
    assert "GOOGLE_API_KEY" in notices[0].getMessage()


def test_local_model_gets_the_role_temperature_and_no_rate_limit() -> None:
    factory = SettingsModelFactory(model_settings(model="local", local_max_tokens=64))

    model = factory.for_role("replanner")

    assert isinstance(model, ResilientChatModel)
    assert isinstance(model.inner, LocalChatModel)
    assert model.inner.temperature == ROLE_TEMPERATURE["replanner"]
    assert model.inner.max_tokens == 64
    assert model.limiter is None
