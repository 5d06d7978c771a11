"""A background task that does one piece of work at a fixed interval until stopped (lease
renewal, the retention sweep). A failed round is reported and the next one tries again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Periodic:
    """Awaits `work` every `every_s` seconds (the first time after one interval); a round
    that raises is handed to `failed`."""

    name: str
    every_s: float
    work: Callable[[], Awaitable[object]]
    failed: Callable[[Exception], None]
    _task: asyncio.Task[None] | None = field(init=False, default=None)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                await self.work()
            except Exception as e:
                self.failed(e)
