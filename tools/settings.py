"""Settings of the research tools: which are enabled, their timeouts, retries, spacing,
cache, and each tool's own options. One part of the process's settings class
(`app.settings.Settings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode

from calls.settings import SETTINGS_CONFIG

KNOWN_TOOLS = ("web_search", "arxiv", "wikipedia", "local_docs")


class ToolSettings(BaseSettings):
    """What `tools.registry.build_tools` needs."""

    model_config = SETTINGS_CONFIG

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
        default=None,
        description="Folder of documents (PDF, DOCX, HTML, Markdown, text) loaded into the store "
        "at start-up and searched by the local_docs tool.",
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
