"""The planted-value world and its scripted models: deterministic, and what the models read
never carries the hidden numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agents.prompts import replanner_messages, voter_messages
from agents.state import NodeRecord, new_node
from testkit.fakes import FakeCall
from testkit.planted import PlantedScript, Span, findings, serial_depth, voter_choice
from testkit.planted_structures import STRUCTURES, build_world
from testkit.planted_world import World


def _call(role: str, messages: list[BaseMessage], schema: dict[str, Any] | None = None) -> FakeCall:
    return FakeCall(role, messages, [], schema)


def _record(world: World, key: str, parent: NodeRecord | None, index: int = 1) -> NodeRecord:
    node = new_node(parent=parent, index=index, step=world.nodes[key].step, planned=[])
    node["status"] = "done"
    node["result"] = findings(world, world.nodes[key])
    return node


def _path(world: World, key: str) -> list[NodeRecord]:
    parts = key.split(".")
    path: list[NodeRecord] = []
    for i in range(len(parts)):
        path.append(_record(world, ".".join(parts[: i + 1]), path[-1] if path else None))
    return path


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_the_same_seed_builds_the_same_world(structure: str) -> None:
    a, b = build_world(structure, 3), build_world(structure, 3)

    assert a.nodes == b.nodes
    assert a.task == b.task
    assert [a.evaluator_reads(n, "progress") for n in a.walk()] == [
        b.evaluator_reads(n, "progress") for n in b.walk()
    ]
    assert build_world(structure, 4).nodes != a.nodes


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_every_step_is_unique_and_the_best_answer_is_within_the_depth(structure: str) -> None:
    world = build_world(structure, 1)
    shape = STRUCTURES[structure]

    steps = [n.step for n in world.walk()]
    assert len(set(steps)) == len(steps)
    assert all(n.depth < shape.max_depth for n in world.walk())
    leaves = [n for n in world.walk() if n.terminal]
    assert world.best_quality(shape.max_depth) == max(n.quality for n in leaves)


def test_the_deceptive_trap_looks_best_and_ends_worst() -> None:
    world = build_world("deceptive", 1)
    first = world.children(world.root)
    trap = max(first, key=lambda n: n.value)

    below = [n for n in world.walk() if n.key.startswith(trap.key + ".") and n.terminal]
    assert max(n.quality for n in below) < 0.45 < world.best_quality(4)


def test_the_corridor_has_one_viable_child_per_level() -> None:
    world = build_world("corridor", 2)

    for node in world.walk():
        if not node.terminal:
            kids = world.children(node)
            assert len(kids) == 3
            assert sum(not k.decoy for k in kids) == 1


def test_the_replanner_answers_candidates_best_first() -> None:
    world = build_world("wide", 1)
    script = PlantedScript(world)
    messages = replanner_messages(world.task, [_record(world, "r", None)], 2, 2000)

    reply = script.reply(_call("replanner", messages))

    assert isinstance(reply, dict)
    assert reply["complete"] is False
    candidates = reply["candidates"]
    assert len(candidates) == 2  # "propose up to 2"
    assert candidates[0]["score"] >= candidates[1]["score"]
    assert set(candidates[0]) == {"step", "score", "viable", "reason"}
    assert {c["step"] for c in candidates} <= {n.step for n in world.children(world.root)}


def test_the_replanner_completes_a_leaf() -> None:
    world = build_world("wide", 1)
    leaf = next(n for n in world.walk() if n.terminal)
    messages = replanner_messages(world.task, _path(world, leaf.key), 3, 2000)

    reply = PlantedScript(world).reply(_call("replanner", messages))

    assert reply == {"complete": True, "candidates": []}


def test_the_evaluator_answers_progress() -> None:
    world = build_world("wide", 1)
    script = PlantedScript(world)
    path = "Steps done on this path:\nStep 1: " + world.root.step + "\nResult 1: ..."
    progress = _call(
        "evaluator", [HumanMessage(content=path)], {"properties": {"score": {}, "reason": {}}}
    )

    judged = script.reply(progress)

    assert isinstance(judged, dict)
    assert set(judged) == {"score", "reason"}
    assert judged["score"] == round(world.evaluator_reads(world.root, "progress"), 3)


def test_the_voter_picks_the_strongest_evidence_from_its_prompt() -> None:
    world = build_world("wide", 1)
    leaves = sorted((n for n in world.walk() if n.terminal), key=lambda n: n.key)[:4]
    script = PlantedScript(world)
    candidates = []
    for i, leaf in enumerate(leaves):
        path = _path(world, leaf.key)
        evidence = "\n\n".join(
            f"Step {j}: {n['step']}\nResult {j}: {n['result']}" for j, n in enumerate(path, 1)
        )
        answer = script.respond(_call("responder", [HumanMessage(content=evidence)]))
        candidates.append((f"n{i}", answer, evidence))
    messages = voter_messages(world.task, candidates, 2500)
    schema = {"properties": {"choice": {"enum": [c[0] for c in candidates]}}}

    reply = script.reply(_call("voter", messages, schema))

    best = max(range(len(leaves)), key=lambda i: world.evidence(leaves[i])[1])
    assert isinstance(reply, dict)
    assert reply["choice"] == f"n{best}"
    assert voter_choice(messages[-1].text) == (f"n{best}", world.evidence(leaves[best])[1])


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_what_the_models_read_never_quotes_a_hidden_number(structure: str) -> None:
    world = build_world(structure, 2)
    script = PlantedScript(world)
    hidden = {repr(x) for n in world.walk() for x in (n.value, n.quality)}

    for node in world.walk():
        text = findings(world, node) + node.step + world.task
        answer = script.respond(_call("responder", [SystemMessage(content=""), AIMessage(text)]))
        numbers = set(re.findall(r"\d+\.\d+", text + answer))
        assert not numbers & hidden
        assert node.key not in re.findall(r"\br(?:\.\d+)*\b", text)
        assert "decoy" not in text.lower()


def test_calls_in_flight_together_count_once_in_the_serial_depth() -> None:
    spans = [
        Span("evaluator", "expand", "r", 1, 4),
        Span("replanner", "expand", "r", 2, 5),  # overlaps the first
        Span("evaluator", "expand", "r", 6, 7),  # after both
    ]

    assert serial_depth(spans) == 2
    assert serial_depth(spans[:1] + spans[2:]) == 2
    assert serial_depth([]) == 0
