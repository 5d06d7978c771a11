"""A declarative tree scenario for scripted runs: the plan, what the replanner proposes after
each step, which steps fail, and how the vote picks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from testkit.fakes import (
    FakeCall,
    Reply,
    last_done_step,
    step_to_execute,
    step_to_replace,
    tool_call,
)


def replan_reply(steps: Sequence[str], *, complete: bool = False) -> dict[str, Any]:
    """A replanner's reply in the shape it is asked for: `steps` proposed in order, each
    viable and judged 0.5."""
    return {
        "complete": complete,
        "candidates": [
            {"step": s, "score": 0.5, "viable": True, "reason": "scripted"} for s in steps
        ],
    }


@dataclass
class Scenario:
    """Replies by role. `replans[step]` lists the proposals after `step` ([] = path complete;
    a step with no entry also completes its path). `fail` names steps whose executor raises.
    `checks[step]` has the replanner say "complete" after `step` and still propose those
    steps. `tools[step]` makes the executor call that tool (name, args) once before answering.
    The replanner judges each candidate it proposes by `priors` (default 0.5; `not_viable`
    ones are not viable); the evaluator scores a done step's progress by `values` (default
    0.5). `delays[role]` (seconds) makes that role's calls take time, e.g. to have calls in
    flight when the search stops; `delays[step]` does the same for the calls about one step
    (the executor's running it, or any call whose path ends with it)."""

    plan: list[str]
    replans: dict[str, list[str]] = field(default_factory=dict)
    checks: dict[str, list[str]] = field(default_factory=dict)
    """Steps after which the replanner says "complete" and still proposes these steps."""
    fail: set[str] = field(default_factory=set)
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    priors: dict[str, float] = field(default_factory=dict)
    not_viable: set[str] = field(default_factory=set)
    values: dict[str, float] = field(default_factory=dict)
    vote: Callable[[FakeCall], Reply] | None = None
    gate: asyncio.Event | None = None
    gate_roles: tuple[str, ...] = ("executor",)
    delays: dict[str, float] = field(default_factory=dict)
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    """Anytime search: the steps the replanner proposes in place of a weak step (none by
    default: the search then has nothing to try there)."""

    async def __call__(self, call: FakeCall) -> Reply:
        if self.gate is not None and call.role in self.gate_roles:
            await self.gate.wait()
        delay = self.delay(call)
        if delay > 0:
            await asyncio.sleep(delay)
        return self.reply(call)

    def delay(self, call: FakeCall) -> float:
        """The scripted latency of a call: its role's, plus its step's."""
        step = ""
        if call.role == "executor":
            step = step_to_execute(call)
        elif step_to_replace(call) is not None:
            step = step_to_replace(call) or ""
        elif call.role in ("replanner", "evaluator", "responder"):
            step = last_done_step(call)
        return self.delays.get(call.role, 0.0) + self.delays.get(step, 0.0)

    def reply(self, call: FakeCall) -> Reply:
        if call.role == "planner":
            return {"steps": self.plan}
        if call.role == "executor":
            step = step_to_execute(call)
            if step in self.fail:
                return RuntimeError(f"scripted failure of {step}")
            if step in self.tools and not any(m.type == "tool" for m in call.messages):
                name, args = self.tools[step]
                return tool_call(name, args)
            return AIMessage(content=f"result of {step}")
        if call.role == "replanner" and (weak := step_to_replace(call)) is not None:
            return self.replace(weak)
        if call.role == "replanner":
            return self.replan(last_done_step(call))
        if call.role == "responder":
            return f"answer via {last_done_step(call)}"
        if call.role == "evaluator":
            return self.judge(call)
        if call.role == "voter":
            if self.vote is not None:
                return self.vote(call)
            return {"choice": call.enum[0], "reason": "first shown"}
        raise AssertionError(f"unexpected role {call.role}")

    def replan(self, step: str) -> dict[str, Any]:
        """The replanner's reply after `step`: proposals judged one by one."""
        checks = self.checks.get(step, [])
        proposals = checks or self.replans.get(step, [])
        return {
            "complete": bool(checks) or not proposals,
            "candidates": [
                {
                    "step": s,
                    "score": self.priors.get(s, 0.5),
                    "viable": s not in self.not_viable,
                    "reason": f"judged {s}",
                }
                for s in proposals
            ],
        }

    def replace(self, step: str) -> dict[str, Any]:
        """The replanner's alternatives to `step` (`alternatives`), judged by `priors`."""
        return {
            "complete": False,
            "candidates": [
                {
                    "step": s,
                    "score": self.priors.get(s, 0.5),
                    "viable": s not in self.not_viable,
                    "reason": f"instead of {step}",
                }
                for s in self.alternatives.get(step, [])
            ],
        }

    def judge(self, call: FakeCall) -> Reply:
        step = last_done_step(call)
        return {"score": self.values.get(step, 0.5), "reason": f"progress of {step}"}
