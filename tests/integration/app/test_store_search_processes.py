"""The embedded store's searches in processes of their own (app/store/sqlite/search_processes.py),
real worker processes on a real SQLite file: they find what the store's own connections find, a
document is searchable in them once its write returns, a lost worker is replaced while the
searches go on, a cancelled search gives its worker back, and closing the store, or killing its
process, ends them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.store.collection_base import CollectionRecord
from app.store.sqlite.search_processes import SearchProcesses
from app.store.sqlite.store import SqliteRunStore
from testkit.waiting import wait_for
from tests.support.new_documents import read_file

TEXTS = {
    "comets.md": "# Comets\n\nComets grow tails of dust and gas near the Sun.",
    "cranes.md": "# Cranes\n\nCranes dance in pairs on the marshes each spring.",
    "tides.md": "# Tides\n\nThe Moon's pull raises the tides twice a day.",
}
QUERIES = ["comet tails", "cranes dance", "tides moon", "spring marshes sun", "nothing matches"]


async def _opened(path: Path, processes: int) -> tuple[SqliteRunStore, str]:
    """A store holding `TEXTS` in a collection of Alice's, and that collection's id."""
    store = await SqliteRunStore.open(path, search_processes=processes)
    collection = CollectionRecord(
        id=uuid.uuid4().hex, tenant="alice", name="notes", created_at=datetime.now(UTC)
    )
    await store.collections.create(collection)
    for name, text in TEXTS.items():
        await store.collections.add_document("alice", read_file(collection.id, name, text.encode()))
    return store, collection.id


@contextlib.asynccontextmanager
async def _store(path: Path, processes: int = 2) -> AsyncIterator[tuple[SqliteRunStore, str]]:
    store, collection_id = await _opened(path, processes)
    try:
        yield store, collection_id
    finally:
        await store.close()


def _processes(store: SqliteRunStore) -> SearchProcesses:
    processes = store._db.processes
    assert processes is not None
    return processes


async def _ready(processes: SearchProcesses, count: int) -> None:
    """Once the workers the last search started are ready: `count` of them."""
    await _started(processes)
    assert processes.ready == count


async def _started(processes: SearchProcesses) -> None:
    """Once the workers being started are ready, or have failed to start."""
    await asyncio.wait_for(asyncio.gather(*processes._starts), 60)


async def _found(store: SqliteRunStore, collection_id: str, query: str) -> list[tuple[str, float]]:
    hits = await store.collections.search("alice", [collection_id], query, 5)
    return [(hit.passage_id, hit.score) for hit in hits]


async def test_the_workers_find_what_the_store_s_own_connections_find(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite") as (store, collection_id):
        processes = _processes(store)
        here = [await _found(store, collection_id, q) for q in QUERIES]  # starts the workers
        answered_before = processes.answered
        await _ready(processes, 2)

        there = [await _found(store, collection_id, q) for q in QUERIES]

        assert processes.answered - answered_before == len(QUERIES)
        assert there == here
        assert [len(found) for found in there] == [1, 1, 1, 2, 0]


async def test_a_document_is_found_by_the_workers_once_its_write_returns(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite") as (store, collection_id):
        processes = _processes(store)
        await _found(store, collection_id, "comets")
        await _ready(processes, 2)
        assert await _found(store, collection_id, "volcano") == []

        text = b"# Volcanoes\n\nA volcano vents ash."
        await store.collections.add_document("alice", read_file(collection_id, "v.md", text))
        answered = processes.answered
        found = await _found(store, collection_id, "volcano")

        assert processes.answered == answered + 1
        assert len(found) == 1


async def test_a_lost_worker_is_replaced_and_no_search_fails_meanwhile(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite") as (store, collection_id):
        processes = _processes(store)
        expected = await _found(store, collection_id, "cranes dance")
        await _ready(processes, 2)
        pids = {worker.process.pid for worker in processes._workers}

        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        # Every search answers, from the store's connections until new workers are ready.
        for _ in range(20):
            assert await _found(store, collection_id, "cranes dance") == expected
            await asyncio.sleep(0.01)
        await _found(store, collection_id, "cranes dance")  # starts the replacements
        await _ready(processes, 2)
        answered = processes.answered
        assert await _found(store, collection_id, "cranes dance") == expected

        assert processes.answered == answered + 1
        assert not pids & {worker.process.pid for worker in processes._workers}


async def test_a_cancelled_search_gives_its_worker_back(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite", processes=1) as (store, collection_id):
        processes = _processes(store)
        expected = await _found(store, collection_id, "tides")
        await _ready(processes, 1)

        for delay in (0.0, 0.0005, 0.001, 0.002, 0.005) * 4:
            started = asyncio.create_task(_found(store, collection_id, "tides"))
            await asyncio.sleep(delay)
            started.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await started
        answered = processes.answered
        found = await asyncio.gather(*(_found(store, collection_id, "tides") for _ in range(4)))

        assert found == [expected] * 4
        assert processes.answered == answered + 4  # the one worker answered every one


async def test_closing_the_store_ends_its_workers(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite") as (store, collection_id):
        processes = _processes(store)
        await _found(store, collection_id, "comets")
        await _ready(processes, 2)
        workers = [worker.process for worker in processes._workers]

    assert [worker.returncode for worker in workers] == [0, 0]
    assert processes.ready == 0


async def test_a_store_that_never_searches_starts_no_worker(tmp_path: Path) -> None:
    async with _store(tmp_path / "runs.sqlite") as (store, _):
        await asyncio.sleep(0.2)

        assert _processes(store).ready == 0
        assert not _processes(store)._starts


async def test_a_worker_that_cannot_start_leaves_the_searches_on_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose module cannot be run exits before it is ready: searches answer from the
    store's connections, and no worker is started again for a while."""
    monkeypatch.setattr("app.store.sqlite.search_processes.WORKER", "app.store.no_such_module")
    async with _store(tmp_path / "runs.sqlite") as (store, collection_id):
        processes = _processes(store)
        expected = await _found(store, collection_id, "comets")
        await _started(processes)

        assert await _found(store, collection_id, "comets") == expected
        assert processes.ready == 0
        assert processes.answered == 0
        assert not processes._starts  # none started again within BROKEN_S


async def test_closing_the_store_lets_a_search_in_a_worker_finish(tmp_path: Path) -> None:
    store, collection_id = await _opened(tmp_path / "runs.sqlite", 1)
    processes = _processes(store)
    expected = await _found(store, collection_id, "comets")
    await _ready(processes, 1)
    answered = processes.answered
    search = asyncio.create_task(_found(store, collection_id, "comets"))
    await asyncio.sleep(0)  # the search has its worker

    await asyncio.wait_for(store.close(), 30)

    assert await asyncio.wait_for(search, 30) == expected
    assert processes.answered == answered + 1


_PARENT = """
import asyncio, os, signal, sys
from pathlib import Path
from tests.integration.app.test_store_search_processes import _found, _opened, _ready

async def main():
    store, collection_id = await _opened(Path(sys.argv[1]), 2)
    await _found(store, collection_id, "comets")
    await _ready(store.search_processes, 2)
    print(*(w.process.pid for w in store.search_processes._workers), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_the_workers_end_when_their_process_is_killed(tmp_path: Path) -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _PARENT, str(tmp_path / "runs.sqlite"), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(parent.communicate(), 60)
    pids = [int(pid) for pid in out.split()]
    assert parent.returncode == -signal.SIGKILL
    assert len(pids) == 2

    wait_for(lambda: not any(_alive(pid) for pid in pids), "the workers to exit", 30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
