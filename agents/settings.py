"""Process settings: one pydantic-settings class, read from `LATS_*` environment variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agents.local_catalog import BUNDLED, CATALOG, LocalModelName

Role = Literal["planner", "executor", "replanner", "evaluator", "responder", "voter"]
ROLES: tuple[Role, ...] = ("planner", "executor", "replanner", "evaluator", "responder", "voter")

DEFAULT_MODEL = "google_genai:gemini-2.5-flash"
KNOWN_TOOLS = ("web_search", "arxiv", "wikipedia", "local_docs")


class Settings(BaseSettings):
    """Everything the process needs that is not a per-run parameter.

    A request's run parameters always win over these defaults; nothing here overrides a request.
    """

    model_config = SettingsConfigDict(
        env_prefix="LATS_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

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
        default=2, ge=0, le=10, description="Retries of retryable model errors (429, 5xx)."
    )
    model_retry_base_delay_s: float = Field(
        default=1.0, ge=0, le=60, description="First backoff delay; doubles, jittered."
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
        default=16, ge=1, le=1000, description="Model calls in flight at once per model."
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

    # Engine limits --------------------------------------------------------------------------
    step_timeout_s: float = Field(
        default=180.0, gt=0, le=3600, description="Wall-time limit for one executor step."
    )
    result_max_chars: int = Field(
        default=4000, ge=200, le=100_000, description="A node keeps at most this much result text."
    )

    # Tools ----------------------------------------------------------------------------------
    tools: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["web_search", "arxiv", "wikipedia"],
        description="Enabled research tools (comma separated in the environment).",
    )
    mcp_servers: str | None = Field(
        default=None,
        description="MCP servers whose tools the executor gets: JSON or a JSON file path in "
        "the `mcpServers` shape (tools/mcp.py).",
    )
    tool_timeout_s: float = Field(default=20.0, gt=0, le=300, description="Per tool call.")
    tool_max_retries: int = Field(default=2, ge=0, le=5, description="Retries of retryable errors.")
    tool_min_interval_s: float = Field(
        default=1.0, ge=0, le=60, description="Minimum seconds between two calls of one tool."
    )
    tool_max_workers: int = Field(
        default=8, ge=1, le=256, description="Threads for blocking tool calls (their own pool)."
    )
    tool_result_max_chars: int = Field(default=3000, ge=200, le=50_000)
    tool_cache_ttl_s: float = Field(default=3600.0, ge=0, le=7 * 24 * 3600)
    web_search_backend: str = Field(default="duckduckgo", description="ddgs backend name.")
    web_search_region: str = Field(default="wt-wt")
    web_search_safesearch: Literal["on", "moderate", "off"] = "moderate"
    web_search_max_results: int = Field(default=5, ge=1, le=20)
    arxiv_max_results: int = Field(default=3, ge=1, le=20)
    wikipedia_lang: str = Field(default="en", pattern=r"^[a-z]{2,3}(-[a-z]+)?$")
    wikipedia_user_agent: str = Field(
        default="plantree/0.1 (research agent; https://example.invalid/plantree)"
    )
    local_docs_dir: Path | None = Field(
        default=None, description="Folder of .md/.txt files searched by the local_docs tool."
    )

    cache_path: Path | None = Field(
        default=None,
        description="SQLite file for the model-call cache (unset: in memory, per process).",
    )

    @field_validator("tools", mode="before")
    @classmethod
    def _split_tools(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(KNOWN_TOOLS))
        if unknown:
            raise ValueError(
                f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(KNOWN_TOOLS)}"
            )
        return value

    @model_validator(mode="after")
    def _slower_defaults_for_a_bigger_local_model(self) -> Settings:
        """A fetched Qwen on a CPU takes tens of seconds a call, and calls wait their turn for
        the one llama.cpp instance inside the call's timeout: its catalog entry gives longer
        defaults. Only defaults change; a value that was set stays."""
        spec = CATALOG[self.local_model]
        if spec.model_timeout_s is not None and "model_timeout_s" not in self.model_fields_set:
            self.model_timeout_s = spec.model_timeout_s
        if spec.step_timeout_s is not None and "step_timeout_s" not in self.model_fields_set:
            self.step_timeout_s = spec.step_timeout_s
        return self

    def model_for(self, role: Role) -> str:
        """The model string for one role: its override, else the shared `model`."""
        override: str | None = getattr(self, f"model_{role}")
        return override or self.model


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
