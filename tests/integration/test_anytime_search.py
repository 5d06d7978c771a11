"""The anytime search (the default): its first rollout is the chain, call for call; its first
answer streams as `answer_ready`; alternatives open only at the weak step; and only agreeing,
verified alternatives may replace the first answer, whatever the vote says (scripted models,
the real engine, tools and verifier)."""

from __future__ import annotations

from typing import Any

from agents.params import RunParams
from agents.result import RunResult
from calls.decoding import derive_seed
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, FakeModels, Reply
from tests.integration.test_grounded_answers import Citing, _answer
from tests.support.makers import EngineMaker
from tests.support.page_search import PageSearch, wiki_page

TASK = "Which river flows through the capital of France?"
PAGES = {
    "capital": wiki_page("France", "Paris is the capital and largest city of France."),
    "seine": wiki_page(
        "Seine", "The Seine is a 777-kilometre-long river that flows through Paris."
    ),
    "rhone": wiki_page("Rhone", "The Rhone is a major river that flows through Lyon."),
}
PLAN = ["Find the capital", "Find its river"]
ALTERNATIVES = ["Search the Seine", "Search the rivers of Paris"]
# The first path's second search finds nothing: its answer is weak there.
QUERIES = {
    "Find the capital": "capital",
    "Find its river": "river",
    "Search the Seine": "seine",
    "Search the rivers of Paris": "seine",
}
UNGROUNDED = _answer("The Loire.[1]", (1, "E1", "The Loire flows through Paris"))
GROUNDED_FIRST = _answer("Paris.[1]", (1, "E1", "Paris is the capital and largest city"))
SEINE = _answer("The Seine.[1]", (1, "E2", "The Seine is a 777-kilometre-long river"))
RHONE = _answer("The Rhone.[1]", (1, "E2", "The Rhone is a major river"))


class Anytime(Citing):
    """The plan above; after a weak answer, the replanner proposes `alternatives` in place of
    the step it is asked about."""

    def __init__(
        self,
        answers: dict[str, dict[str, Any] | str],
        alternatives: list[str] = ALTERNATIVES,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            answers,
            plan=PLAN,
            replans={"Find the capital": ["Find its river"]},
            tools={step: ("search", {"query": query}) for step, query in QUERIES.items()},
            **kwargs,
        )
        self.alternatives = alternatives

    def delay(self, call: FakeCall) -> float:
        return 0.0  # a proposal for the first step shows no step done

    def reply(self, call: FakeCall) -> Reply:
        if call.role == "replanner" and "Step to replace:" in call.prompt:
            return {
                "complete": False,
                "candidates": [
                    {"step": s, "score": 0.7, "viable": True, "reason": "another source"}
                    for s in self.alternatives
                ],
            }
        return super().reply(call)


def _engine(make_engine: EngineMaker, scenario: Anytime) -> tuple[Any, FakeModels]:
    pages = dict(PAGES)
    return make_engine(scenario, tools=[PageSearch(pages).tool()])


async def _run(
    make_engine: EngineMaker, scenario: Anytime, **params: Any
) -> tuple[RunResult, FakeModels, EventLog]:
    engine, models = _engine(make_engine, scenario)
    events = EventLog()
    result = await engine.run(TASK, RunParams(**{"max_concurrency": 1, **params}), sink=events)
    return result, models, events


def _calls(models: FakeModels) -> list[tuple[str, str, Any, dict[str, Any]]]:
    return [(c.role, c.prompt, c.decoding, c.options) for c in models.recorder.calls]


async def test_the_first_rollout_is_the_chain_call_for_call(make_engine: EngineMaker) -> None:
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}
    chain, chain_models, _ = await _run(
        make_engine, Anytime(answers), max_candidates=1, max_paths=1
    )
    default, models, events = await _run(make_engine, Anytime(answers), max_paths=4)

    [ready] = events.of("answer_ready")
    before = _calls(models)[: ready.metrics["llm_calls"]]
    # The same prompts, in the same order, decoded the same way (greedily, the same seeds).
    assert before == _calls(chain_models)
    # Greedy from the first step on; the plan is sampled with the run's planner seed.
    assert all(decoding.greedy for role, _, decoding, _ in before if role != "planner")
    assert [d.greedy for role, _, d, _ in before if role == "planner"] == [False]
    assert (ready.answer, ready.node_id, ready.path) == (chain.answer, "n1.1", ["n1", "n1.1"])
    assert ready.metrics["llm_calls"] == chain.metrics["llm_calls"]
    assert ready.citations == chain.citations
    assert ready.provisional is True
    # The run goes on after it, and says so in its result.
    assert default.first is not None
    assert default.first.answer == chain.answer
    assert chain.first is not None
    assert chain.chosen_by == "single"
    assert events.types().index("answer_ready") < events.types().index("branched")


