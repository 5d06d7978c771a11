"""Model settings from explicit fields alone, for the model factory's tests."""

from __future__ import annotations

from calls.settings import ModelSettings

MODEL_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "LATS_MODEL", "LATS_MODEL_VOTER")


def model_settings(**values: object) -> ModelSettings:
    """Model settings that read no .env file."""
    return ModelSettings(_env_file=None, **values)  # type: ignore[arg-type]
