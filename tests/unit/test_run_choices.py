"""A run's own models and tools: the bounds of the parameters, the server's allow-list and
enabled tools (`app/runs/options.py`), and the factory building a chosen model once per
model string."""

from __future__ import annotations

import pytest
from langchain_google_genai import ChatGoogleGenerativeAI
from pydantic import ValidationError

from agents.params import MAX_DOMAINS, MAX_TOOLS, RunParams
from app.runs.options import RunOptionRefused, RunOptions
from calls.models import ResilientChatModel, RunModels, SettingsModelFactory
from tests.support.model_settings import model_settings

ALLOWED = RunOptions(
    allowed_models=frozenset({"google_genai:gemini-2.5-pro", "local"}),
    tools=("web_search", "wikipedia"),
    webhooks=False,
    allow_private=False,
)


def test_a_model_on_the_allow_list_is_accepted_for_every_role_and_per_role() -> None:
    params = RunParams(model="local", models={"executor": "google_genai:gemini-2.5-pro"})

    ALLOWED.check_params(params)

    assert params.model_overrides()["executor"] == "google_genai:gemini-2.5-pro"
    assert params.model_overrides()["planner"] == "local"


def test_a_model_off_the_allow_list_is_refused_naming_the_role() -> None:
    with pytest.raises(RunOptionRefused, match="not allowed") as refused:
        ALLOWED.check_params(RunParams(models={"voter": "openai:gpt-4o"}))
    assert refused.value.field == "models.voter"


def test_without_an_allow_list_no_run_may_choose_a_model() -> None:
    options = RunOptions(frozenset(), ("web_search",), webhooks=False, allow_private=False)

    with pytest.raises(RunOptionRefused, match="LATS_ALLOWED_MODELS") as refused:
        options.check_params(RunParams(model="local"))
    assert refused.value.field == "model"


def test_a_tool_the_server_has_not_enabled_is_refused() -> None:
    with pytest.raises(RunOptionRefused, match="arxiv") as refused:
        ALLOWED.check_params(RunParams(tools=["wikipedia", "arxiv"]))
    assert refused.value.field == "tools"


def test_a_subset_of_the_enabled_tools_and_no_tools_are_accepted() -> None:
    ALLOWED.check_params(RunParams(tools=["wikipedia"]))
    ALLOWED.check_params(RunParams(tools=[]))


@pytest.mark.parametrize(
    "fields",
    [
        {"exclude_domains": [f"d{i}.example" for i in range(MAX_DOMAINS + 1)]},
        {"include_domains": ["not a domain"]},
        {"include_domains": ["https://example.com/"]},
        {"tools": [f"t{i}" for i in range(MAX_TOOLS + 1)]},
        {"model": "x" * 201},
        {"models": {"chef": "local"}},
    ],
)
def test_run_choices_have_bounds(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RunParams.model_validate(fields)


@pytest.mark.usefixtures("no_model_environment")
def test_a_chosen_model_is_built_by_the_factory_once_per_model_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # a fake one: nothing is called
    factory = SettingsModelFactory(model_settings())
    run = RunModels(factory, {"executor": "google_genai:gemini-2.5-pro"})

    chosen = run.for_role("executor")

    assert isinstance(chosen, ResilientChatModel)
    assert isinstance(chosen.inner, ChatGoogleGenerativeAI)
    assert chosen.inner.model.endswith("gemini-2.5-pro")
    assert chosen is RunModels(factory, {"executor": "google_genai:gemini-2.5-pro"}).for_role(
        "executor"
    )
    assert run.for_role("planner") is factory.for_role("planner")
    assert factory.for_role("planner") is not chosen
