"""Scripted models for a planted-value world (testkit/planted_world.py).

`PlantedScript` answers every role of the engine from the world: the planner gives the root
step; the executor reports findings that quote the step's evidence ("relevance ~0.72; answer
confidence ~0.41"); the replanner proposes the node's children best first, each with its own
noisy score (`candidates` with step/score/viable/reason), or says the path is complete; the
evaluator scores path progress. The responder and the voter never
look at the world: they read the evidence quoted in their prompt, as a model would.

Every call takes a few event-loop ticks (no wall-clock sleep), and the script records when
each call started and ended on a tick counter, so calls that were in flight together can be
told from calls made one after another (`serial_depth`), deterministically.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage

from testkit.fakes import FakeCall, Reply, last_done_step, step_to_execute, step_to_replace
from testkit.planted_world import Truth, World

VIABLE = 0.15  # a reading below this is called not viable
CONFIDENCE = re.compile(r"answer confidence ~(\d(?:\.\d+)?)")
_UP_TO = re.compile(r"up to (\d+)")
_HEADER = re.compile(r"^### Candidate (\S+)\s*$", re.MULTILINE)

JobKind = Literal["plan", "exec", "expand", "respond", "vote"]


@dataclass(frozen=True)
class Span:
    """One model call: which job made it (kind and world node), and its ticks."""

    role: str
    job: JobKind
    key: str | None
    start: int
    end: int


def strength(relevance: float) -> str:
    if relevance >= 0.75:
        return "strong"
    if relevance >= 0.5:
        return "moderate"
    if relevance >= 0.25:
        return "weak"
    return "little"


def findings(world: World, node: Truth) -> str:
    """The executor's result for a step: what a researcher would report, numbers included."""
    relevance, confidence = world.evidence(node)
    return (
        f"Findings: the sources give {strength(relevance)} support on the question "
        f"(relevance ~{relevance:.2f}); answer confidence ~{confidence:.2f}."
    )


def read_confidence(text: str) -> float | None:
    """The last answer confidence quoted in `text`."""
    found = CONFIDENCE.findall(text)
    return float(found[-1]) if found else None


def voter_choice(prompt: str) -> tuple[str, float] | None:
    """The candidate whose evidence quotes the highest answer confidence (first shown wins a
    tie), read from the voter's prompt alone."""
    headers = list(_HEADER.finditer(prompt))
    best: tuple[str, float] | None = None
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(prompt)
        block = prompt[header.end() : end]
        _, _, evidence = block.partition("Evidence:")
        score = read_confidence(evidence)
        if score is None:  # the evidence was cut short: the answer quotes it too
            score = read_confidence(block)
        if score is not None and (best is None or score > best[1]):
            best = (header.group(1), score)
    return best


@dataclass
class PlantedScript:
    """A `testkit.fakes` script answering every role from `world`."""

    world: World
    ticks: int = 6  # event-loop ticks one call takes
    spans: list[Span] = field(default_factory=list)
    _clock: int = 0

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    async def __call__(self, call: FakeCall) -> Reply:
        start = self._tick()
        for _ in range(self.ticks):
            await asyncio.sleep(0)
        job, key = self.job_of(call)
        reply = self.reply(call)
        self.spans.append(Span(call.role, job, key, start, self._tick()))
        return reply

    def job_of(self, call: FakeCall) -> tuple[JobKind, str | None]:
        """The engine job a call belongs to, named by its world node."""
        if call.role == "planner":
            return "plan", None
        if call.role == "voter":
            return "vote", None
        if call.role == "executor":
            return "exec", self.world.by_step(step_to_execute(call)).key
        weak = step_to_replace(call)
        node = self.world.by_step(weak if weak is not None else last_done_step(call)).key
        return ("respond" if call.role == "responder" else "expand"), node

    def reply(self, call: FakeCall) -> Reply:
        world = self.world
        if call.role == "planner":
            return {"steps": [world.root.step]}
        if call.role == "executor":
            return AIMessage(content=findings(world, world.by_step(step_to_execute(call))))
        if call.role == "replanner":
            return self.replan(call)
        if call.role == "evaluator":
            return self.judge(call)
        if call.role == "responder":
            return self.respond(call)
        if call.role == "voter":
            return self.vote(call)
        raise AssertionError(f"unexpected role {call.role}")

    def replan(self, call: FakeCall) -> dict[str, Any]:
        weak = step_to_replace(call)
        if weak is not None:  # alternatives to a step: its siblings in the world
            replaced = self.world.by_step(weak)
            parent = self.world.parent(replaced)
            others = (
                [c for c in self.world.children(parent) if c.key != replaced.key] if parent else []
            )
            return self._proposals(call, others)
        node = self.world.by_step(last_done_step(call))
        if node.terminal:
            return {"complete": True, "candidates": []}
        return self._proposals(call, self.world.children(node))

    def _proposals(self, call: FakeCall, children: list[Truth]) -> dict[str, Any]:
        """`children` proposed best first, as many as the system prompt allows, judged as the
        world's replanner reads them."""
        system = call.messages[0].text if call.messages else ""
        limit = _UP_TO.search(system)
        read = [(self.world.replanner_reads(c), c) for c in children]
        read.sort(key=lambda x: (-x[0], x[1].key))  # best first, as asked
        if limit:
            read = read[: int(limit.group(1))]
        candidates = [
            {
                "step": child.step,
                "score": round(score, 3),
                "viable": score >= VIABLE,
                "reason": f"{strength(score)} promise",
            }
            for score, child in read
        ]
        return {"complete": False, "candidates": candidates}

    def judge(self, call: FakeCall) -> dict[str, Any]:
        node = self.world.by_step(last_done_step(call))
        score = self.world.evaluator_reads(node, "progress")
        return {"score": round(score, 3), "reason": f"{strength(score)} progress"}

    def respond(self, call: FakeCall) -> str:
        confidence = read_confidence(call.prompt)
        said = f" (answer confidence ~{confidence:.2f})" if confidence is not None else ""
        return f"The research supports an answer{said}; see the findings cited above."

    def vote(self, call: FakeCall) -> dict[str, Any]:
        choice = voter_choice(call.prompt)
        if choice is None:
            return {"choice": call.enum[0], "reason": "no evidence quoted; first shown"}
        cid, score = choice
        return {"choice": cid, "reason": f"the strongest evidence (confidence ~{score:.2f})"}


def serial_depth(spans: Iterable[Span]) -> int:
    """The longest chain of calls among `spans` where each starts after the previous ended:
    concurrent calls count once."""
    ordered = sorted(spans, key=lambda s: s.start)
    depth: list[int] = []
    for i, span in enumerate(ordered):
        before = [depth[j] for j in range(i) if ordered[j].end < span.start]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)
