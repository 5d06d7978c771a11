"""A responder reply that carries the model's token confidence (the local model's
`response_metadata["token_confidence"]`) leaves its mean on the answered node, and the vote is
shown it among the option's figures; it changes nothing of what is chosen (scripted models,
the real engine, tools and verifier)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage

from calls.local_confidence import TOKEN_CONFIDENCE, TokenConfidence
from testkit.fakes import FakeCall, Reply, last_done_step
from tests.integration.test_anytime_search import ALTERNATIVES, SEINE, UNGROUNDED, Anytime, _run
from tests.support.makers import EngineMaker

ANSWERS: dict[str, dict[str, Any] | str] = {
    "Find its river": UNGROUNDED,
    **dict.fromkeys(ALTERNATIVES, SEINE),
}
# The figures each path's responder reports, by the path's last step.
FIGURES = {
    "Find its river": TokenConfidence(-1.4821, -6.2, 30),
    "Search the Seine": TokenConfidence(-0.2104, -2.1, 24),
    "Search the rivers of Paris": TokenConfidence(-0.3377, -2.9, 24),
}


class Confident(Anytime):
    """The anytime scenario whose responder reports token figures as the local model does."""

    def reply(self, call: FakeCall) -> Reply:
        if call.role != "responder":
            return super().reply(call)
        step = last_done_step(call)
        return AIMessage(
            content=json.dumps(self.answers[step]),
            response_metadata={TOKEN_CONFIDENCE: FIGURES[step].as_metadata()},
        )


def _vote_on_seine(call: FakeCall) -> dict[str, Any]:
    return {"choice": call.enum[-1] if call.enum[0] == "n1.1" else call.enum[0]}


async def test_an_answers_token_confidence_is_recorded_on_its_node_and_shown_to_the_vote(
    make_engine: EngineMaker,
) -> None:
    result, models, _ = await _run(
        make_engine, Confident(ANSWERS, vote=_vote_on_seine), max_paths=3
    )

    nodes = {n["id"]: n for n in result.nodes}
    assert {i: nodes[i].get("confidence") for i in ("n1", "n1.1", "n1.2", "n1.3")} == {
        "n1": None,  # a step, not an answer
        "n1.1": -1.4821,
        "n1.2": -0.2104,
        "n1.3": -0.3377,
    }
    [voter] = models.recorder.by_role("voter")
    assert "mean token log-probability -1.48" in voter.prompt
    # The option of n1.2 and n1.3 shows its representative's (n1.2, best grounded, first).
    assert "Reached by 2 path(s); groundedness 1.00; mean token log-probability -0.21;" in (
        voter.prompt
    )


async def test_the_confidence_changes_nothing_of_the_choice(make_engine: EngineMaker) -> None:
    with_figures, _, _ = await _run(
        make_engine, Confident(ANSWERS, vote=_vote_on_seine), max_paths=3
    )
    without, models, _ = await _run(make_engine, Anytime(ANSWERS, vote=_vote_on_seine), max_paths=3)

    assert (with_figures.chosen_id, with_figures.chosen_by, with_figures.answer) == (
        without.chosen_id,
        without.chosen_by,
        without.answer,
    )
    assert [n["id"] for n in with_figures.nodes] == [n["id"] for n in without.nodes]
    assert all(n.get("confidence") is None for n in without.nodes)
    [voter] = models.recorder.by_role("voter")
    assert "log-probability" not in voter.prompt
