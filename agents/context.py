"""The run context: live objects one run needs (models, tools, the event sink, the accountant,
in-flight jobs). Passed to nodes as LangGraph's runtime context; never checkpointed."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from agents import observers
from agents.accounting import Accountant, CallTracker
from agents.anytime import on_first_path
from agents.events import Event, EventBatchSink, EventSink, one_at_a_time
from agents.jobs import JobPool, current_gate
from agents.params import RunParams
from agents.recall import shown_path
from agents.settings import EngineSettings
from agents.state import NodeRecord, Recollection
from agents.steering import CommandSource
from calls import observers as call_observers
from calls.cache import CacheStore, RoleCache
from calls.decoding import DECODING_KEY, Decoding, derive_seed
from calls.memo import IdentityMemo
from calls.models import ModelFactory
from calls.observers import CallObserver
from calls.readings import CallSubscriber
from calls.settings import Role

# Roles that judge: they always decode greedily, a judgement should not be a draw.
_JUDGING_ROLES: frozenset[Role] = frozenset({"evaluator", "voter"})

# Role models with the run's cache setting, shared by every run of the process with the same
# base model and cache store: LangChain's per-model work (structured-output set-up, the
# executor agent) is then done once per process, not once per run. A copy holds no run state
# (callbacks come with each call's config).
_ROLE_MODELS: IdentityMemo[BaseChatModel] = IdentityMemo(64)


def _role_model(base: BaseChatModel, cache: CacheStore | None, role: Role) -> BaseChatModel:
    use: RoleCache | bool = RoleCache(cache, role) if cache is not None else False
    return base.model_copy(update={"cache": use})


@dataclass
class RunContext:
    run_id: str
    task: str
    params: RunParams
    settings: EngineSettings
    models: ModelFactory
    tools: list[BaseTool]
    sink: EventSink
    accountant: Accountant
    # Where the events of one moment go together (one store write); `sink` each in turn if None.
    sink_all: EventBatchSink | None = None
    cache: CacheStore | None = None
    elapsed_before_s: float = 0.0
    known: Recollection | None = None  # what earlier runs on the run's thread found
    commands: CommandSource | None = None  # where steering commands wait for the search
    pool: JobPool = field(init=False)  # in-flight jobs, slotted by `params.max_concurrency`
    started: float = field(default_factory=time.monotonic)
    executor_agent: Any = None  # compiled on first use by the executor
    _models: dict[Role, BaseChatModel] = field(default_factory=dict)
    _sink_all: EventBatchSink = field(init=False)

    def __post_init__(self) -> None:
        # Metrics and traces see every event of the run through the installed observers.
        self._sink_all = observers.observed_all(
            self.sink_all or one_at_a_time(self.sink), self.run_id
        )
        self.sink = observers.observed(self.sink, self.run_id)
        self.pool = JobPool(self.params.max_concurrency)

    def model(self, role: Role) -> BaseChatModel:
        """The role's model for this run: with the cache, or with caching switched off."""
        if role not in self._models:
            base = self.models.for_role(role)
            cache = self.cache if self.params.use_cache else None
            self._models[role] = _ROLE_MODELS.get(
                (base, cache), role, lambda: _role_model(base, cache, role)
            )
        return self._models[role]

    def shown(self, path: Iterable[NodeRecord]) -> list[NodeRecord]:
        """A path as prompts show it: after what the thread's earlier runs found, if any."""
        return shown_path(self.known, path)

    async def emit(self, event: Event) -> None:
        await self.sink(event)

    async def emit_all(self, events: Sequence[Event]) -> None:
        """Events of one moment, in order, stored together."""
        if events:
            await self._sink_all(events)

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

    def decoding(
        self,
        role: Role,
        node_id: str | None,
        *,
        salt: str = "",
        temperature: float | None = None,
    ) -> Decoding:
        """How a call of `role` at `node_id` decodes (calls/decoding.py): greedily for the
        judging roles and on the first path (the nodes `n1`, `n1.1`, …), sampled elsewhere
        (the planner too: a small model's greedy plan tends to echo its prompt), at
        `temperature` where given, else the role's; its seed derived from the run's seed and
        what the call is (role, node, `salt`), never from when it runs."""
        greedy = role in _JUDGING_ROLES or (node_id is not None and on_first_path(node_id))
        if salt:
            greedy = False
        seed = derive_seed(self.params.seed, role, node_id or "-", salt)
        return Decoding(greedy=greedy, seed=seed, temperature=None if greedy else temperature)

    def config(
        self,
        tracker: CallTracker,
        *,
        node_id: str | None = None,
        salt: str = "",
        temperature: float | None = None,
    ) -> RunnableConfig:
        """Config for one model/agent call: its one call observer, which tells the process's
        subscribers (metrics, traces), the job's stop gate and, last, the tracker; the ids in
        the metadata for tracing, and the call's decoding (`decoding`; `salt` names a call
        that samples even on the first path, such as a proposal of alternatives)."""
        call_observers.bind_ids(self.run_id, node_id)  # log records of this call carry the ids
        # Inline handlers run in this order. The job's stop gate (which LangChain would add
        # anyway) goes first, so a step it refuses is never counted or announced; the tracker
        # is told last, so the observers see a call's start even when the budget refuses it.
        gate = current_gate()
        subscribers: list[CallSubscriber] = call_observers.installed()
        first: list[BaseCallbackHandler] = []
        if gate is not None:
            subscribers.append(gate)
            first.append(gate)
        observer = CallObserver(self.run_id, node_id, tracker.role, subscribers, owner=tracker)
        decoding = self.decoding(tracker.role, node_id, salt=salt, temperature=temperature)
        return RunnableConfig(
            callbacks=[*first, observer],
            metadata={
                "run_id": self.run_id,
                "node_id": node_id,
                "role": tracker.role,
                DECODING_KEY: decoding.as_metadata(),
            },
        )
