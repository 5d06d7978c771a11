"""When a run's rounds read its steering commands from the store (app/runs/commands.py): the
first round, after a signal for the run (or for any run), and at the latest a backstop after
the last read; otherwise a round costs no read."""

from __future__ import annotations

from agents.steering import SteerCommand
from app.runs.commands import KEPT_RUNS, SignalledCommands


class Store:
    """Commands by run, and the reads made."""

    def __init__(self) -> None:
        self.commands: dict[str, list[SteerCommand]] = {}
        self.reads: list[tuple[str, int]] = []

    async def after(self, run_id: str, after: int) -> list[SteerCommand]:
        self.reads.append((run_id, after))
        return [c for c in self.commands.get(run_id, []) if c.id > after]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _prune(command_id: int) -> SteerCommand:
    return SteerCommand(id=command_id, command="prune", node_id="n1")


async def test_a_round_reads_first_then_only_when_signalled_or_past_the_backstop() -> None:
    store, clock = Store(), Clock()
    source = SignalledCommands(store, backstop_s=1.0, clock=clock)

    first = await source.commands_after("r1", 0)  # the first round here reads
    clock.now += 0.3
    store.commands["r1"] = [_prune(1)]  # stored, but no signal reached this process yet
    quiet = await source.commands_after("r1", 0)
    source.sent("r1")
    signalled = await source.commands_after("r1", 0)
    clock.now += 0.3
    after_it = await source.commands_after("r1", 1)
    store.commands["r1"].append(_prune(2))  # its signal was lost
    clock.now += 1.0
    backstop = await source.commands_after("r1", 1)

    assert first == []
    assert quiet == []
    assert after_it == []
    assert [c.id for c in signalled] == [1]
    assert [c.id for c in backstop] == [2]
    assert store.reads == [("r1", 0), ("r1", 0), ("r1", 1)]


async def test_a_signal_for_some_run_makes_every_run_read_once() -> None:
    store, clock = Store(), Clock()
    source = SignalledCommands(store, backstop_s=1.0, clock=clock)
    for run in ("r1", "r2"):
        await source.commands_after(run, 0)

    clock.now += 0.1
    source.sent(None)  # another process committed: maybe a command, to any run
    clock.now += 0.1
    again = [await source.commands_after(run, 0) for run in ("r1", "r2", "r1", "r2")]

    assert again == [[], [], [], []]
    assert store.reads == [("r1", 0), ("r2", 0), ("r1", 0), ("r2", 0)]


async def test_a_signal_for_another_run_costs_this_one_no_read() -> None:
    store, clock = Store(), Clock()
    source = SignalledCommands(store, backstop_s=1.0, clock=clock)
    await source.commands_after("r1", 0)

    source.sent("r2")  # a run of another process
    await source.commands_after("r1", 0)

    assert store.reads == [("r1", 0)]


async def test_the_runs_remembered_are_bounded_and_the_forgotten_read_again() -> None:
    store, clock = Store(), Clock()
    source = SignalledCommands(store, backstop_s=1.0, clock=clock)
    for n in range(KEPT_RUNS + 1):
        await source.commands_after(f"r{n}", 0)
    for n in range(KEPT_RUNS + 1):
        source.sent(f"other{n}")  # flags of runs never read here are dropped past the bound

    await source.commands_after("r0", 0)  # forgotten: read as a first round (r1 goes)
    await source.commands_after("r2", 0)  # still remembered, no signal: no read

    assert store.reads.count(("r0", 0)) == 2
    assert store.reads.count(("r2", 0)) == 1
