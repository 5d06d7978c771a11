"""The run's `documents` tool over the store: a store out of reach is tried once more, as the
tool's contract says, and a run without collections gets no tool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.params import RunParams
from app.runs.run_tools import run_tools
from app.settings import Settings
from app.store.base import StoreUnavailable
from app.store.collection_base import PassageHit

HIT = PassageHit(
    passage_id="d1:p2.1",
    collection_id="c1",
    document_id="d1",
    title="Report",
    page=2,
    text="Revenue grew.",
    score=1.0,
)


class Flaky:
    """A store whose search is out of reach `failures` times, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.asked: list[tuple[str | None, Sequence[str]]] = []

    async def search(self, tenant: str | None, ids: Sequence[str], query: str, k: int) -> Any:
        self.asked.append((tenant, ids))
        if self.failures:
            self.failures -= 1
            raise StoreUnavailable("the database is unreachable")
        return [HIT]


def _settings() -> Settings:
    return Settings(_env_file=None, tool_max_retries=2)  # type: ignore[call-arg]


async def test_a_store_out_of_reach_is_tried_again_as_the_runs_tenant() -> None:
    store = Flaky(failures=1)
    params = RunParams(collections=["c1"])
    [tool] = run_tools(store, _settings(), "alice", params)

    _, artifact = await tool.coroutine("revenue")  # type: ignore[attr-defined]

    assert artifact["ok"] is True
    assert artifact["sources"][0]["title"] == "Report, p. 2"
    assert store.asked == [("alice", ("c1",))] * 2


def test_a_run_without_collections_gets_no_documents_tool() -> None:
    assert run_tools(Flaky(0), _settings(), "alice", RunParams()) == []
