"""Fixtures for the tool tests: a fake clock, settings that never read the environment, and a
way to call a tool as an agent's tool node does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from app.settings import Settings
from testkit.clock import FakeClock

SettingsFactory = Callable[..., Settings]
CallTool = Callable[[BaseTool, dict[str, Any]], Awaitable[ToolMessage]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


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
