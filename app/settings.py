"""The process's settings, one class read once by every entry point: the parts the model
calls, the engine and the tools declare (`calls.settings`, `agents.settings`, `tools.settings`)
plus what only the HTTP service and its workers need (store, queue, keys, per-key limits,
allowed hosts). All from `LATS_*` variables or `.env`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from agents.settings import EngineSettings
from app.keys.signing import secret_key
from app.keys.tenancy import KeyRing
from calls.local_catalog import CATALOG
from calls.models import LOCAL_MODEL, provider_of
from calls.settings import BackoffBase, ModelSettings
from tools.settings import ToolSettings


def _split(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(ModelSettings, EngineSettings, ToolSettings):
    """Settings of `lats serve`, `lats worker`, `lats solve` and `lats mcp`."""

    # Storage and queue ----------------------------------------------------------------------
    data_dir: Path = Field(default=Path("data"), description="Where the embedded store lives.")
    storage_reserve_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=0,
        le=1024**3,
        description="Space the embedded store keeps in reserve for the runs' ends when its disk "
        "fills (0: none).",
    )
    database_url: str | None = Field(
        default=None,
        description="postgresql://… to keep runs, events and checkpoints in Postgres.",
    )
    redis_url: str | None = Field(
        default=None,
        description="redis://… shares the adaptive model rate, the tools' rate limits, the "
        "model-call cache and the wake-ups between processes.",
    )
    max_active_runs: int = Field(default=4, ge=1, le=256, description="Runs executing at once.")
    max_queued_runs: int = Field(
        default=64, ge=0, le=10_000, description="Runs waiting; beyond this /solve answers 429."
    )
    lease_ttl_s: float = Field(
        default=15.0,
        ge=1,
        le=600,
        description="A worker's hold on a run; renewed every third of it. A run whose worker "
        "died is taken over by another worker once this has passed.",
    )
    store_outage_s: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="How long a run's writes wait for an unreachable store (Postgres down or "
        "hung) before the run stops on this worker; its lease then lapses and a worker takes "
        "it up again from its last checkpoint once the store returns.",
    )
    run_retention_days: float | None = Field(
        default=None,
        gt=0,
        le=3650,
        description="Finished runs (and their events) older than this are deleted by the "
        "workers, hourly; unset: kept until deleted (`DELETE /runs/{id}`).",
    )
    max_takeovers: int = Field(
        default=3,
        ge=0,
        le=100,
        description="Times a run is taken over from a worker that died holding it before it "
        "is failed (`worker_lost`) instead of run again: a run that kills its worker (out of "
        "memory, a crash) does not go on to kill every worker in turn.",
    )

    # HTTP -------------------------------------------------------------------------------------
    sse_heartbeat_s: float = Field(default=10.0, gt=0, le=15, description="SSE comment interval.")
    stream_stall_s: float = Field(
        default=30.0,
        ge=0.1,
        le=3600,
        description="A stream whose client leaves a frame unread this long is cut (the run goes "
        "on; the client re-joins with Last-Event-ID).",
    )
    stream_buffer_bytes: int = Field(
        default=256 * 1024,
        ge=8 * 1024,
        le=16 * 1024 * 1024,
        description="What a stream's connection may hold unread (socket plus server buffer).",
    )
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=10 * 1024 * 1024)
    shutdown_grace_s: int = Field(
        default=5, ge=0, le=600, description="Seconds open streams get on SIGTERM before the drain."
    )
    allowed_hosts: Annotated[list[str], NoDecode] | None = Field(
        default=None,
        description="Host headers accepted (comma separated; `*`: any). Unset: with no API "
        "key, localhost, 127.0.0.1, [::1] and the bind host; with keys, any.",
    )

    # Keys and tenants -------------------------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Accepted API keys, comma separated, each `name:key` or a bare `key` "
        "(named key1, key2, … by position); empty (and no admin key) means no authentication.",
    )
    admin_key: SecretStr | None = Field(
        default=None, description="A key that sees and manages every key's runs."
    )
    max_runs_per_key: int = Field(
        default=16, ge=1, le=10_000, description="Queued plus running runs one key may have."
    )
    key_rps: float = Field(
        default=20.0, gt=0, le=10_000, description="Requests per second one key may make."
    )
    key_burst: int = Field(
        default=40, ge=1, le=100_000, description="Requests one key may make at once."
    )
    key_max_streams: int = Field(
        default=8, ge=1, le=10_000, description="Event streams one key may hold open at once."
    )

    # Run options ------------------------------------------------------------------------------
    allowed_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Model strings a run may choose (`model`, `models`), comma separated; "
        "empty: runs use the server's models and may not choose.",
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description="Signs webhook deliveries (Standard Webhooks: `whsec_` + base64, or any "
        "text used as is); unset: runs may not ask for a webhook.",
    )
    webhook_allow_private: bool = Field(
        default=False,
        description="Accept webhook URLs whose host resolves to a loopback, link-local or "
        "private address (refused by default).",
    )
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=120, description="Per attempt.")
    webhook_max_attempts: int = Field(
        default=4, ge=1, le=10, description="POSTs of one delivery before it is given up."
    )
    webhook_retry_base_s: BackoffBase = Field(
        default=1.0, description="Wait before the second attempt; doubled for each one after."
    )

    # Documents --------------------------------------------------------------------------------
    document_max_bytes: int = Field(
        default=25 * 1024 * 1024,
        ge=1024,
        le=1024**3,
        description="The largest file a collection takes, as uploaded or fetched; a bigger one "
        "is a 413 `too_large`, refused while it streams in.",
    )
    document_key_max_bytes: int = Field(
        default=1024**3,
        ge=1024,
        le=1024**4,
        description="The bytes of all of one key's documents together; a document beyond is a "
        "413 `quota_exceeded`.",
    )
    document_max_pages: int = Field(
        default=2000,
        ge=1,
        le=100_000,
        description="The most pages of a PDF that is read; a longer one is a 422 `too_many_pages`.",
    )
    document_max_files: int = Field(
        default=10, ge=1, le=1000, description="The most files one upload may hold."
    )
    document_read_timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="How long reading one file may take (in a process of its own, killed then); "
        "beyond, a 422 `too_slow`.",
    )
    document_read_memory_mb: int = Field(
        default=1024,
        ge=256,
        le=65_536,
        description="The address space of the process that reads one file; a file whose "
        "reading needs more is a 422 `too_complex`.",
    )
    document_readers: int = Field(
        default=2, ge=1, le=64, description="Files read at once by one process; others wait."
    )
    document_urls: bool = Field(
        default=False,
        description='Let a collection take a document by URL (`{"url": …}`), fetched by the '
        "service; off: such a request is a 422 `url_refused`.",
    )
    document_url_allow_private: bool = Field(
        default=False,
        description="Fetch document URLs whose host resolves to a loopback, link-local or "
        "private address (refused by default, as webhooks are).",
    )
    document_url_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="How long fetching a document URL may take, its redirects included.",
    )

    @field_validator("api_keys", "allowed_hosts", "allowed_models", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _split(value)

    @field_validator("api_keys")
    @classmethod
    def _named_keys(cls, value: list[SecretStr]) -> list[SecretStr]:
        KeyRing.parse([key.get_secret_value() for key in value])  # names and keys are sound
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_only(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("redis_url must be a redis:// URL")
        return value or None

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("database_url must be a postgresql:// URL (unset: embedded SQLite)")
        return value or None

    @field_validator("admin_key", "webhook_secret")
    @classmethod
    def _non_empty(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value().strip() else None

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

    @model_validator(mode="after")
    def _quote_choices_for_the_local_responder(self) -> Settings:
        """The local model writes under a grammar, which can hold the allowed quotes: on by
        default when the responder is the local model. A value that was set stays."""
        if "quote_choices" not in self.model_fields_set:
            self.quote_choices = self.model_for("responder") == LOCAL_MODEL
        return self

    @field_validator("allowed_models")
    @classmethod
    def _model_strings(cls, value: list[str]) -> list[str]:
        for spec in value:
            if provider_of(spec) is None:
                raise ValueError(
                    f"allowed model {spec!r} must be 'provider:model' or 'local', "
                    "e.g. 'google_genai:gemini-2.5-pro'"
                )
        return value

    @field_validator("webhook_secret")
    @classmethod
    def _webhook_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret_key(value.get_secret_value())  # a whsec_ secret is base64
        return value

    def key_ring(self) -> KeyRing:
        """The accepted keys by name, the admin key included; ValueError if they clash."""
        admin = self.admin_key.get_secret_value() if self.admin_key else None
        return KeyRing.parse([key.get_secret_value() for key in self.api_keys], admin)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
