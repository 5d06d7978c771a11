"""A scripted model that holds a run at one step until the test lets it go."""

from __future__ import annotations

import asyncio

from testkit.fakes import FakeCall, Reply, step_to_execute
from testkit.scenario import Scenario

# A plan of A whose replan adds B: a run held at B has written its first events.
TREE_TO_B = Scenario(plan=["A"], replans={"A": ["B"]})


class Gate:
    """Runs `scenario`, but holds the executor's calls for `step` until `release` is set;
    `waiting` is set once one is held, `cancelled` counts the held calls cancelled."""

    def __init__(self, scenario: Scenario = TREE_TO_B, step: str = "B") -> None:
        self.scenario = scenario
        self.step = step
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = 0

    async def __call__(self, call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) == self.step:
            self.waiting.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return self.scenario.reply(call)

    async def reached(self, within_s: float = 5.0) -> None:
        """Wait until a call is held at the gate; `TimeoutError` after `within_s`."""
        async with asyncio.timeout(within_s):
            await self.waiting.wait()
