"""What a run makes once per process instead of once per run or per call: role models
and their structured-output runnables."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agents.accounting import Accountant, CallTracker
from agents.context import RunContext
from agents.events import discard
from agents.params import RunParams
from app.settings import Settings
from calls.cache import MemoryStore, RoleCache
from calls.memo import IdentityMemo
from calls.observers import CallObserver
from calls.structured import structured
from testkit.fakes import FakeModels


class _Answer(BaseModel):
    text: str


def _script(call: Any) -> str:
    return "{}"


def _context(models: FakeModels, cache: MemoryStore, **params: Any) -> RunContext:
    run_params = RunParams(**params)
    return RunContext(
        run_id="r",
        task="t",
        params=run_params,
        settings=Settings(_env_file=None, tools=[]),
        models=models,
        tools=[],
        sink=discard,
        accountant=Accountant(run_params),
        cache=cache,
    )


def test_the_memo_makes_a_value_once_per_identity_and_drops_the_oldest() -> None:
    memo: IdentityMemo[list[int]] = IdentityMemo(2)
    a, b, c = object(), object(), object()
    made = memo.get((a,), 1, lambda: [1])

    assert memo.get((a,), 1, lambda: [2]) is made
    assert memo.get((a,), 2, lambda: [3]) == [3]  # another extra: another value
    memo.get((b,), 1, lambda: [4])  # over the size: (a, 1) was used least recently
    memo.get((c,), 1, lambda: [5])
    assert memo.get((a,), 1, lambda: [6]) == [6]
    assert len(memo) == 2


def test_runs_with_the_same_models_and_cache_share_each_role_model() -> None:
    models, cache = FakeModels(_script), MemoryStore()
    role_model = models.for_role("planner")
    models.for_role = lambda role: role_model  # type: ignore[method-assign]

    first = _context(models, cache).model("planner")
    second = _context(models, cache).model("planner")
    uncached = _context(models, cache, use_cache=False).model("planner")

    assert first is second
    assert uncached is not first
    assert uncached.cache is False
    assert isinstance(first.cache, RoleCache)


def test_a_structured_runnable_is_made_once_per_model_and_schema() -> None:
    model = FakeModels(_script).for_role("planner")
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}

    assert structured(model, _Answer) is structured(model, _Answer)
    assert structured(model, schema) is structured(model, dict(schema))  # equal content
    assert structured(model, schema) is not structured(model, _Answer)
    other = FakeModels(_script).for_role("planner")
    assert structured(other, _Answer) is not structured(model, _Answer)


def test_the_call_observer_runs_inline_and_gets_model_and_tool_events_only() -> None:
    params = RunParams()
    tracker = CallTracker(
        accountant=Accountant(params), role="planner", run_id="r", node_id=None, emit=discard
    )
    observer = CallObserver("r", None, "planner", owner=tracker)

    assert observer.run_inline
    assert observer.ignore_chain
    assert not observer.ignore_chat_model
    assert not observer.ignore_llm
    assert not observer.ignore_agent  # LangChain's condition for tool events
