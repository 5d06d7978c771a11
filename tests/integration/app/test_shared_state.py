"""What the processes of a deployment share through Redis and Postgres: wake-ups, cancel and
steering signals over Redis pub/sub and Postgres NOTIFY, the bound on waiting runs counted in
the store, and the model-call cache. Two instances stand for two processes; real Redis and
PostgreSQL, each test with its own channel prefix or database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration

from agents.params import RunParams
from app.backends.cache_postgres import PostgresCacheStore
from app.backends.cache_redis import RedisCacheStore
from app.backends.signals_redis import RedisSignals
from app.runs.queue import QueueFull
from app.runs.signals import PostgresSignals
from app.service import run_service
from app.settings import Settings
from app.store.base import Lease
from app.store.postgres.store import PostgresRunStore
from calls.cache import RoleCache
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.runs import run_record


@pytest.fixture
def prefix(redis_prefix: str) -> str:
    """A key and channel prefix of this test's own on a reachable Redis (deleted after)."""
    return redis_prefix


class Inbox:
    """The cancels (or steering commands) one process's signals delivered to it."""

    def __init__(self) -> None:
        self.got: list[str | None] = []
        self.arrived = asyncio.Event()

    def __call__(self, run_id: str | None) -> None:
        self.got.append(run_id)
        self.arrived.set()

    async def received(self, run_id: str, within_s: float = 5.0) -> None:
        """Until `run_id`'s signal has arrived (TimeoutError after `within_s`)."""
        async with asyncio.timeout(within_s):
            while run_id not in self.got:
                self.arrived.clear()
                await self.arrived.wait()

    async def check(self) -> None:
        """Nothing is flagged in these tests' store."""


@pytest.fixture
async def inboxes() -> tuple[Inbox, Inbox]:
    return Inbox(), Inbox()


@pytest.fixture
async def pair(
    redis_url: str, prefix: str, inboxes: tuple[Inbox, Inbox]
) -> AsyncIterator[tuple[RedisSignals, RedisSignals]]:
    a, b = RedisSignals(redis_url, prefix), RedisSignals(redis_url, prefix)
    for signals, inbox in zip((a, b), inboxes, strict=True):
        await signals.start(on_cancel=inbox, check_cancels=inbox.check)
    yield a, b
    await a.close()
    await b.close()


