"""Fixtures for the pure tool tests: a fake clock and settings that never read the environment."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from agents.settings import Settings


class FakeClock:
    """Monotonic time that moves only when told to, or by `sleep` when `advance_on_sleep`."""

    def __init__(self, *, advance_on_sleep: bool = True) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.advance_on_sleep = advance_on_sleep

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.advance_on_sleep:
            self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_settings(**fields: Any) -> Settings:
    """Settings from explicit fields only (no .env file); rate limits off unless asked for."""
    fields.setdefault("tool_min_interval_s", 0.0)
    return Settings(_env_file=None, **fields)  # type: ignore[call-arg]


async def call(tool: BaseTool, args: dict[str, Any]) -> ToolMessage:
    """Invoke a tool the way an agent's tool node does: with a tool call."""
    message = await tool.ainvoke(
        {"name": tool.name, "args": args, "id": "call-1", "type": "tool_call"}
    )
    assert isinstance(message, ToolMessage)
    return message
