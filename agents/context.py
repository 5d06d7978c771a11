"""The run context: live objects one run needs (models, tools, the event sink, the accountant,
in-flight jobs). Passed to nodes as LangGraph's runtime context; never checkpointed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from agents import observers
from agents.accounting import Accountant, CallTracker
from agents.cache import CacheStore, RoleCache
from agents.events import Event, EventSink
from agents.jobs import JobPool
from agents.models import ModelFactory
from agents.params import RunParams
from agents.settings import Role, Settings


@dataclass
class RunContext:
    run_id: str
    task: str
    params: RunParams
    settings: Settings
    models: ModelFactory
    tools: list[BaseTool]
    sink: EventSink
    accountant: Accountant
    cache: CacheStore | None = None
    elapsed_before_s: float = 0.0
    pool: JobPool = field(default_factory=JobPool)
    started: float = field(default_factory=time.monotonic)
    executor_agent: Any = None  # compiled on first use by the executor
    _models: dict[Role, BaseChatModel] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Metrics and traces see every event of the run through the installed observers.
        self.sink = observers.observed(self.sink, self.run_id)

    def model(self, role: Role) -> BaseChatModel:
        """The role's model for this run: with the cache, or with caching switched off."""
        if role not in self._models:
            base = self.models.for_role(role)
            use = self.cache is not None and self.params.use_cache
            cache = RoleCache(self.cache, role) if use and self.cache is not None else False
            self._models[role] = base.model_copy(update={"cache": cache})
        return self._models[role]

    async def emit(self, event: Event) -> None:
        await self.sink(event)

    def elapsed_s(self) -> float:
        """Seconds the run has been searching, across resumes."""
        return self.elapsed_before_s + (time.monotonic() - self.started)

    def time_left_s(self) -> float:
        return self.params.deadline_s - self.elapsed_s()

    def tracker(self, role: Role, node_id: str | None) -> CallTracker:
        return CallTracker(
            accountant=self.accountant,
            role=role,
            run_id=self.run_id,
            node_id=node_id,
            emit=self.sink,
        )

    def config(self, tracker: CallTracker, *, node_id: str | None = None) -> RunnableConfig:
        """Config for one model/agent call: our tracker plus ids in the metadata for tracing."""
        observers.bind_ids(self.run_id, node_id)  # log records of this call carry the ids
        extra = observers.handlers(self.run_id, node_id, tracker.role)
        return RunnableConfig(
            callbacks=[tracker, *extra],
            metadata={"run_id": self.run_id, "node_id": node_id, "role": tracker.role},
        )
