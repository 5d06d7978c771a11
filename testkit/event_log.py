"""An engine event sink that keeps what it is sent, for tests to read back."""

from __future__ import annotations

from typing import Any

from agents.events import Event


class EventLog(list[Event]):
    """An event sink that keeps what it is sent."""

    async def __call__(self, event: Event) -> None:
        self.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.type == kind]
