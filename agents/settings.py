"""Settings of the search engine itself: step and result limits, and the model-call cache's
file. One part of the process's settings class (`app.settings.Settings`); the engine reads only
these, the model factory and the tools read theirs."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from calls.settings import SETTINGS_CONFIG


class EngineSettings(BaseSettings):
    """What `agents.engine.Engine` needs that is not a per-run parameter."""

    model_config = SETTINGS_CONFIG

    # Engine limits --------------------------------------------------------------------------
    step_timeout_s: float = Field(
        default=180.0, gt=0, le=3600, description="Wall-time limit for one executor step."
    )
    result_max_chars: int = Field(
        default=4000, ge=200, le=100_000, description="A node keeps at most this much result text."
    )
    quote_choices: bool = Field(
        default=False,
        description="Give the responder, for each evidence item, the item's sentences as the "
        "only quotes a citation may carry (agents/grounding/choices.py). For models that write "
        "under a grammar (the local model, where it is on by default); the verifier checks "
        "every citation either way.",
    )
    result_reuse_s: float = Field(
        default=3600.0,
        ge=0,
        le=30 * 24 * 3600,
        description="How long a finished run's result answers an identical request (same task, "
        "parameters, models, tools and thread context; `use_cache` on) without a model call "
        "(agents/reuse.py). 0: never. The default is the tools' cache lifetime.",
    )
    cache_path: Path | None = Field(
        default=None,
        description="SQLite file for the model-call cache. Unset: the service's shared cache "
        "(Redis, else Postgres) when one is configured, else in memory, per process.",
    )
