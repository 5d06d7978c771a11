"""Each user of Redis through a Redis that is down: a REFUSED port (nothing listens) and a HUNG
server (accepts, never replies). Each degrades as docs/deploy.md says within about the command
timeout; the outage policy marks Redis down once (one WARNING line, the outage counter +1, the
up gauge 0); calls while down reach no server; once a redis-server of this test's own listens on
that port, the next probe after the interval recovers (gauge 1, one INFO line). The policy's
clock is the test's, so the interval passes without sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import pytest
from prometheus_client import REGISTRY

from app.access.limits import KeyLimits, RateLimited
from app.backends.cache_redis import RedisCacheStore
from app.backends.key_limits_redis import RedisKeyLimits
from app.backends.model_limiter_redis import RedisLimiter
from app.backends.redis import (
    COMMAND_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    POLL_S,
    RedisUnavailable,
    SharedRedis,
    address,
    shared_redis,
)
from app.backends.redis_health import Health, RedisHealth
from app.backends.signals_redis import RedisSignals
from app.backends.tool_limiter_redis import RedisLimiterRegistry
from app.keys.tenancy import Caller
from app.observability.metrics import PrometheusHealth
from testkit.clock import FakeClock
from testkit.redis_server import free_port, start_redis_server
from tests.conftest import REDIS_URL

T = TypeVar("T")
Mode = Literal["refused", "hung"]
# A failing call costs at most connecting plus one reply, with a margin for a loaded machine.
WITHIN_S = CONNECT_TIMEOUT_S + COMMAND_TIMEOUT_S + 0.5
AT_ONCE_S = 0.05

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server")


class HungServer:
    """Accepts connections and reads what is sent, never answering; counts both."""

    def __init__(self, port: int) -> None:
        self._listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._listener.settimeout(0.1)
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self.connections = 0
        self.received = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                conn, _ = self._listener.accept()
                self.connections += 1
                self._open.append(conn)
                threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(4096):
                self.received += len(data)

    def touched(self) -> tuple[int, int]:
        return self.connections, self.received

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


@dataclass
class Outage:
    """A Redis at `url` that is down in one way, the adapter and policy of the test's process,
    and how to watch and end the outage."""

    mode: Mode
    url: str
    port: int
    clock: FakeClock
    redis: SharedRedis
    tmp: Path
    hung: HungServer | None = None
    server: subprocess.Popen[bytes] | None = None

    def watch(self) -> HungServer:
        """A server on the port counting who reaches it (the hung one itself; for a refused
        port, one started now, so a call that still tried would be seen)."""
        if self.hung is None:
            self.hung = HungServer(self.port)
        return self.hung

    @contextlib.contextmanager
    def unreached(self) -> Iterator[None]:
        """Asserts that nothing done inside reaches a server on the port (`watch`)."""
        watch = self.watch()
        touched = watch.touched()
        yield
        assert watch.touched() == touched

    def recover(self) -> None:
        """A real Redis on the port, and the rest interval over."""
        if self.hung is not None:
            self.hung.stop()
            self.hung = None
        self.server = start_redis_server(self.port, self.tmp)
        self.clock.now += self.redis.health.retry_in() + 0.001

    def strike(self) -> None:
        """The real Redis gone again, in this outage's way."""
        if self.server is not None:
            self.server.kill()
            self.server.wait(10)
            self.server = None
        if self.mode == "hung":
            self.hung = HungServer(self.port)

    def close(self) -> None:
        if self.hung is not None:
            self.hung.stop()
        if self.server is not None:
            self.server.terminate()
            self.server.wait(10)


@pytest.fixture(params=["refused", "hung"])
def outage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Outage]:
    mode: Mode = request.param
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    clock = FakeClock()
    name = address(url)
    redis = SharedRedis(url, health=RedisHealth(name, clock=clock, observer=PrometheusHealth(name)))
    state = Outage(mode, url, port, clock, redis, tmp_path)
    if mode == "hung":
        state.hung = HungServer(port)
    yield state
    state.close()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="app.backends.redis_health")
    return caplog


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "app.backends.redis_health" and r.levelno == level
    ]


def _outages(name: str) -> float:
    return sum(
        REGISTRY.get_sample_value("plantree_redis_outages_total", {"redis": name, "kind": kind})
        or 0.0
        for kind in ("refused", "reset", "timeout", "connection")
    )


def _up(name: str) -> float | None:
    return REGISTRY.get_sample_value("plantree_redis_up", {"redis": name})


