"""Keys, callers, the per-key token bucket, allowed hosts and the service settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.settings import EngineSettings
from app.access.limits import KeyLimits, RateLimited
from app.http.hosts import allowed_hosts, host_of
from app.keys.tenancy import ADMIN, SINGLE_USER, Caller, KeyRing
from app.settings import Settings
from calls.ratelimit import TokenBucket
from calls.settings import ModelSettings
from testkit.clock import FakeClock
from tools.settings import ToolSettings


def test_keys_are_named_or_take_their_position_as_name() -> None:
    ring = KeyRing.parse(["alice:s3cret", "bare-key", "bob: other "], admin="root")

    assert ring.names == ["alice", "key2", "bob"]
    assert ring.identify("s3cret") == Caller("alice")
    assert ring.identify("bare-key") == Caller("key2")
    assert ring.identify("other") == Caller("bob")
    assert ring.identify("root") == Caller(ADMIN, admin=True)
    assert ring.identify("alice") is None
    assert ring.identify(None) is None
    assert ring.enabled


@pytest.mark.parametrize(
    "entries",
    [["a:k", "a:k2"], ["a:k", "b:k"], ["a:"], ["admin:k"], ["bad name:k"], ["-x:k"]],
)
def test_clashing_or_malformed_keys_are_refused(entries: list[str]) -> None:
    with pytest.raises(ValueError, match="key"):
        KeyRing.parse(entries)


def test_the_admin_key_may_not_repeat_a_named_key() -> None:
    with pytest.raises(ValueError, match="twice"):
        KeyRing.parse(["a:k"], admin="k")


def test_no_keys_means_no_authentication() -> None:
    assert not KeyRing.parse([]).enabled
    assert KeyRing.parse([], admin="root").enabled


def test_a_caller_sees_its_runs_the_admin_and_the_single_user_all() -> None:
    alice, admin = Caller("alice"), Caller(ADMIN, admin=True)

    assert alice.may_see("alice")
    assert not alice.may_see("bob")
    assert not alice.may_see(None)
    assert admin.may_see("bob")
    assert admin.may_see(None)
    assert SINGLE_USER.may_see("bob")
    assert (alice.limited, admin.limited, SINGLE_USER.limited) == (True, False, False)
    assert SINGLE_USER.label == "local"


def test_the_token_bucket_grants_its_burst_then_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)

    assert [bucket.try_reserve() for _ in range(3)] == [(True, 0.0)] * 3
    assert bucket.try_reserve() == (False, pytest.approx(0.5))
    clock.now += 0.5
    assert bucket.try_reserve() == (True, 0.0)
    clock.now += 100
    assert [bucket.try_reserve() for _ in range(4)][-1][0] is False  # the burst, not beyond


async def test_request_limits_are_per_key_and_spare_the_admin() -> None:
    clock = FakeClock()
    limits = KeyLimits(rps=1.0, burst=1, max_streams=1, max_runs=1, clock=clock)
    alice, bob = Caller("alice"), Caller("bob")

    await limits.request(alice)
    with pytest.raises(RateLimited) as info:
        await limits.request(alice)
    await limits.request(bob)
    for _ in range(5):
        await limits.request(Caller(ADMIN, admin=True))
        await limits.request(SINGLE_USER)

    assert info.value.code == "too_many_requests"
    assert info.value.retry_after_s == 1


async def test_a_stream_slot_is_given_back_once() -> None:
    limits = KeyLimits(rps=1.0, burst=1, max_streams=1, max_runs=1)
    alice = Caller("alice")
    slot = await limits.stream_slot(alice)
    with pytest.raises(RateLimited, match="streams"):
        await limits.stream_slot(alice)

    slot.release()
    slot.release()

    assert limits.open_streams(alice) == 0
    await limits.stream_slot(alice)
    assert limits.open_streams(alice) == 1


def test_host_headers_lose_their_port_and_case() -> None:
    assert host_of("LocalHost:8000") == "localhost"
    assert host_of("[::1]:8000") == "[::1]"
    assert host_of("127.0.0.1") == "127.0.0.1"


def test_allowed_hosts_default_to_local_names_and_the_bind_host_without_keys() -> None:
    local = {"localhost", "127.0.0.1", "[::1]"}

    assert allowed_hosts(None, False, "127.0.0.1") == local
    assert allowed_hosts(None, False, "0.0.0.0") == local
    assert allowed_hosts(None, False, "10.0.0.5") == {*local, "10.0.0.5"}
    assert allowed_hosts(None, False, "fd00::5") == {*local, "[fd00::5]"}
    assert allowed_hosts(None, True, "0.0.0.0") is None
    assert allowed_hosts(["api", "API:8000"], True, None) == {"api"}
    assert allowed_hosts(["*"], False, None) is None


def test_service_settings_read_named_keys_and_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATS_API_KEYS", "alice:k1, k2")
    monkeypatch.setenv("LATS_ADMIN_KEY", "root")
    monkeypatch.setenv("LATS_ALLOWED_HOSTS", "api, localhost")
    monkeypatch.setenv("LATS_MAX_RUNS_PER_KEY", "3")

    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    assert settings.key_ring().names == ["alice", "key2"]
    assert settings.allowed_hosts == ["api", "localhost"]
    assert settings.max_runs_per_key == 3
    core = (ModelSettings, EngineSettings, ToolSettings)  # the core does not know the service's
    assert all("data_dir" not in part.model_fields for part in core)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LATS_API_KEYS", "a:k,a:k2"),
        ("LATS_MAX_RUNS_PER_KEY", "0"),
        ("LATS_KEY_RPS", "0"),
        ("LATS_KEY_MAX_STREAMS", "100000"),
    ],
)
def test_bad_service_settings_fail_clearly(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)

    with pytest.raises(ValidationError):
        Settings(_env_file=None)  # type: ignore[call-arg]