async def test_alternatives_open_at_the_weak_step_and_sample_with_their_own_seeds(
    make_engine: EngineMaker,
) -> None:
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}

    result, models, events = await _run(make_engine, Anytime(answers), max_paths=4, seed=9)

    # Weakest first: the step that found nothing, then (paths still wanted) the one before it.
    branched, then = events.of("branched")
    assert then.node_id == "n1"
    # "Find its river" (n1.1) found nothing new: the alternatives stand beside it.
    assert (branched.node_id, branched.parent_id) == ("n1.1", "n1")
    assert [n.node_id for n in branched.nodes] == ["n1.2", "n1.3"]
    assert any("no new evidence" in reason for reason in branched.reasons)
    off_path = [
        c for c in models.recorder.calls if c.role == "executor" and "Search the" in c.prompt
    ]
    assert {c.decoding.greedy for c in off_path if c.decoding} == {False}
    seeds = {c.decoding.seed for c in off_path if c.decoding}
    # The alternatives beside n1.1, then one beside the root (its path made the fourth answer).
    assert {derive_seed(9, "executor", n, "") for n in ("n1.2", "n1.3", "n2")} <= seeds
    proposal, _ = [c for c in models.recorder.calls if "Step to replace:" in c.prompt]
    assert proposal.decoding is not None
    assert proposal.decoding.greedy is False
    assert proposal.decoding.seed == derive_seed(9, "replanner", "n1.1", "alternatives")
    assert result.status == "done"


async def test_two_agreeing_grounded_alternatives_replace_an_ungrounded_first_answer(
    make_engine: EngineMaker,
) -> None:
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}
    scenario = Anytime(
        answers,
        vote=lambda call: {"choice": call.enum[-1] if call.enum[0] == "n1.1" else call.enum[0]},
    )

    result, models, events = await _run(make_engine, scenario, max_paths=3)

    [vote] = events.of("vote")
    assert vote.options == [["n1.1"], ["n1.2", "n1.3"]]
    [voter] = models.recorder.by_role("voter")
    assert sorted(voter.enum) == ["n1.1", "n1.2"]
    assert "Reached by 2 path(s)" in voter.prompt
    assert result.chosen_id == "n1.2"
    assert result.chosen_by == "vote"
    assert result.answer is not None
    assert result.answer.startswith("The Seine.")
    assert result.first is not None
    assert result.first.answer == "The Loire."


async def test_a_vote_scripted_to_pick_the_worst_cannot_spoil_the_choice(
    make_engine: EngineMaker,
) -> None:
    # Two agreeing grounded alternatives and a first answer without support; the voter names
    # a candidate the rule does not offer it: the rule's ranking decides.
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}
    scenario = Anytime(answers, vote=lambda call: {"choice": "n1.1.9"})

    result, _, _ = await _run(make_engine, scenario, max_paths=3)

    assert result.chosen_by == "rule"
    assert result.chosen_id == "n1.2"


async def test_lone_and_ungrounded_alternatives_never_replace_a_grounded_first_answer(
    make_engine: EngineMaker,
) -> None:
    # The first answer is grounded (its weak point: the second search found nothing). One
    # alternative is grounded but alone, the other cites a quote that is not there; the voter
    # would take the last one shown. No alternative meets the rule: no vote is held.
    answers = {
        "Find its river": GROUNDED_FIRST,
        "Search the Seine": RHONE,
        "Search the rivers of Paris": UNGROUNDED,
    }
    scenario = Anytime(answers, vote=lambda call: {"choice": call.enum[-1]})

    result, models, events = await _run(make_engine, scenario, max_paths=3)

    assert len(events.of("path_completed")) == 3
    assert models.recorder.by_role("voter") == []
    assert result.chosen_by == "first"
    assert result.chosen_id == "n1.1"
    assert result.answer == "Paris.[1]"


