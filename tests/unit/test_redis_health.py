"""The Redis outage policy's state machine on a clock the tests move: down on the first failure,
calls refused at once while down, one probe after the interval, doubling to the cap, one log
line down and one up."""

from __future__ import annotations

import logging

import pytest

from app.backends.redis_health import Health, IllegalTransition, RedisHealth, Ticket


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    def __init__(self) -> None:
        self.changes: list[str] = []

    def went_down(self, kind: str) -> None:
        self.changes.append(f"down:{kind}")

    def came_up(self) -> None:
        self.changes.append("up")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def health(clock: Clock, recorder: Recorder) -> RedisHealth:
    return RedisHealth("test", clock=clock, first_down_s=2.0, max_down_s=30.0, observer=recorder)


def _admitted(health: RedisHealth) -> Ticket:
    ticket = health.admit()
    assert ticket is not None
    return ticket


def _fail_probe(health: RedisHealth, clock: Clock) -> None:
    clock.now += health.retry_in()
    ticket = _admitted(health)
    assert ticket.probe
    health.failed(ticket, "refused")


def test_calls_go_through_while_up(health: RedisHealth) -> None:
    tickets = [_admitted(health) for _ in range(3)]

    assert not any(ticket.probe for ticket in tickets)
    assert health.state is Health.UP
    assert health.retry_in() == 0.0


def test_a_failure_marks_down_for_the_first_interval(
    health: RedisHealth, clock: Clock, recorder: Recorder
) -> None:
    health.failed(_admitted(health), "timeout")

    assert health.state is Health.DOWN
    assert health.retry_in() == 2.0
    assert health.outages == 1
    assert recorder.changes == ["down:timeout"]


def test_calls_while_down_are_refused_at_once(health: RedisHealth, clock: Clock) -> None:
    health.failed(_admitted(health), "refused")
    clock.now += 1.9

    assert [health.admit() for _ in range(3)] == [None, None, None]
    assert health.refused == 3


def test_concurrent_failures_of_one_outage_count_once(
    health: RedisHealth, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="app.backends.redis_health")
    in_flight = [_admitted(health) for _ in range(3)]

    for ticket in in_flight:
        health.failed(ticket, "timeout")

    assert health.outages == 1
    assert recorder.changes == ["down:timeout"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "unreachable (timeout)" in warnings[0].getMessage()


def test_the_first_call_after_the_interval_probes_and_others_wait_for_it(
    health: RedisHealth, clock: Clock
) -> None:
    health.failed(_admitted(health), "refused")
    clock.now += 2.0

    probe = _admitted(health)

    assert probe.probe
    assert health.state is Health.PROBING
    assert health.admit() is None  # one probe at a time


def test_a_successful_probe_marks_up_with_one_info_line(
    health: RedisHealth, clock: Clock, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="app.backends.redis_health")
    health.failed(_admitted(health), "refused")
    clock.now += 2.0

    health.succeeded(_admitted(health))
    health.succeeded(_admitted(health))

    assert health.state is Health.UP
    assert recorder.changes == ["down:refused", "up"]
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1
    assert "reachable again" in infos[0].getMessage()


def test_failed_probes_double_the_interval_up_to_the_cap(
    health: RedisHealth, clock: Clock, recorder: Recorder
) -> None:
    health.failed(_admitted(health), "refused")
    intervals = [health.down_for_s]
    for _ in range(6):
        _fail_probe(health, clock)
        intervals.append(health.down_for_s)

    assert intervals == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert health.outages == 1  # one outage, however many probes failed
    assert recorder.changes == ["down:refused"]


def test_a_new_outage_starts_again_from_the_first_interval(
    health: RedisHealth, clock: Clock
) -> None:
    health.failed(_admitted(health), "refused")
    _fail_probe(health, clock)
    clock.now += health.retry_in()
    health.succeeded(_admitted(health))

    health.failed(_admitted(health), "reset")

    assert health.down_for_s == 2.0
    assert health.outages == 2


def test_a_late_answer_from_before_the_outage_settles_nothing(
    health: RedisHealth, clock: Clock
) -> None:
    early, late = _admitted(health), _admitted(health)
    health.failed(early, "timeout")

    health.succeeded(late)

    assert health.state is Health.DOWN
    assert health.retry_in() == 2.0


def test_an_abandoned_probe_lets_the_next_call_probe(health: RedisHealth, clock: Clock) -> None:
    health.failed(_admitted(health), "refused")
    clock.now += 2.0
    probe = _admitted(health)

    health.abandoned(probe)

    assert health.state is Health.DOWN
    assert _admitted(health).probe


def test_a_failure_of_a_held_connection_marks_down(health: RedisHealth, recorder: Recorder) -> None:
    health.lost("reset")
    health.lost("reset")

    assert health.state is Health.DOWN
    assert recorder.changes == ["down:reset"]


def test_settling_a_probe_that_is_not_out_raises(health: RedisHealth) -> None:
    with pytest.raises(IllegalTransition):
        health.succeeded(Ticket(probe=True, outage=0))