async def _timed(call: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    started = time.monotonic()
    result = await call()
    return result, time.monotonic() - started


class Check:
    """Around one user's degraded calls: the outage was marked once, with the right kind."""

    def __init__(self, outage: Outage, caplog: pytest.LogCaptureFixture) -> None:
        self.outage = outage
        self.caplog = caplog
        self.name = outage.redis.name
        self.outages_before = _outages(self.name)

    def marked_down_once(self) -> None:
        kind = "timeout" if self.outage.mode == "hung" else "refused"
        assert self.outage.redis.health.state is Health.DOWN
        assert _outages(self.name) == self.outages_before + 1
        assert _up(self.name) == 0.0
        [warning] = _lines(self.caplog, logging.WARNING)
        assert f"unreachable ({kind})" in warning

    def recovered(self) -> None:
        assert self.outage.redis.health.state is Health.UP
        assert _up(self.name) == 1.0
        [info] = _lines(self.caplog, logging.INFO)
        assert "reachable again" in info
        assert _outages(self.name) == self.outages_before + 1


# -- the model cache: a miss, the write skipped -------------------------------------------------


async def test_the_model_cache_misses_while_redis_is_down_and_recovers(
    outage: Outage, logs: pytest.LogCaptureFixture
) -> None:
    check = Check(outage, logs)
    store = RedisCacheStore(outage.url, redis=outage.redis)

    found, took = await _timed(lambda: store.aget("k"))
    assert found is None
    assert took < WITHIN_S
    check.marked_down_once()

    with outage.unreached():
        for _ in range(3):
            _, took = await _timed(lambda: store.aput("k", "reply"))
            assert took < AT_ONCE_S
            assert await store.aget("k") is None
            assert store.get("k") is None  # the synchronous path shares the one policy

    outage.recover()
    await store.aput("k", "reply")
    assert await store.aget("k") == "reply"
    assert store.get("k") == "reply"
    check.recovered()
    await store.aclose()
    store.close()


# -- the model rate: the in-process stand-in limiter ---------------------------------------------


async def test_the_model_rate_falls_back_to_the_process_while_redis_is_down_and_recovers(
    outage: Outage, logs: pytest.LogCaptureFixture
) -> None:
    check = Check(outage, logs)
    limiter = RedisLimiter(
        outage.url, "m", ceiling=None, burst=1, max_in_flight=2, redis=outage.redis
    )

    permit, took = await _timed(limiter.acquire)
    assert took < WITHIN_S
    assert permit.fallback
    check.marked_down_once()

    with outage.unreached():
        for _ in range(3):
            permit = await limiter.acquire()
            assert permit.fallback
            await limiter.release(permit, "ok")

    outage.recover()
    permit = await limiter.acquire()
    assert not permit.fallback
    await limiter.release(permit, "ok")
    assert await limiter.shared_state()
    check.recovered()
    await limiter.aclose()


async def test_a_model_call_in_flight_when_redis_goes_down_ends_at_once_and_the_next_falls_back(
    outage: Outage,
) -> None:
    outage.recover()
    limiter = RedisLimiter(
        outage.url, "m", ceiling=None, burst=1, max_in_flight=1, hold_s=0.5, redis=outage.redis
    )
    permit = await limiter.acquire()
    assert not permit.fallback  # a place in the shared cap
    outage.strike()

    _, took = await _timed(lambda: limiter.release(permit, "ok"))
    assert took < WITHIN_S  # its answer is not written back; its place returns with its hold
    assert limiter.stats().in_flight == 0
    assert outage.redis.health.state is Health.DOWN  # the failed write marked the outage
    fallback, took = await _timed(limiter.acquire)
    assert fallback.fallback  # the process's own cap, at once
    assert took < AT_ONCE_S
    await limiter.release(fallback, "ok")
    await limiter.aclose()


# -- the tool rate: the process-local limiter --------------------------------------------------


async def test_the_tool_rate_is_spaced_in_the_process_while_redis_is_down_and_recovers(
    outage: Outage, logs: pytest.LogCaptureFixture
) -> None:
    check = Check(outage, logs)
    registry = RedisLimiterRegistry(
        outage.url, prefix=f"t-{uuid.uuid4().hex[:8]}", redis=outage.redis
    )
    limiter = registry.limiter("web_search", 0.01)

    slot, took = await _timed(limiter.reserve)
    assert took < WITHIN_S
    assert slot is not None
    assert slot.fallback
    check.marked_down_once()

    with outage.unreached():
        for _ in range(3):
            slot = await limiter.reserve()
            assert slot is not None
            assert slot.fallback

    outage.recover()
    slot = await limiter.reserve()
    assert slot is not None
    assert not slot.fallback
    check.recovered()
    await registry.aclose()


# -- signals: the store stays the record; the listener comes back with the policy -----------


@contextlib.asynccontextmanager
async def _started(
    signals: RedisSignals, on_cancel: Callable[[str], object] = lambda _: None
) -> AsyncIterator[RedisSignals]:
    async def no_flags() -> None:
        """No cancel is flagged in these tests' store."""

    await signals.start(on_cancel=on_cancel, check_cancels=no_flags)
    try:
        yield signals
    finally:
        await signals.close()


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def test_signals_work_in_the_process_while_redis_is_down_and_resubscribe(
    outage: Outage, logs: pytest.LogCaptureFixture
) -> None:
    check = Check(outage, logs)
    prefix = f"s-{uuid.uuid4().hex[:8]}"
    signals = RedisSignals(outage.url, prefix, redis=outage.redis)
    cancelled: list[str] = []

    started = time.monotonic()
    async with _started(signals, cancelled.append):
        assert time.monotonic() - started < WITHIN_S
        assert not signals.subscribed
        check.marked_down_once()

        with outage.unreached():
            with signals.watch("run-1") as news:
                news.clear()
                signals.event_written("run-1")  # the publish is dropped; the local follower wakes
                assert news.is_set()
            await signals.publish_cancel("run-2")
            assert cancelled == ["run-2"]
            await asyncio.sleep(RELISTEN_WAIT_S)  # the listener looks at the policy meanwhile

        outage.recover()
        assert await _until(lambda: signals.subscribed)
        other = RedisSignals(outage.url, prefix, redis=shared_redis(outage.url))
        async with _started(other):
            await other.publish_cancel("run-3")
            assert await _until(lambda: "run-3" in cancelled)
        check.recovered()


RELISTEN_WAIT_S = 1.2


# -- one policy for every user ----------------------------------------------------------------


async def test_one_outage_seen_by_the_cache_sends_every_user_to_its_fallback_at_once(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    cache = RedisCacheStore(url)
    limiter = RedisLimiter(url, "m", ceiling=None, burst=1, max_in_flight=1)
    tools = RedisLimiterRegistry(url).limiter("web_search", 0.01)
    assert shared_redis(url) is shared_redis(url)

    assert await cache.aget("k") is None
    _, took = await _timed(limiter.acquire)
    slot, took_too = await _timed(tools.reserve)

    assert max(took, took_too) < AT_ONCE_S
    assert slot is not None
    assert slot.fallback
    assert len(_lines(logs, logging.WARNING)) == 1


# -- a subscription: quiet is fine, a Redis that stops answering later is noticed -----------------


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    server = start_redis_server(port, tmp_path)
    yield f"redis://127.0.0.1:{port}/0", server
    server.send_signal(signal.SIGCONT)
    server.terminate()
    server.wait(10)


async def test_a_quiet_subscription_stays_up_and_one_that_hangs_later_is_noticed(
    own_server: tuple[str, subprocess.Popen[bytes]],
    logs: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("app.backends.redis.KEEPALIVE_S", 1.5)
    url, server = own_server
    redis = SharedRedis(url, health=RedisHealth(url, clock=FakeClock()))
    received: list[tuple[str, str]] = []

    async def listen() -> None:
        async with redis.subscription(["ch"]) as subscription:
            async for message in subscription.messages():
                received.append(message)

    listening = asyncio.create_task(listen())
    await asyncio.sleep(3.5)  # idle reads and a ping
    assert redis.health.state is Health.UP
    await redis.call(lambda client: client.publish("ch", "hello"))
    assert await _until(lambda: received == [("ch", "hello")])

    server.send_signal(signal.SIGSTOP)  # the server stops answering, connections stay open
    started = time.monotonic()
    with pytest.raises(RedisUnavailable):
        await asyncio.wait_for(listening, 10)

    assert time.monotonic() - started < 1.5 + POLL_S + COMMAND_TIMEOUT_S + 1.0
    assert not redis.health.up
    [warning] = _lines(logs, logging.WARNING)
    assert "unreachable (timeout)" in warning


async def test_an_error_redis_answers_with_is_not_an_outage(redis_prefix: str) -> None:
    from redis.exceptions import ResponseError

    redis = SharedRedis(REDIS_URL, health=RedisHealth(REDIS_URL, clock=FakeClock()))

    with pytest.raises(ResponseError):
        await redis.script("return redis.call('NO-SUCH-COMMAND')", [f"{redis_prefix}:k"], [])

    assert redis.health.up
    assert redis.health.outages == 0
    await redis.aclose()


def test_a_redis_is_named_without_its_credentials() -> None:
    assert address("redis://:secret@cache.internal:6380/2") == "cache.internal:6380/2"
    assert address("redis://127.0.0.1") == "127.0.0.1:6379/0"


# -- per-key request and stream limits: counted in the process ----------------------------------


async def test_key_limits_count_in_the_process_while_redis_is_down_and_recover(
    outage: Outage, logs: pytest.LogCaptureFixture
) -> None:
    check = Check(outage, logs)
    shared = RedisKeyLimits(outage.redis, prefix=f"t-{uuid.uuid4().hex[:8]}")
    limits = KeyLimits(rps=0.01, burst=2, max_streams=1, max_runs=5, shared=shared)
    alice = Caller("alice")

    _, took = await _timed(lambda: limits.request(alice))
    assert took < WITHIN_S
    check.marked_down_once()

    with outage.unreached():
        await limits.request(alice)  # the process's bucket: its burst of 2
        with pytest.raises(RateLimited):
            await limits.request(alice)
        slot = await limits.stream_slot(alice)
        with pytest.raises(RateLimited):
            await limits.stream_slot(alice)
        assert limits.open_streams(alice) == 1  # counted here
        slot.release()

    outage.recover()
    await limits.request(alice)  # Redis's own count starts afresh
    shared_slot = await limits.stream_slot(alice)
    check.recovered()
    assert limits.open_streams(alice) == 0  # held in Redis, not here
    shared_slot.release()
    await shared.aclose()
