"""The shape of a run's answer, declared once: what the vote decides (`AnswerFields`, the
state's `final`), and what a finished run tells (`EndFields`), which the run's result
(agents/result.py) and its `done` event (agents/events.py) share."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agents.grounding.verify import GroundingFields
from agents.state import Source, StopReason

ChosenBy = Literal["single", "first", "carried", "vote", "rule", "fallback", "best_effort"]
"""How the answer was chosen. `single`: one candidate; `first`: the first answer kept, no
alternative met the choice rule (agents/choice.py); `carried`: the answer the first path gave
once carried through the planned steps its first answer left undone, kept as `first` is;
`vote`: the vote among the first answer and
the alternatives the rule admits (or among all candidates, outside the anytime search);
`rule`: the rule's ranking, the vote having failed; `fallback`: the best-valued candidate, the
vote having failed; `best_effort`: no path completed."""


class FirstAnswer(GroundingFields):
    """The first verified answer of a run: its greedy first path's (what a single chain
    answers), ready while the search may go on improving on it."""

    answer: str
    node_id: str = Field(description="The leaf of the first path.")
    path: list[str] = Field(description="Node ids from the root to the leaf.")
    metrics: dict[str, Any] = Field(
        default_factory=dict,
        description="The run's model calls, tokens and tool calls when it was ready.",
    )
    elapsed_s: float = Field(ge=0, description="Seconds of search until it was ready.")


class AnswerFields(GroundingFields):
    """The chosen answer with its grounding, its path and its sources: what the vote decides,
    kept in the run's state as plain data (`final`)."""

    answer: str | None = None
    partial: bool = Field(
        default=False, description="True when no path completed and the answer is best-effort."
    )
    chosen_id: str | None = None
    chosen_by: ChosenBy | None = Field(default=None, description="How the answer was chosen.")
    path: list[str] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)


class EndFields(AnswerFields):
    """What a finished run tells a reader of its answer, its tree aside: the vote's answer,
    the first answer beside it, why and at what cost the search stopped."""

    first: FirstAnswer | None = Field(
        default=None,
        description="The run's first verified answer (`answer_ready`), whether or not it was "
        "kept; null when the first path gave none.",
    )
    stop_reason: StopReason | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    reused_from: str | None = Field(
        default=None,
        description="The earlier run whose result answered this identical request, without a "
        "model call (agents/reuse.py).",
    )
