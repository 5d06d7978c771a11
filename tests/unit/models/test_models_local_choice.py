"""Choosing the local model (`LATS_LOCAL_MODEL`): the bundled SmolLM2 by default, a fetched
Qwen file with its own context default, an explicit path winning, and a Qwen that was never
fetched stopping start-up with the make target to run. Nothing here loads a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings
from calls.errors import ConfigError
from calls.local_catalog import CATALOG
from calls.local_model import GGUF_NAME, LocalChatModel
from calls.models import ResilientChatModel, SettingsModelFactory


@pytest.fixture(autouse=True)
def _no_model_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "LATS_MODEL", "LATS_LOCAL_MODEL"):
        monkeypatch.delenv(name, raising=False)


def _local(settings: Settings) -> LocalChatModel:
    model = SettingsModelFactory(settings).for_role("planner")
    assert isinstance(model, ResilientChatModel)
    assert isinstance(model.inner, LocalChatModel)
    return model.inner


def _fetched(folder: Path, name: str) -> Path:
    """A stand-in for a fetched file: sparse, of the catalog's size (no disk used)."""
    spec = CATALOG[name]  # type: ignore[index]
    assert spec.file_name is not None
    path = folder / spec.file_name
    with path.open("wb") as out:
        out.truncate(spec.size)
    return path


def test_the_bundled_model_is_the_default() -> None:
    model = _local(Settings(_env_file=None, model="local"))

    assert model.model_path.name == GGUF_NAME
    assert model.n_ctx == 4096
    assert model.kv_cache_mb == 512


def test_a_fetched_qwen_is_chosen_by_name_with_its_context_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _fetched(tmp_path, "qwen2.5-coder-1.5b")
    monkeypatch.setenv("LATS_LOCAL_MODEL", "qwen2.5-coder-1.5b")

    model = _local(Settings(_env_file=None, model="local", local_models_dir=tmp_path))

    assert model.model_path == path
    assert model.n_ctx == 8192


def test_an_explicit_context_window_wins(tmp_path: Path) -> None:
    _fetched(tmp_path, "qwen2.5-coder-0.5b")
    settings = Settings(
        _env_file=None,
        model="local",
        local_model="qwen2.5-coder-0.5b",
        local_models_dir=tmp_path,
        local_n_ctx=2048,
    )

    assert _local(settings).n_ctx == 2048


def test_an_explicit_path_wins_over_the_name(tmp_path: Path) -> None:
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF")
    settings = Settings(
        _env_file=None,
        model="local",
        local_model="qwen2.5-coder-1.5b",
        local_models_dir=tmp_path / "empty",
        local_model_path=own,
    )

    assert _local(settings).model_path == own


def test_a_qwen_not_fetched_stops_start_up_naming_the_make_target(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None, model="local", local_model="qwen2.5-coder-1.5b", local_models_dir=tmp_path
    )

    with pytest.raises(ConfigError, match=r"is not fetched .*run `make model-qwen-1\.5b`"):
        SettingsModelFactory(settings).check()


def test_a_truncated_qwen_file_is_refused(tmp_path: Path) -> None:
    path = _fetched(tmp_path, "qwen2.5-coder-0.5b")
    with path.open("r+b") as out:
        out.truncate(1000)
    settings = Settings(
        _env_file=None, model="local", local_model="qwen2.5-coder-0.5b", local_models_dir=tmp_path
    )

    with pytest.raises(ConfigError, match=r"run `make model-qwen-0\.5b` again"):
        SettingsModelFactory(settings).check()


def test_an_unknown_local_model_is_refused() -> None:
    with pytest.raises(ValueError, match="local_model"):
        Settings(_env_file=None, local_model="llama-70b")  # type: ignore[arg-type]


def test_a_qwen_gets_longer_default_timeouts_and_set_ones_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LATS_LOCAL_MODEL", "qwen2.5-coder-1.5b")
    chosen = Settings(_env_file=None)
    monkeypatch.setenv("LATS_MODEL_TIMEOUT_S", "45")
    pinned = Settings(_env_file=None)

    assert (chosen.model_timeout_s, chosen.step_timeout_s) == (300.0, 900.0)
    assert (pinned.model_timeout_s, pinned.step_timeout_s) == (45.0, 900.0)


def test_the_bundled_model_keeps_the_usual_timeouts() -> None:
    settings = Settings(_env_file=None, local_model="smollm2-135m")

    assert (settings.model_timeout_s, settings.step_timeout_s) == (60.0, 180.0)
