"""The structures of the planted-value suite: world shapes, each with the budget every strategy
gets on it (`STRUCTURES`), and `build_world` to grow one for a seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from testkit.planted_world import Judges, Spec, World, clip, world_from_spec


def leaf(q: float) -> Spec:
    """A complete path's end: its value is its answer quality."""
    return Spec(value=q, quality=q)


def inner(v: float, children: list[Spec], rng: random.Random) -> Spec:
    """A step that needs more research: a partial answer from here is poor."""
    return Spec(value=v, quality=0.1 + 0.2 * v + rng.uniform(0, 0.02), children=children)


def decoy(rng: random.Random) -> Spec:
    """An off-topic step that ends its path with almost nothing."""
    q = rng.uniform(0.03, 0.12)
    return Spec(value=q, quality=q, decoy=True)


def _honest(rng: random.Random, v: float, levels: int, fanout: int, spread: float) -> Spec:
    """A subtree whose values tell the truth on average: children scatter around the parent."""
    if levels == 0:
        return leaf(clip(v + rng.uniform(-0.08, 0.08)))
    kids = [
        _honest(rng, clip(v + rng.uniform(-spread, spread)), levels - 1, fanout, spread)
        for _ in range(fanout)
    ]
    return inner(v, kids, rng)


def _plant_best(rng: random.Random, node: Spec, q: float) -> None:
    """Make the leaf reached by always following the highest-valued child the best (`q`)."""
    while node.children:
        node = max(node.children, key=lambda c: c.value)
    node.value = node.quality = q


def wide(rng: random.Random) -> Spec:
    """Wide and easy: three honest branches of three leaves, the best under the best."""
    branches = [_honest(rng, rng.uniform(0.4, 0.65), 1, 3, 0.12) for _ in range(2)]
    top = _honest(rng, 0.8, 1, 3, 0.08)
    _plant_best(rng, top, 0.93)
    return inner(0.5, [*branches, top], rng)


def subgoal(rng: random.Random) -> Spec:
    """A subgoal that scores worse before it pays off: the weakest-looking first step (value
    0.3) is the only way to the best answer (0.95); the other two look better (0.6-0.72) and
    top out at 0.72."""
    pay = inner(
        0.3,
        [
            inner(0.78, [leaf(0.95), leaf(0.8 + rng.uniform(0, 0.05)), leaf(0.75)], rng),
            inner(0.6, [leaf(0.6 + rng.uniform(0, 0.05)) for _ in range(3)], rng),
            decoy(rng),
        ],
        rng,
    )
    others = [_honest(rng, rng.uniform(0.6, 0.72), 2, 3, 0.1) for _ in range(2)]
    for branch in others:
        for node in _leaves(branch):
            node.value = node.quality = min(node.quality, 0.72)
    return inner(0.5, [*others, pay], rng)


def deceptive(rng: random.Random) -> Spec:
    """Deceptive: the locally best branch (0.88, its children about 0.8) ends in poor answers
    (0.3-0.4); a middling branch (0.55) holds the best one (0.9)."""
    trap = inner(
        0.88,
        [
            inner(
                0.8 + rng.uniform(-0.03, 0.03), [leaf(rng.uniform(0.3, 0.4)) for _ in range(3)], rng
            )
            for _ in range(3)
        ],
        rng,
    )
    honest = inner(
        0.55,
        [
            inner(0.62, [leaf(0.9), leaf(0.7), leaf(0.6)], rng),
            inner(0.5, [leaf(rng.uniform(0.45, 0.55)) for _ in range(3)], rng),
            decoy(rng),
        ],
        rng,
    )
    third = _honest(rng, 0.45, 2, 3, 0.1)
    return inner(0.5, [trap, honest, third], rng)


def corridor(rng: random.Random) -> Spec:
    """A narrow corridor: at each of five levels one viable child (0.7-0.8) and two decoys."""

    def level(n: int) -> Spec:
        if n == 0:
            return leaf(0.9)
        return inner(rng.uniform(0.7, 0.8), [level(n - 1), decoy(rng), decoy(rng)], rng)

    return level(5)


def near_equal(rng: random.Random) -> Spec:
    """Many near-equal options: every value within a few hundredths of 0.6."""

    def node(levels: int) -> Spec:
        if levels == 0:
            return leaf(0.6 + rng.uniform(-0.06, 0.06))
        return inner(0.6 + rng.uniform(-0.02, 0.02), [node(levels - 1) for _ in range(3)], rng)

    return node(3)


def noisy(rng: random.Random) -> Spec:
    """An honest tree (three levels of three) judged by a noisy evaluator and replanner."""
    root = _honest(rng, 0.5, 3, 3, 0.25)
    _plant_best(rng, root, 0.92)
    return root


def _leaves(spec: Spec) -> list[Spec]:
    if not spec.children:
        return [spec]
    return [x for c in spec.children for x in _leaves(c)]


@dataclass(frozen=True)
class Structure:
    """A world shape with the budget every strategy gets on it."""

    name: str
    build: Callable[[random.Random], Spec]
    max_llm_calls: int
    max_depth: int
    judges: Judges = field(default_factory=Judges)
    about: str = ""


STRUCTURES: dict[str, Structure] = {
    s.name: s
    for s in (
        Structure("wide", wide, 30, 3, about="3 honest branches of 3 leaves"),
        Structure("subgoal", subgoal, 45, 4, about="the weakest-looking step pays off"),
        Structure("deceptive", deceptive, 45, 4, about="the best-looking branch is a trap"),
        Structure("corridor", corridor, 32, 6, about="1 viable child + 2 decoys, 5 levels"),
        Structure("near_equal", near_equal, 45, 4, about="all values 0.6 ± 0.06, 3x3x3"),
        Structure(
            "noisy",
            noisy,
            45,
            4,
            Judges(evaluator_noise=0.25, replanner_noise=0.25),
            about="honest 3x3x3 tree, noise sd 0.25",
        ),
    )
}


def build_world(structure: str, seed: int) -> World:
    """The world of `structure` for `seed`: the same pair always gives the same world."""
    shape = STRUCTURES[structure]
    rng = random.Random(f"{structure}:{seed}")
    return world_from_spec(structure, seed, shape.build(rng), shape.judges, rng)
