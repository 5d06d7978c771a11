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

A new run's first two checkpoints are not saved on their own either: LangGraph's step -1 (the
request as given) and step 0 (the request applied to the state) come before any node ran, and
what they hold is what the run's record holds (task, parameters); a run with no checkpoint
starts from its record (app/runs/execution.py). Their channels are saved with the first
checkpoint after them, the plan's, as if that checkpoint had changed them. A run stopped before
its plan was checkpointed starts again from its record, as a run stopped during its plan always
did (the plan had not landed); no node that completed runs again. The plan's checkpoint names
the step-0 one as its parent, which is never saved: nothing here walks a run's history.
"""

from __future__ import annotations

from collections import OrderedDict
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


# Runs whose first checkpoints are held back at once, at most (a run that stops before its
# plan's checkpoint and is never deleted leaves its entry behind: a few channel names).
HELD_INPUTS = 4096


class GuardedWrites(BaseCheckpointSaver[str]):
    """A checkpointer mixin (put before the saver it guards) whose `aput` and `aput_writes`
    run through `_guard`; a step's state writes are left to its checkpoint, a new run's first
    checkpoints to its plan's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # thread id -> the channels its checkpoints held back changed (module docstring)
        self._held_inputs: OrderedDict[str, set[str]] = OrderedDict()

    async def _guard(self, config: RunnableConfig, write: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        held = self._held_inputs.pop(thread_id, None)
        new_run = metadata.get("source") == "input" and not configurable.get("checkpoint_id")
        if new_run or (held is not None and metadata.get("step") == 0):
            self._held_inputs[thread_id] = (held or set()) | set(new_versions)
            while len(self._held_inputs) > HELD_INPUTS:
                self._held_inputs.popitem(last=False)
            return RunnableConfig(
                configurable={
                    "thread_id": thread_id,
                    "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                    "checkpoint_id": checkpoint["id"],
                }
            )
        if held is not None:
            current = checkpoint["channel_versions"]
            new_versions = {
                **{channel: current[channel] for channel in held if channel in current},
                **new_versions,
            }
        put = super().aput
        return await self._guard(config, lambda: put(config, checkpoint, metadata, new_versions))

    async def acopy(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        """Save `checkpoint` whatever its source, every channel's version new to this store
        (it holds none of them yet): checkpoints copied from another store (`lats migrate`)
        are kept as they were."""
        put = super().aput
        versions = checkpoint["channel_versions"]
        return await self._guard(config, lambda: put(config, checkpoint, metadata, versions))

    async def adelete_thread(self, thread_id: str) -> None:
        self._held_inputs.pop(thread_id, None)
        await super().adelete_thread(thread_id)

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
