"""Fixtures for the tool tests: a fake clock, a tool runtime on it, settings that never read
the environment, and a way to call a tool as an agent's tool node does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from app.settings import Settings
from testkit.clock import FakeClock
from tools.runtime import RateLimiter, ToolRuntime, TtlCache

SettingsFactory = Callable[..., Settings]
CallTool = Callable[[BaseTool, dict[str, Any]], Awaitable[ToolMessage]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def clocked_runtime(clock: FakeClock, name: str, **fields: Any) -> ToolRuntime:
    """A tool runtime on `clock` (no spacing, a fresh cache, no retries and 10 s calls unless
    `fields` say otherwise)."""
    fields.setdefault("timeout_s", 10.0)
    fields.setdefault("max_retries", 0)
    fields.setdefault("max_chars", 1000)
    return ToolRuntime(
        name=name,
        cache_ttl_s=60.0,
        limiter=RateLimiter(0.0, clock=clock, sleep=clock.sleep),
        cache=TtlCache(clock=clock),
        clock=clock,
        sleep=clock.sleep,
        **fields,
    )


@pytest.fixture
def make_settings() -> SettingsFactory:
    """Settings from explicit fields only (no .env file); rate limits off unless asked for."""

    def make(**fields: Any) -> Settings:
        fields.setdefault("tool_min_interval_s", 0.0)
        return Settings(_env_file=None, **fields)  # type: ignore[call-arg]

    return make


@pytest.fixture
def call_tool() -> CallTool:
    """Invoke a tool with a tool call, as LangGraph's tool node does; returns the ToolMessage."""

    async def call(tool: BaseTool, args: dict[str, Any]) -> ToolMessage:
        message = await tool.ainvoke(
            {"name": tool.name, "args": args, "id": "call-1", "type": "tool_call"}
        )
        assert isinstance(message, ToolMessage)
        return message

    return call


def without_shown_passages(message: ToolMessage) -> dict[str, Any]:
    """The message's artifact without its `passages`, once each passage is checked to stand
    verbatim in the text the model reads."""
    artifact = dict(message.artifact)
    passages = artifact.pop("passages")
    assert passages
    assert all(p["text"] in message.text for p in passages)
    return artifact
