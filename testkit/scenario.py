"""A declarative tree scenario for scripted runs: the plan, what the replanner proposes after
each step, which steps fail, and how the vote picks."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from testkit.fakes import (
    FakeCall,
    Reply,
    last_done_step,
    step_to_execute,
    tool_call,
)


@dataclass
class Scenario:
    """Replies by role. `replans[step]` lists the proposals after `step` ([] = path complete;
    a step with no entry also completes its path). `fail` names steps whose executor raises.
    `tools[step]` makes the executor call that tool (name, args) once before answering.
    The evaluator scores a candidate step by `priors` (default 0.5; `not_viable` ones are not
    viable) and a done step's progress by `values` (default 0.5)."""

    plan: list[str]
    replans: dict[str, list[str]] = field(default_factory=dict)
    fail: set[str] = field(default_factory=set)
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    priors: dict[str, float] = field(default_factory=dict)
    not_viable: set[str] = field(default_factory=set)
    values: dict[str, float] = field(default_factory=dict)
    vote: Callable[[FakeCall], Reply] | None = None
    gate: asyncio.Event | None = None
    gate_roles: tuple[str, ...] = ("executor",)

    async def __call__(self, call: FakeCall) -> Reply:
        if self.gate is not None and call.role in self.gate_roles:
            await self.gate.wait()
        return self.reply(call)

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
        if call.role == "replanner":
            proposals = self.replans.get(last_done_step(call), [])
            return {"complete": not proposals, "next_steps": proposals}
        if call.role == "responder":
            return f"answer via {last_done_step(call)}"
        if call.role == "evaluator":
            return self.judge(call)
        if call.role == "voter":
            if self.vote is not None:
                return self.vote(call)
            return {"choice": call.enum[0], "reason": "first shown"}
        raise AssertionError(f"unexpected role {call.role}")

    def judge(self, call: FakeCall) -> Reply:
        candidates = _CANDIDATE.findall(call.prompt)
        if candidates:
            return {
                key: {
                    "score": self.priors.get(step.strip(), 0.5),
                    "viable": step.strip() not in self.not_viable,
                    "reason": f"judged {step.strip()}",
                }
                for key, step in candidates
            }
        step = last_done_step(call)
        return {"score": self.values.get(step, 0.5), "reason": f"progress of {step}"}


_CANDIDATE = re.compile(r"^(c\d+): (.*)$", re.MULTILINE)
