"""Paths that agree pool their evidence, and the reserve corroborates: a path run from the
reserve is not voted on while a searched path has an answer, and where its answer agrees with
the chosen one its verified quotes join that answer (scripted models, the real engine, the
real verifier)."""

from __future__ import annotations

from typing import Any

from agents.params import RunParams
from agents.result import RunResult
from testkit.event_log import EventLog
from tests.integration.test_grounded_answers import GROUNDED, PAGES, Citing, _answer
from tests.support.makers import EngineMaker
from tests.support.page_search import PageSearch

TASK = "What is the capital of France?"
RIVER_QUOTE = "The Seine is a 777-kilometre-long river in northern France"
# After the first step the replanner proposes a map check (fine) and a guidebook (not
# viable: pruned, so in reserve). The guidebook step reads the Seine page.
STEPS = {"Find the capital": "capital", "Check the map": "capital", "Ask a guidebook": "river"}


def _scenario(guidebook: dict[str, Any]) -> Citing:
    return Citing(
        {"Check the map": GROUNDED, "Ask a guidebook": guidebook},
        plan=["Find the capital"],
        replans={"Find the capital": ["Check the map", "Ask a guidebook"]},
        not_viable={"Ask a guidebook"},
        priors={"Check the map": 0.8, "Ask a guidebook": 0.3},
        tools={step: ("search", {"query": query}) for step, query in STEPS.items()},
        # Were it asked, the voter would take the revived path's answer.
        vote=lambda call: {"choice": "n1.2" if "n1.2" in call.enum else call.enum[0]},
    )


async def _run(
    make_engine: EngineMaker, events: EventLog, guidebook: dict[str, Any], **params: Any
) -> tuple[RunResult, Any]:
    engine, models = make_engine(_scenario(guidebook), tools=[PageSearch(PAGES).tool()])
    result = await engine.run(
        TASK,
        RunParams(
            **{"strategy": "mcts", "max_paths": 2, "max_concurrency": 1, "reserve": True, **params}
        ),
        sink=events,
    )
    return result, models


async def test_a_revived_path_that_agrees_adds_its_verified_quote(
    make_engine: EngineMaker, events: EventLog
) -> None:
    agreeing = _answer("Paris is the capital of France [1].", (1, "E2", RIVER_QUOTE))

    result, models = await _run(make_engine, events, agreeing)

    assert result.status == "done"
    assert [e.node_id for e in events.of("revived")] == ["n1.2"]
    [vote] = events.of("vote")
    assert (vote.candidates, vote.revived, vote.agreeing) == (["n1.1"], ["n1.2"], ["n1.2"])
    assert vote.method == "single"
    assert models.recorder.by_role("voter") == []
    assert result.chosen_id == "n1.1"
    # The chosen answer's own citation, then the revived path's, under a new marker.
    assert result.answer == "Paris is the capital of France.[1][2]"
    assert [(c["marker"], c["quote"], c["node_id"]) for c in result.citations] == [
        (1, "Paris is the capital and largest city", "n1"),
        (2, RIVER_QUOTE, "n1.2"),
    ]
    assert all(c["verified"] for c in result.citations)
    assert result.groundedness == 1.0
    assert [s["title"] for s in result.sources] == ["France", "Seine"]
    [done] = events.of("done")
    assert [c["quote"] for c in done.citations] == [c["quote"] for c in result.citations]


async def test_a_revived_path_that_disagrees_is_not_voted_on(
    make_engine: EngineMaker, events: EventLog
) -> None:
    other = _answer("Lyon is the capital of France [1].", (1, "E2", RIVER_QUOTE))

    result, models = await _run(make_engine, events, other)

    [vote] = events.of("vote")
    assert (vote.candidates, vote.revived, vote.agreeing) == (["n1.1"], ["n1.2"], [])
    assert models.recorder.by_role("voter") == []
    assert result.chosen_id == "n1.1"
    assert result.answer == "Paris is the capital of France.[1]"
    assert [c["quote"] for c in result.citations] == ["Paris is the capital and largest city"]
    nodes = {n["id"]: n for n in result.nodes}
    assert nodes["n1.2"]["revived"] is True
    assert nodes["n1.1"]["revived"] is False
    assert nodes["n1.2"]["answer"] == "Lyon is the capital of France [1]."


async def test_without_the_reserve_the_pruned_path_never_runs(
    make_engine: EngineMaker, events: EventLog
) -> None:
    agreeing = _answer("Paris is the capital of France [1].", (1, "E2", RIVER_QUOTE))

    result, _ = await _run(make_engine, events, agreeing, reserve=False)

    assert result.stop_reason == "frontier_exhausted"
    assert events.of("revived") == []
    assert result.answer == "Paris is the capital of France.[1]"
    assert len(result.citations) == 1


async def test_searched_paths_that_agree_pool_their_quotes_after_the_vote(
    make_engine: EngineMaker, events: EventLog
) -> None:
    """Two searched paths with the same answer: the vote picks one, the other's quote joins."""
    both = Citing(
        {
            "Check the map": GROUNDED,
            "Ask a guidebook": _answer(
                "Paris is the capital of France.[3]", (3, "E2", RIVER_QUOTE)
            ),
        },
        plan=["Find the capital"],
        replans={"Find the capital": ["Check the map", "Ask a guidebook"]},
        tools={step: ("search", {"query": query}) for step, query in STEPS.items()},
        vote=lambda call: {"choice": call.enum[0]},
    )
    engine, models = make_engine(both, tools=[PageSearch(PAGES).tool()])

    result = await engine.run(TASK, RunParams(strategy="mcts", max_paths=2), sink=events)

    [vote] = events.of("vote")
    assert vote.method == "llm"
    assert sorted(vote.candidates) == ["n1.1", "n1.2"]
    other = "n1.2" if vote.chosen_id == "n1.1" else "n1.1"
    assert vote.agreeing == [other]
    assert len(models.recorder.by_role("voter")) == 1
    assert result.chosen_id == vote.chosen_id
    assert sorted(c["quote"] for c in result.citations) == sorted(
        ["Paris is the capital and largest city", RIVER_QUOTE]
    )
    # The chosen answer's markers stay; the other's quote takes the next number.
    assert (
        result.answer
        == {
            "n1.1": "Paris is the capital of France.[1][2]",
            "n1.2": "Paris is the capital of France.[3][4]",
        }[vote.chosen_id]
    )
