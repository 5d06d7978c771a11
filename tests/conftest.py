"""Fixtures shared by every tier."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from agents.engine import Engine
from agents.events import Event
from agents.settings import Settings
from tests.support.fakes import FakeModels, Script


@pytest.fixture
def settings(tmp_path: Any) -> Settings:
    """Settings that ignore the environment and never back off for real."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        model="google_genai:gemini-2.5-flash",
        model_retry_base_delay_s=0.0,
        data_dir=tmp_path / "data",
    )


class EventLog(list[Event]):
    """An event sink that keeps what it is sent."""

    async def __call__(self, event: Event) -> None:
        self.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.type == kind]


@pytest.fixture
def events() -> EventLog:
    return EventLog()


EngineMaker = Callable[..., tuple[Engine, FakeModels]]


@pytest.fixture
def make_engine(settings: Settings) -> EngineMaker:
    def make(
        script: Script, tools: Sequence[BaseTool] = (), checkpointer: Any = None
    ) -> tuple[Engine, FakeModels]:
        models = FakeModels(script)
        engine = Engine(settings=settings, models=models, tools=tools, checkpointer=checkpointer)
        return engine, models

    return make
