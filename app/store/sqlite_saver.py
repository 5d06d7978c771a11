"""The SQLite checkpointer under the full-disk rules of the embedded store (app/store/disk.py):
while the disk is full a checkpoint write is refused with `StorageFull` (so the run ends with
`storage_full` instead of eating the reserve kept for the runs' ends), and a write that finds
the disk full puts the store in that state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from app.store.disk import DiskSpace
from app.store.saver_guard import GuardedWrites

T = TypeVar("T")


class DiskAwareSqliteSaver(GuardedWrites, AsyncSqliteSaver):
    """`AsyncSqliteSaver` whose writes obey the store's `DiskSpace`."""

    def __init__(self, conn: aiosqlite.Connection, disk: DiskSpace) -> None:
        super().__init__(conn)
        self._disk = disk

    async def _guard(self, config: RunnableConfig, write: Callable[[], Awaitable[T]]) -> T:
        return await self._disk.write(write, "grow")
