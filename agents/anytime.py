"""The anytime search (strategy `anytime`, the default): the single chain first, then more only
where signals that need no model say its answer is weak. Pure functions of the tree.

1. **Greedy first.** The first rollout is the chain: the nodes `n1`, `n1.1`, `n1.1.1`, … (the
   first child at every level), each expansion proposing one next step, every call decoding
   greedily. Its answer, verified, is the run's first answer (`answer_ready`); a chain run
   (`max_candidates: 1`, `max_paths: 1`) is exactly this rollout.
2. **Assess it** (`assess`) from the tree alone: sentences its verified quotes do not back,
   citations the verifier rejected, entities the task names that no evidence of the path
   mentions, steps whose tool calls brought no new evidence, planned steps left undone. With
   none of these the answer is *sufficient* and the run may stop early
   (`first_answer_sufficient`).
3. **Depth before breadth.** Planned steps left undone run first, as one more step after the
   first path's last (`deepen`); then alternatives are opened at the weakest step first
   (`weak_steps`): siblings proposed to retrieve differently (another query, another source),
   each followed as a chain to its own answer.

Which answer wins is `agents/choice.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agents.grounding.quotes import fold
from agents.grounding.verify import question_entities
from agents.params import RunParams
from agents.state import NodeRecord
from agents.tree import by_id, children_of, path_to, siblings_of

ANYTIME = "anytime"


def is_anytime(params: RunParams) -> bool:
    return params.strategy == ANYTIME


def on_first_path(node_id: str) -> bool:
    """Whether the node is on the greedy first rollout: the first child at every level."""
    return all(part == "1" for part in node_id[1:].split("."))


def first_path(nodes: Mapping[str, NodeRecord]) -> list[NodeRecord]:
    """The first rollout so far, root first (empty before the plan)."""
    path: list[NodeRecord] = []
    current = nodes.get("n1")
    while current is not None:
        path.append(current)
        current = nodes.get(f"{current['id']}.1")
    return path


def first_answered(nodes: Mapping[str, NodeRecord]) -> NodeRecord | None:
    """The first rollout's answered leaf, once it has an answer: the shallowest answered node of
    the first path (a step run after it, `deepen`, answers later and is another candidate)."""
    for node in first_path(nodes):
        if node["answer"] is not None:
            return node
    return None


def greedy_phase(nodes: Mapping[str, NodeRecord]) -> bool:
    """Whether the first rollout is still under way: its deepest node can still lead to an
    answer (pending, running, or done) and no answer (nor a failed one) was written on it."""
    path = first_path(nodes)
    if not path:
        return True
    if any(n["answer"] is not None or n["answer_error"] is not None for n in path):
        return False
    return path[-1]["status"] in ("pending", "running", "done")


@dataclass(frozen=True)
class Assessment:
    """What is weak about an answered path, from the tree alone."""

    unsupported: int = 0
    rejected: int = 0
    missing_entities: list[str] = field(default_factory=list)
    empty_steps: list[str] = field(default_factory=list)  # ids of steps with no new evidence
    undone: list[str] = field(default_factory=list)  # planned steps never run
    uncited_steps: list[str] = field(default_factory=list)  # ids of steps no citation quotes
    grounded: bool = False  # at least one verified citation, and every sentence backed

    @property
    def sufficient(self) -> bool:
        """Grounded, complete and with nothing left undone: no signal asks for more."""
        return not self.signals()

    def signals(self) -> list[str]:
        """The names of the signals that find the answer weak, in `reasons`' order (the
        benchmark's rows keep these)."""
        found = {
            "ungrounded": not self.grounded,
            "unsupported": bool(self.unsupported),
            "rejected": bool(self.rejected),
            "missing_entities": bool(self.missing_entities),
            "empty_steps": bool(self.empty_steps),
            "undone": bool(self.undone),
        }
        return [name for name, weak in found.items() if weak]

    def reasons(self) -> list[str]:
        """The signals in words, for the events and the logs."""
        out: list[str] = []
        if not self.grounded:
            out.append("the answer is not fully backed by verified quotes")
        if self.unsupported:
            out.append(f"{self.unsupported} sentence(s) without a verified quote")
        if self.rejected:
            out.append(f"{self.rejected} citation(s) rejected")
        if self.missing_entities:
            out.append("no evidence names " + ", ".join(self.missing_entities))
        if self.empty_steps:
            out.append("no new evidence from " + ", ".join(self.empty_steps))
        if self.undone:
            out.append(f"{len(self.undone)} planned step(s) not run")
        return out


