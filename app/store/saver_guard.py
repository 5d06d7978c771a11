"""Checkpoint writes through one guard: the base of the store's checkpointers that ride out an
outage (`patient_saver.py`) or obey a full disk (`sqlite_saver.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)

T = TypeVar("T")


class GuardedWrites(BaseCheckpointSaver[str]):
    """A checkpointer mixin (put before the saver it guards) whose `aput` and `aput_writes`
    run through `_guard`."""

    async def _guard(self, config: RunnableConfig, write: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        put = super().aput
        return await self._guard(config, lambda: put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        put_writes = super().aput_writes
        await self._guard(config, lambda: put_writes(config, writes, task_id, task_path))