async def _set_within(flag: asyncio.Event, seconds: float = 5.0) -> bool:
    try:
        await asyncio.wait_for(flag.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def test_an_event_written_in_one_process_wakes_the_followers_of_the_other(
    pair: tuple[RedisSignals, RedisSignals],
) -> None:
    a, b = pair
    with b.watch("run-1") as news, b.watch("run-2") as other, b.watch("run-3") as last:
        a.event_written("run-1")
        a.event_written("run-3")
        assert await _set_within(news)
        # Wake-ups arrive in the order they were sent: a stray one would precede the last.
        assert await _set_within(last)
        assert not other.is_set()


async def test_a_cancel_published_anywhere_reaches_the_owner_once(
    pair: tuple[RedisSignals, RedisSignals], inboxes: tuple[Inbox, Inbox]
) -> None:
    a, _ = pair
    got_a, got_b = inboxes
    await a.publish_cancel("run-9")
    await a.publish_cancel("run-10")
    # Cancels arrive in the order they were sent: a second delivery would precede the last.
    await got_b.received("run-10")
    assert got_b.got == ["run-9", "run-10"]
    assert got_a.got == ["run-9", "run-10"]  # delivered locally, and its own messages skipped


async def test_a_command_sent_anywhere_reaches_every_process_once(
    redis_url: str, prefix: str
) -> None:
    inbox = Inbox()
    got_a, got_b = Inbox(), Inbox()
    a, b = RedisSignals(redis_url, prefix), RedisSignals(redis_url, prefix)
    for signals, got in ((a, got_a), (b, got_b)):
        await signals.start(on_cancel=inbox, check_cancels=inbox.check, on_command=got)
    try:
        await a.publish_command("run-5")
        await a.publish_command("run-6")
        await got_b.received("run-6")
    finally:
        await a.close()
        await b.close()

    assert got_b.got == ["run-5", "run-6"]
    assert got_a.got == ["run-5", "run-6"]  # delivered locally, its own messages skipped
    assert inbox.got == []  # not a cancel


async def test_a_command_stored_in_postgres_reaches_the_other_process(
    postgres_url: str,
) -> None:
    inbox = Inbox()
    got_a, got_b = Inbox(), Inbox()
    store = await PostgresRunStore.open(postgres_url)
    a, b = PostgresSignals(postgres_url), PostgresSignals(postgres_url)
    for signals, got in ((a, got_a), (b, got_b)):
        await signals.start(on_cancel=inbox, check_cancels=inbox.check, on_command=got)
    record = run_record()
    try:
        await store.runs.create(record, started="{}", lease=Lease("w1", 60))
        stored = await store.commands.add(record.id, "prune", "n1", None, None)
        await a.publish_command(record.id)  # the storing process tells itself at once
        await got_b.received(record.id)
        await got_a.received(record.id)
    finally:
        await a.close()
        await b.close()
        await store.close()

    assert stored == 1
    assert got_b.got == [record.id]  # the NOTIFY sent with the command's commit
    assert got_a.got[0] == record.id


async def test_a_run_stored_for_any_worker_wakes_the_idle_workers(
    pair: tuple[RedisSignals, RedisSignals],
) -> None:
    a, b = pair
    a.announce_queued()
    async with asyncio.timeout(5):  # the wake-up is kept until a worker waits for it
        await b.wait_queued(30)


async def test_the_waiting_bound_counts_the_runs_every_api_process_stored(
    settings: Settings, postgres_url: str
) -> None:
    shared = settings.model_copy(update={"database_url": postgres_url, "max_queued_runs": 2})
    models = FakeModels(Scenario(plan=["A"]))
    async with (
        run_service(shared, models=models, tools=[], worker=False) as first,
        run_service(shared, models=models, tools=[], worker=False) as second,
    ):
        await first.submit("t", RunParams())
        await second.submit("t", RunParams())
        with pytest.raises(QueueFull):
            await first.submit("t", RunParams())
        with pytest.raises(QueueFull):
            await second.submit("t", RunParams())
        assert await first.store.leases.count_unclaimed() == 2


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_a_shared_cache_is_one_cache_for_every_process(
    backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("prefix")
        one, two = RedisCacheStore(url, prefix=prefix), RedisCacheStore(url, prefix=prefix)
    else:
        url = request.getfixturevalue("postgres_url")
        one, two = PostgresCacheStore(url), PostgresCacheStore(url)
    one.put("k", "reply")
    assert two.get("k") == "reply"
    two.put("k", "newer")
    assert one.get("k") == "newer"
    assert one.get("other") is None
    assert two.get("other") is None
    two.clear()
    assert one.get("k") is None
    one.put("k", "again")
    one.clear()
    assert two.get("k") is None
    one.close()
    two.close()


async def test_a_run_reads_and_writes_the_redis_cache_on_its_loop(
    redis_url: str, prefix: str
) -> None:
    one, two = RedisCacheStore(redis_url, prefix=prefix), RedisCacheStore(redis_url, prefix=prefix)
    reply = [ChatGeneration(message=AIMessage(content="from the cache"))]
    await RoleCache(one, "executor").aupdate("prompt", "llm", reply)

    found = await RoleCache(two, "executor").alookup("prompt", "llm")
    assert found is not None
    assert found[0].text == "from the cache"
    assert RoleCache(two, "executor").lookup("prompt", "llm") is not None  # one entry for both
    assert await RoleCache(two, "planner").alookup("prompt", "llm") is None  # roles apart
    for store in (one, two):
        await store.aclose()
        store.close()


async def test_an_unreachable_redis_cache_misses_instead_of_failing() -> None:
    store = RedisCacheStore("redis://127.0.0.1:1/0")
    store.put("k", "reply")
    assert store.get("k") is None
    await store.aput("k", "reply")
    assert await store.aget("k") is None
    await store.aclose()
    store.close()