def new_evidence(path: Sequence[NodeRecord]) -> dict[str, int]:
    """Per node of `path`, how many of its evidence items no earlier step of the path had
    (same source, same text)."""
    seen: set[tuple[str, str]] = set()
    counts: dict[str, int] = {}
    for node in path:
        fresh = 0
        for item in node["evidence"]:
            key = (item["source"]["id"], item["text"])
            if key not in seen:
                seen.add(key)
                fresh += 1
        counts[node["id"]] = fresh
    return counts


def missing_entities(task: str, path: Sequence[NodeRecord]) -> list[str]:
    """The entities the task names (`question_entities`) that no evidence item of the path
    mentions (normalised, on word boundaries)."""
    texts = [
        f" {fold(item['text'], full=True).text} " for node in path for item in node["evidence"]
    ]
    missing: list[str] = []
    for entity in question_entities(task):
        folded = fold(entity, full=True).text
        if folded and not any(f" {folded} " in text for text in texts):
            missing.append(entity)
    return missing


def assess(task: str, nodes: Mapping[str, NodeRecord], leaf: NodeRecord) -> Assessment:
    """The model-free signals of the answered path ending at `leaf`."""
    path = path_to(nodes, leaf["id"])
    grounding = leaf["grounding"]
    citations = grounding["citations"] if grounding else []
    cited = {c["node_id"] for c in citations}
    fresh = new_evidence(path)
    with_tools = [n for n in path if n["tool_calls"]]
    return Assessment(
        unsupported=len(grounding["unsupported"]) if grounding else 0,
        rejected=len(grounding["rejected"]) if grounding else 0,
        missing_entities=missing_entities(task, path) if with_tools else [],
        empty_steps=[n["id"] for n in with_tools if fresh[n["id"]] == 0],
        undone=list(leaf["planned"]),
        uncited_steps=[n["id"] for n in path if n["evidence"] and n["id"] not in cited],
        grounded=bool(
            grounding
            and citations
            and not grounding["unsupported"]
            and (grounding["groundedness"] or 0.0) >= 1.0
        ),
    )


def weak_steps(task: str, nodes: Mapping[str, NodeRecord], leaf: NodeRecord) -> list[str]:
    """The steps of the answered path at `leaf` to open alternatives at, weakest first:
    steps that brought no new evidence; then, when the task names an entity no evidence
    mentions, the earliest steps (retrieval that missed it starts there); then steps whose
    evidence the answer does not cite; then the rest from the last step back. Every step at
    most once."""
    path = path_to(nodes, leaf["id"])
    found = assess(task, nodes, leaf)
    order: list[str] = list(found.empty_steps)
    if found.missing_entities:
        order += [n["id"] for n in path]
    order += found.uncited_steps
    order += [n["id"] for n in reversed(path)]
    return list(dict.fromkeys(order))


def siblings_room(nodes: Mapping[str, NodeRecord], node_id: str, params: RunParams) -> int:
    """How many alternatives a branch at `node_id` may add: up to `max_candidates` nodes at
    its place in all."""
    return max(0, params.max_candidates - len(siblings_of(nodes, node_id)))


@dataclass(frozen=True)
class Move:
    """What the search does once the first answer exists and nothing else is left to run:
    `deepen` runs the next planned step after `node_id` (no model call: the fold adds it);
    `branch` asks for alternatives to the step at `node_id`."""

    kind: str  # "deepen" | "branch"
    node_id: str
    step: str = ""
    reasons: tuple[str, ...] = ()


def next_move(
    task: str, nodes: Mapping[str, NodeRecord], params: RunParams, tried: Sequence[str]
) -> Move | None:
    """The next thing to spend the budget on after the first answer, or None when nothing is
    left worth trying. Depth before breadth: the first path's undone planned steps first (once),
    then alternatives at its weak steps, weakest first, each step once (`tried`: the steps
    branched at already, whether or not alternatives came of it)."""
    leaf = first_answered(nodes)
    if leaf is None:
        return None
    found = assess(task, nodes, leaf)
    if found.undone and not children_of(nodes, leaf["id"]):
        return Move("deepen", leaf["id"], step=leaf["planned"][0], reasons=("planned steps left",))
    reasons = tuple(found.reasons())
    for node_id in weak_steps(task, nodes, leaf):
        if nodes[node_id]["status"] != "done":
            continue
        if node_id not in tried and siblings_room(nodes, node_id, params) > 0:
            return Move("branch", node_id, reasons=reasons)
    return None


def order_runnable(runnable: Sequence[NodeRecord]) -> list[NodeRecord]:
    """Runnable nodes in the anytime search's order: deepest first (a path is carried to its
    answer before another is opened), then by id."""
    return sorted(runnable, key=lambda n: (-n["depth"], by_id(n)))
