"""A planted-value world: a seeded tree of research steps whose worth is known to the benchmark
and hidden from the models that answer the engine.

Every node has a hidden `value` (how promising the step looks and is read, with noise and bias,
by the evaluator and the replanner) and a hidden `quality` (how good the answer is if the path
ends there; a leaf's value is its quality). Decoys are dead-end steps of little value. The
shapes live in testkit/planted_structures.py. Everything is a pure function of the structure
and the seed: no clock, no network.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

# A step reads as real research; the trailing code makes every step of a world unique (the
# engine de-duplicates proposals by their text) without saying anything about its worth.
_VERBS = ("Check", "Survey", "Compare", "Trace", "Read", "Query", "Collect", "Review", "Audit")
_OBJECTS = (
    "benchmark tables",
    "primary papers",
    "replication reports",
    "author notes",
    "the code repository",
    "survey articles",
    "dataset cards",
    "conference talks",
    "published critiques",
    "ablation studies",
    "issue trackers",
    "textbook chapters",
)


@dataclass(frozen=True)
class Judges:
    """How the models read the hidden values: standard deviation of the noise, and a bias.

    `evaluator_*` applies to the evaluator (path progress and candidate scores), `replanner_*`
    to the scores the replanner gives its own candidates, `evidence_noise` to the numbers the
    executor's results quote (what the responder and voter can read)."""

    evaluator_noise: float = 0.05
    evaluator_bias: float = 0.0
    replanner_noise: float = 0.08
    replanner_bias: float = 0.0
    evidence_noise: float = 0.01


@dataclass(frozen=True)
class Truth:
    """One node of the world, with its hidden numbers."""

    key: str  # position in the world ("r", "r.2", "r.2.1"); never shown to a model
    step: str
    value: float
    quality: float
    children: tuple[str, ...]
    depth: int  # the root is 0, like the engine's node depth
    decoy: bool = False

    @property
    def terminal(self) -> bool:
        return not self.children


@dataclass(frozen=True)
class World:
    """A seeded world: the task, the hidden tree and how the judges read it."""

    structure: str
    seed: int
    task: str
    nodes: Mapping[str, Truth]
    judges: Judges
    _by_step: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_step.update({n.step: n.key for n in self.nodes.values()})

    @property
    def root(self) -> Truth:
        return self.nodes["r"]

    def by_step(self, step: str) -> Truth:
        """The node a step text names (KeyError for a step the world never proposed)."""
        return self.nodes[self._by_step[step.strip()]]

    def children(self, node: Truth) -> list[Truth]:
        return [self.nodes[k] for k in node.children]

    def parent(self, node: Truth) -> Truth | None:
        """The node's parent (None for the root): keys are paths, "r.2.1" under "r.2"."""
        key, _, _ = node.key.rpartition(".")
        return self.nodes[key] if key else None

    def best(self, max_depth: int) -> Truth:
        """The node whose path ends with the best answer any search within `max_depth` steps
        could give."""
        return max((n for n in self.nodes.values() if n.depth < max_depth), key=lambda n: n.quality)

    def best_quality(self, max_depth: int) -> float:
        return self.best(max_depth).quality

    def walk(self) -> Iterator[Truth]:
        yield from self.nodes.values()

    # -- the judges' readings: deterministic per (seed, reader, node), like temperature 0 ----
    def _noise(self, *parts: object) -> float:
        text = "\x00".join(str(p) for p in (self.structure, self.seed, *parts))
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        return random.Random(int.from_bytes(digest, "big")).gauss(0.0, 1.0)

    def evaluator_reads(self, node: Truth, what: str) -> float:
        """The evaluator's score of `node` (`what`: "progress" or "candidate")."""
        j = self.judges
        noise = j.evaluator_noise * self._noise("evaluator", what, node.key)
        return clip(node.value + j.evaluator_bias + noise)

    def replanner_reads(self, node: Truth) -> float:
        """The score the replanner gives `node` when it proposes it."""
        j = self.judges
        return clip(node.value + j.replanner_bias + j.replanner_noise * self._noise("rp", node.key))

    def evidence(self, node: Truth) -> tuple[float, float]:
        """(relevance, answer confidence) as the step's result quotes them, to two decimals."""
        e = self.judges.evidence_noise
        relevance = clip(node.value + e * self._noise("relevance", node.key))
        confidence = clip(node.quality + e * self._noise("confidence", node.key))
        return round(relevance, 2), round(confidence, 2)


def clip(x: float) -> float:
    """`x` within [0, 1]."""
    return min(1.0, max(0.0, x))


# -- from a spec to a world ---------------------------------------------------------------------


@dataclass
class Spec:
    """A node before it gets its key and text."""

    value: float
    quality: float
    children: list[Spec] = field(default_factory=list)
    decoy: bool = False


def _code(rng: random.Random, used: set[str]) -> str:
    while True:
        code = "".join(rng.choice(string.ascii_uppercase) for _ in range(3)) + str(
            rng.randrange(10, 100)
        )
        if code not in used:
            used.add(code)
            return code


def world_from_spec(
    structure: str, seed: int, spec: Spec, judges: Judges, rng: random.Random
) -> World:
    """The world a spec describes: every node gets its key and a step text, children in an
    order drawn from `rng`."""
    nodes: dict[str, Truth] = {}
    used: set[str] = set()

    def place(s: Spec, key: str, depth: int) -> None:
        order = list(s.children)
        rng.shuffle(order)  # a child's position says nothing about its worth
        keys = [f"{key}.{i}" for i in range(1, len(order) + 1)]
        step = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)} ({_code(rng, used)})"
        # A tiny jitter keeps every hidden number distinct from any two-decimal reading.
        jitter = rng.uniform(-0.004, 0.004)
        value = clip(s.value + jitter)
        quality = value if not s.children else clip(s.quality + jitter)
        nodes[key] = Truth(key, step, value, quality, tuple(keys), depth, s.decoy)
        for child, child_key in zip(order, keys, strict=True):
            place(child, child_key, depth + 1)

    place(spec, "r", 0)
    task = (
        f"Research question {_code(rng, used)}: what do the available sources establish about "
        "it, and how firmly?"
    )
    return World(structure, seed, task, nodes, judges)