async def test_a_sufficient_first_answer_ends_the_run_early(make_engine: EngineMaker) -> None:
    # One step, one search that finds the answer, one grounded sentence: nothing is weak.
    answers = {"Find the capital": GROUNDED_FIRST}
    scenario = Anytime(answers)
    scenario.plan = ["Find the capital"]
    scenario.replans = {}

    result, models, events = await _run(make_engine, scenario, max_paths=4)

    assert result.stop_reason == "first_answer_sufficient"
    assert events.of("branched") == []
    assert result.chosen_by == "single"
    assert len(models.recorder.by_role("executor")) == 2  # the tool call, then its findings


async def test_a_scripted_run_repeated_gives_the_same_events_apart_from_times(
    make_engine: EngineMaker,
) -> None:
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}

    _, _, first = await _run(make_engine, Anytime(answers), max_paths=4)
    _, _, again = await _run(make_engine, Anytime(answers), max_paths=4)

    assert [_timeless(e.model_dump(mode="json")) for e in first] == [
        _timeless(e.model_dump(mode="json")) for e in again
    ]
    assert "answer_ready" in first.types()


async def test_with_siblings_in_parallel_a_repeated_run_ends_with_the_same_tree_and_answer(
    make_engine: EngineMaker,
) -> None:
    # In parallel, events interleave as the jobs happen to end (and the running counts they
    # carry with them); what the run found and answered does not depend on it.
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}

    first, _, _ = await _run(make_engine, Anytime(answers), max_paths=4, max_concurrency=4)
    again, _, _ = await _run(make_engine, Anytime(answers), max_paths=4, max_concurrency=4)

    assert _timeless(first.model_dump(mode="json", exclude={"metrics"})) == _timeless(
        again.model_dump(mode="json", exclude={"metrics"})
    )
    assert len(first.nodes) > 3


_TIMES = frozenset({"ts", "run_id", "seconds", "elapsed_s", "wall_s"})


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _carried(answers: dict[str, dict[str, Any] | str], **kwargs: Any) -> Anytime:
    """The first path answers after its first step with the second planned step undone; the
    search then runs that step on it (`deepen`), which finds the Seine's page."""
    scenario = Anytime(answers, **kwargs)
    scenario.replans = {}
    scenario.tools = {**scenario.tools, "Find its river": ("search", {"query": "seine"})}
    return scenario


async def test_the_first_path_carried_through_its_plan_stands_in_for_its_first_answer(
    make_engine: EngineMaker,
) -> None:
    # The alternatives agree with each other but cite a quote their search did not find; the
    # voter would take the last one shown. The carried answer is kept, with no vote.
    answers = {
        "Find the capital": GROUNDED_FIRST,
        "Find its river": SEINE,
        **dict.fromkeys(ALTERNATIVES, RHONE),
    }
    scenario = _carried(answers, vote=lambda call: {"choice": call.enum[-1]})

    result, models, events = await _run(make_engine, scenario, max_paths=4)

    [ready] = events.of("answer_ready")
    assert (ready.answer, ready.node_id) == ("Paris.[1]", "n1")
    assert result.first is not None
    assert result.first.answer == "Paris.[1]"
    assert (result.chosen_by, result.chosen_id, result.answer) == (
        "carried",
        "n1.1",
        "The Seine.[1]",
    )
    assert models.recorder.by_role("voter") == []
    [vote] = events.of("vote")
    assert vote.reason is not None
    assert "carried" in vote.reason


async def test_a_carried_answer_with_a_rejected_citation_leaves_the_first_answer(
    make_engine: EngineMaker,
) -> None:
    # The step run on the first path answers with a quote its search did not find.
    answers = {"Find the capital": GROUNDED_FIRST, "Find its river": RHONE}
    scenario = _carried(answers, alternatives=[])

    result, models, _ = await _run(make_engine, scenario, max_paths=4)

    assert [n["id"] for n in result.nodes if n["answer"]] == ["n1", "n1.1"]
    assert (result.chosen_by, result.chosen_id, result.answer) == ("first", "n1", "Paris.[1]")
    assert models.recorder.by_role("voter") == []
