"""Checkpoint writes through one guard: the base of the store's checkpointers that ride out an
outage (`patient_saver.py`) or obey a full disk (`sqlite_saver.py`).

A step's state writes are saved with the checkpoint that ends the step, not on their own as
well. LangGraph saves a task's writes as soon as the task ends so that, in a step of several
tasks, a task that finished is not run again when another fails. The engine's graph runs one
task per step (agents/graph.py: every node goes on to exactly one), and it checkpoints each step
before the next begins (durability "sync"), so the checkpoint right after a task holds the same
writes. Saving them twice cost a transaction and a serialisation of the whole tree per round.
What is kept: a round's results land in one transaction, with its checkpoint; a round that ends
without one (the process dies, or the database stays away past the outage wait) runs again on
resume, as a round whose writes had not yet landed always did, and the rounds before it do not.
Writes to LangGraph's reserved channels (an error, an interrupt, a resume value: `__…__`) are
saved at once as before, since no checkpoint follows them.
"""

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
    run through `_guard`; a step's state writes are left to its checkpoint."""

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
        if all(not channel.startswith("__") for channel, _ in writes):
            return  # the checkpoint that ends this step carries them (module docstring)
        await self._save_writes(config, writes, task_id, task_path)

    async def acopy_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> None:
        """Save `writes` whatever their channels: pending writes copied from another store
        (`lats migrate`) are kept as they were."""
        await self._save_writes(config, writes, task_id, "")

    async def _save_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, path: str
    ) -> None:
        put_writes = super().aput_writes
        await self._guard(config, lambda: put_writes(config, writes, task_id, path))
