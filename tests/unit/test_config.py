"""Settings and run parameters: defaults, bounds, and clear errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.events import EVENT_ADAPTER, NodeStarted, RunDone
from agents.params import RunParams
from app.settings import Settings
from calls.retry import is_retryable


def test_run_params_reject_values_outside_their_bounds() -> None:
    with pytest.raises(ValidationError) as info:
        RunParams(max_paths=0, max_concurrency=1000)

    fields = {e["loc"][0] for e in info.value.errors()}
    assert fields == {"max_paths", "max_concurrency"}


def test_run_params_reject_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        RunParams.model_validate({"max_paths": 2, "maxpaths": 3})


def test_role_override_wins_over_the_shared_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATS_MODEL", "openai:gpt-x")
    monkeypatch.setenv("LATS_MODEL_VOTER", "anthropic:claude-y")

    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    assert settings.model_for("voter") == "anthropic:claude-y"
    assert settings.model_for("planner") == "openai:gpt-x"


@pytest.mark.parametrize(
    ("variable", "value", "read", "refused", "why"),
    [
        (
            "LATS_TOOLS",
            "wikipedia, arxiv",
            ["wikipedia", "arxiv"],
            "wikipedia,bing",
            "unknown tool",
        ),
        (
            "LATS_ALLOWED_MODELS",
            "google_genai:gemini-2.5-pro, local",
            ["google_genai:gemini-2.5-pro", "local"],
            "gemini-2.5-pro",
            "provider:model",
        ),
    ],
)
def test_lists_are_read_comma_separated_and_bad_entries_fail(
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    read: list[str],
    refused: str,
    why: str,
) -> None:
    field = variable.removeprefix("LATS_").lower()
    monkeypatch.setenv(variable, value)
    assert getattr(Settings(_env_file=None), field) == read  # type: ignore[call-arg]

    monkeypatch.setenv(variable, refused)
    with pytest.raises(ValidationError, match=why):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_events_round_trip_through_the_discriminated_union() -> None:
    started = NodeStarted(run_id="r", node_id="n1")

    parsed = EVENT_ADAPTER.validate_json(started.model_dump_json())

    assert parsed == started
    assert "done" in str(RunDone.model_json_schema()["properties"]["type"])


def test_only_transient_failures_are_retryable() -> None:
    from langchain_core.exceptions import (
        ModelInvalidRequestError,
        ModelRateLimitError,
    )

    assert is_retryable(ModelRateLimitError("429"))
    assert is_retryable(TimeoutError())
    assert not is_retryable(ModelInvalidRequestError("400"))
    assert not is_retryable(ValueError("bad"))
