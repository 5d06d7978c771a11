"""Settings of the model-call machinery: which model each role uses, the call policy's
timeouts, retries and rates, and the local model. One part of the process's settings class
(`app.settings.Settings`), which every entry point reads once; the core only reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from calls.local_catalog import BUNDLED, LocalModelName

Role = Literal["planner", "executor", "replanner", "evaluator", "responder", "voter"]
ROLES: tuple[Role, ...] = ("planner", "executor", "replanner", "evaluator", "responder", "voter")

DEFAULT_MODEL = "google_genai:gemini-2.5-flash"

BackoffBase = Annotated[float, Field(ge=0, le=60)]
"""Seconds before a retry's second attempt (`calls.retry.Backoff.base_s`), doubled after."""

# Every part of the settings reads the same variables and file.
SETTINGS_CONFIG = SettingsConfigDict(
    env_prefix="LATS_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
)


class ModelSettings(BaseSettings):
    """What the model factory and the call policy need. A request's run parameters always win
    over these defaults; nothing here overrides a request."""

    model_config = SETTINGS_CONFIG

    # Models -------------------------------------------------------------------------------
    model: str = Field(
        default=DEFAULT_MODEL,
        description="init_chat_model string for every role, e.g. 'google_genai:gemini-2.5-flash'.",
    )
    model_planner: str | None = Field(default=None, description="Override for the planner role.")
    model_executor: str | None = Field(default=None, description="Override for the executor role.")
    model_replanner: str | None = Field(
        default=None, description="Override for the replanner role."
    )
    model_evaluator: str | None = Field(
        default=None, description="Override for the evaluator role."
    )
    model_responder: str | None = Field(
        default=None, description="Override for the responder role."
    )
    model_voter: str | None = Field(default=None, description="Override for the voter role.")
    model_timeout_s: float = Field(default=60.0, gt=0, le=600, description="Per model call.")
    model_max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries of retryable model errors (5xx, timeouts, connection errors); a "
        "429 uses none: it is waited out within LATS_MODEL_RATE_LIMIT_PATIENCE_S.",
    )
    model_retry_base_delay_s: BackoffBase = Field(
        default=1.0, description="First backoff delay; doubles, jittered."
    )
    model_rps: float = Field(
        default=0.0,
        ge=0,
        le=1000,
        description="Ceiling on model requests per second per model, all runs (0: none; the "
        "rate adapts to the provider's 429s either way).",
    )
    model_burst: int = Field(
        default=4, ge=1, le=1000, description="Requests that may go at once before a rate holds."
    )
    model_max_in_flight: int = Field(
        default=256,
        ge=1,
        le=1000,
        description="The most model calls in flight at once per model and process (of the "
        "deployment, when the cap is shared through Redis): the ceiling of the adaptive cap, "
        "which starts at 16 (or this, if lower), grows while the provider keeps up and shrinks "
        "on 429s and rising latency (calls/concurrency.py).",
    )
    model_rate_limit_patience_s: float = Field(
        default=300.0,
        ge=0,
        le=3600,
        description="How long one call keeps retrying after 429s (they use up no retries).",
    )
    local_model: LocalModelName = Field(
        default=BUNDLED,
        description="Model for LATS_MODEL=local: smollm2-135m (bundled), qwen2.5-coder-0.5b or "
        "qwen2.5-coder-1.5b (fetched once by `make model-qwen-0.5b` / `make model-qwen-1.5b`).",
    )
    local_models_dir: Path = Field(
        default=Path(".cache/models"), description="Where `make model-…` puts the GGUF files."
    )
    local_model_path: Path | None = Field(
        default=None,
        description="An explicit GGUF file for LATS_MODEL=local (wins over LATS_LOCAL_MODEL).",
    )
    local_n_ctx: int | None = Field(
        default=None,
        ge=512,
        le=32768,
        description="Context window of the local model (tokens; default: the model's, 4096 for "
        "SmolLM2, 8192 for Qwen).",
    )
    local_kv_cache_mb: int = Field(
        default=512,
        ge=0,
        le=65536,
        description="Memory for llama.cpp states kept to reuse across calls that share a prompt "
        "prefix (0: off; the last call's state is reused either way).",
    )
    local_instructions_last: bool | None = Field(
        default=None,
        description="Lay out local prompts as one fixed system message with each role's "
        "instructions at the end of the user's turn, so calls of every role on a path share "
        "it as their prefix (default: the model's choice in the catalog).",
    )
    local_max_tokens: int = Field(
        default=256, ge=16, le=4096, description="Most tokens one local model reply may have."
    )
    local_threads: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="CPU threads for the local model (default: half the cores).",
    )
    local_seed: int | None = Field(
        default=0, description="Sampling seed of the local model; fixed makes runs repeatable."
    )
    google_api_key: SecretStr | None = Field(
        default=None,
        validation_alias="GOOGLE_API_KEY",
        description="Gemini key; read from GOOGLE_API_KEY.",
    )

    def model_for(self, role: Role) -> str:
        """The model string for one role: its override, else the shared `model`."""
        override: str | None = getattr(self, f"model_{role}")
        return override or self.model
