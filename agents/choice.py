"""A choice a weak judge cannot spoil: candidate answers grouped into options, and the rule that
says when the first answer may be replaced. Pure functions of the answered leaves.

- **Options.** Candidates whose answers agree (`agents.grounding.corroborate.agrees`: the same
  text once citation markers are removed and it is normalised as quotes are: case, punctuation,
  spacing) form one option. An option carries how many paths reached it, and the grounding of
  its best-grounded member (its representative).
- **The first answer, carried** (`carried`). When the first answer was written with planned
  steps left undone and the search then ran them on its path (`deepen`, agents/anytime.py), the
  answer that path gave at its end stands in for the first answer if every citation of it is
  verified and its groundedness is not lower: the same chain, carried through its own plan
  (depth before breadth). Below, "the first answer" is that one.
- **The rule** (`may_replace`). The first answer (the greedy chain's) stays unless an
  alternative option ranks at least as well on evidence that needs no model:
  1. every citation of its representative verified (none rejected) and its groundedness not
     lower than the first answer's; and
  2. either it was reached by two paths or more, and by more paths than the first answer; or
     the first answer is below `min_groundedness` while the alternative reaches it.
  A lone alternative therefore never replaces a grounded first answer, and an ungrounded one
  never replaces anything, whatever a vote says.
- The model's vote (agents/nodes/vote.py) chooses only among the first answer and the options
  the rule lets replace it; with none, no vote is held.
- An option's representative may carry the model's own confidence in its words (the mean token
  log-probability of the reply, which the local model reports: calls/local_confidence.py). The
  vote is shown it among the option's figures; neither the rule nor the search weighs it until
  a threshold has been calibrated on held-out questions (docs/models.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.grounding.corroborate import agreeing_groups
from agents.grounding.verify import Grounding
from agents.state import NodeRecord
from agents.tree import by_id


@dataclass(frozen=True)
class Option:
    """Candidates that agree: their leaves (id order) and the representative one."""

    leaves: tuple[NodeRecord, ...]
    representative: NodeRecord
    has_first: bool

    @property
    def paths(self) -> int:
        return len(self.leaves)

    @property
    def groundedness(self) -> float:
        return _groundedness(self.representative)

    @property
    def all_verified(self) -> bool:
        """Its representative's answer is `fully_verified`."""
        return fully_verified(self.representative["grounding"])

    @property
    def confidence(self) -> float | None:
        """The mean token log-probability of its representative's answer, when its model
        reported one (a node kept before the field existed has none)."""
        return self.representative.get("confidence")

    def figures(self) -> str:
        """What the vote is shown of the option besides its answer."""
        verified = "all verified" if self.all_verified else "not all verified"
        confidence = self.confidence
        said = "" if confidence is None else f"mean token log-probability {confidence:.2f}; "
        return (
            f"Reached by {self.paths} path(s); groundedness {self.groundedness:.2f}; "
            f"{said}citations {verified}."
        )


def fully_verified(grounding: Grounding | None) -> bool:
    """An answer cites, and the verifier rejected none of its citations."""
    return bool(grounding and grounding["citations"] and not grounding["rejected"])


def _groundedness(leaf: NodeRecord) -> float:
    grounding = leaf["grounding"]
    return float(grounding["groundedness"] or 0.0) if grounding else 0.0


def carried(first: NodeRecord, path: Sequence[NodeRecord]) -> NodeRecord:
    """The answer that stands as the first one (the module docstring's first rule): of the
    answered nodes of the first path (`path`) below `first`, the deepest whose citations all
    verified and whose groundedness is not below `first`'s; `first` itself when it left no
    planned step undone or no such node exists."""
    if not first["planned"]:
        return first
    floor = _groundedness(first)
    below = [
        node
        for node in path
        if node["depth"] > first["depth"]
        and node["answer"]
        and fully_verified(node["grounding"])
        and _groundedness(node) >= floor
    ]
    return max(below, key=lambda node: node["depth"], default=first)


def _representative(leaves: Sequence[NodeRecord], first_id: str | None) -> NodeRecord:
    """The best-grounded member, the first answer on a tie, then id order."""

    def key(leaf: NodeRecord) -> tuple[float, bool, tuple[int, ...]]:
        return (-_groundedness(leaf), leaf["id"] != first_id, by_id(leaf))

    return min(leaves, key=key)


def options_of(leaves: Sequence[NodeRecord], first_id: str | None) -> list[Option]:
    """The answered leaves grouped by agreement, in the order of their first member's id."""
    groups = agreeing_groups(sorted(leaves, key=by_id), lambda leaf: leaf["answer"] or "")
    return [
        Option(
            leaves=tuple(group),
            representative=_representative(group, first_id),
            has_first=any(leaf["id"] == first_id for leaf in group),
        )
        for group in groups
    ]


def may_replace(option: Option, first: Option, min_groundedness: float) -> bool:
    """Whether `option` may replace the first answer's option (the module docstring's rule)."""
    if option.has_first:
        return True
    if not option.all_verified or option.groundedness < first.groundedness:
        return False
    agreed = option.paths >= 2 and option.paths > first.paths
    rescues = first.groundedness < min_groundedness <= option.groundedness
    return agreed or rescues


def rule_rank(options: Sequence[Option]) -> Option:
    """The option the rule ranks best (used when no vote can be had): most paths, then
    groundedness, the first answer's option winning ties."""
    return min(options, key=lambda o: (-o.paths, -o.groundedness, not o.has_first))
