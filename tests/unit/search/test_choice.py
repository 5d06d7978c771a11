"""The choice rule: only agreeing, verified, at-least-as-grounded alternatives may replace the
first answer; adversarial candidates never do."""

from __future__ import annotations

import pytest

from agents.choice import Option, carried, may_replace, options_of, rule_rank
from agents.grounding.verify import Grounding
from agents.state import NodeRecord, new_node
from tests.unit.search.trees import answered, cited, grounding

GROUNDED = grounding(1.0, [cited("n1", "Paris is the capital")])


def _leaf(node_id: str, answer: str, found: Grounding) -> NodeRecord:
    parent = None
    node = new_node(parent=parent, index=1, step=f"step {node_id}", planned=[])
    node["id"] = node_id
    return answered(node, answer, found)


def _options(*leaves: NodeRecord) -> tuple[Option, list[Option]]:
    options = options_of(leaves, "n1")
    first = next(o for o in options if o.has_first)
    return first, [o for o in options if not o.has_first]


def test_agreeing_answers_form_one_option_whatever_their_markers_and_case() -> None:
    first, others = _options(
        _leaf("n1", "Paris.[1]", GROUNDED),
        _leaf("n1.2", "paris [1]", GROUNDED),
        _leaf("n2", "Lyon.[1]", GROUNDED),
    )

    assert [leaf["id"] for leaf in first.leaves] == ["n1", "n1.2"]
    assert first.paths == 2
    assert [[leaf["id"] for leaf in o.leaves] for o in others] == [["n2"]]


def test_a_confident_lone_alternative_never_replaces_a_grounded_first_answer() -> None:
    first, [lone] = _options(
        _leaf("n1", "Paris.[1]", GROUNDED),
        _leaf("n1.2", "Lyon.[1]", grounding(1.0, [cited("n1.2", "Lyon is large")])),
    )

    assert not may_replace(lone, first, 0.5)


def test_agreeing_but_ungrounded_paths_never_replace_a_grounded_first_answer() -> None:
    ungrounded = grounding(0.0, [], ["Lyon is the capital."])
    first, [agreeing] = _options(
        _leaf("n1", "Paris.[1]", GROUNDED),
        _leaf("n1.2", "Lyon", ungrounded),
        _leaf("n1.3", "Lyon", ungrounded),
        _leaf("n2", "Lyon", ungrounded),
    )

    assert agreeing.paths == 3
    assert not may_replace(agreeing, first, 0.5)


def test_an_alternative_with_a_rejected_citation_never_replaces_the_first_answer() -> None:
    forged = grounding(1.0, [cited("n1.2", "Lyon is the capital")], rejected=1)
    first, [option] = _options(
        _leaf("n1", "Paris.[1]", GROUNDED),
        _leaf("n1.2", "Lyon.[1]", forged),
        _leaf("n1.3", "Lyon.[1]", forged),
    )

    assert not may_replace(option, first, 0.5)


@pytest.mark.parametrize(
    ("first_paths", "replaced"),
    [
        pytest.param(["n1"], True, id="may_replace_a_lone_first_answer"),
        # A tie goes to the first answer.
        pytest.param(["n1", "n1.1.1"], False, id="does_not_outrank_two_agreeing_first_paths"),
    ],
)
def test_an_alternative_reached_by_two_grounded_paths(
    first_paths: list[str], replaced: bool
) -> None:
    lyon = grounding(1.0, [cited("n1.2", "Lyon is the capital of Gaul")])
    first, [option] = _options(
        *(_leaf(node_id, "Paris.[1]", GROUNDED) for node_id in first_paths),
        _leaf("n1.2", "Lyon.[1]", lyon),
        _leaf("n1.3", "Lyon.[1]", lyon),
    )

    assert may_replace(option, first, 0.5) is replaced
    assert rule_rank([first, option]) is (option if replaced else first)


def test_a_lone_grounded_alternative_may_replace_an_ungrounded_first_answer() -> None:
    first, [option] = _options(
        _leaf("n1", "Lyon", grounding(0.0, [], ["Lyon"])),
        _leaf("n1.2", "Paris.[1]", grounding(1.0, [cited("n1.2", "Paris is the capital")])),
    )

    assert may_replace(option, first, 0.5)


def test_an_options_figures_show_its_representatives_token_confidence_when_known() -> None:
    known = _leaf("n1", "Paris.[1]", GROUNDED)
    known["confidence"] = -0.2149
    kept_before = _leaf("n2", "Lyon.[1]", GROUNDED)
    del kept_before["confidence"]  # a node stored before the field existed

    first, [other] = _options(known, kept_before)

    assert first.confidence == -0.2149
    assert first.figures() == (
        "Reached by 1 path(s); groundedness 1.00; mean token log-probability -0.21; "
        "citations all verified."
    )
    assert other.confidence is None
    assert "log-probability" not in other.figures()


def _chain(*answers: tuple[str, Grounding | None]) -> list[NodeRecord]:
    """The first path n1, n1.1, …: the first node left the second planned step undone; a node
    with an answer of None did not answer."""
    path: list[NodeRecord] = []
    for index, (answer, found) in enumerate(answers):
        node = new_node(
            parent=path[-1] if path else None,
            index=1,
            step=f"step {index}",
            planned=["run the second step"] if index == 0 else [],
        )
        path.append(answered(node, answer, found) if found is not None else node)
    return path


def test_the_first_path_carried_through_its_undone_steps_stands_in_for_the_first_answer() -> None:
    path = _chain(
        ("Johnny.[1]", GROUNDED),
        ("", None),
        ("George.[1]", grounding(1.0, [cited("n1.1.1", "George Raft starred")])),
    )

    assert carried(path[0], path)["id"] == "n1.1.1"


@pytest.mark.parametrize(
    "deeper",
    [
        pytest.param(grounding(1.0, [cited("n1.1", "x")], rejected=1), id="a_rejected_citation"),
        pytest.param(grounding(0.5, [cited("n1.1", "x")], ["George."]), id="less_grounded"),
        pytest.param(grounding(0.0, [], ["George."]), id="no_citation"),
    ],
)
def test_a_carried_answer_that_is_less_verified_leaves_the_first_answer(
    deeper: Grounding,
) -> None:
    path = _chain(("Johnny.[1]", GROUNDED), ("George.[1]", deeper))

    assert carried(path[0], path) is path[0]


def test_a_first_answer_with_nothing_left_undone_is_not_carried() -> None:
    path = _chain(("Johnny.[1]", GROUNDED), ("George.[1]", GROUNDED))
    path[0]["planned"] = []

    assert carried(path[0], path) is path[0]


def test_an_ungrounded_first_answer_is_carried_by_a_verified_partly_grounded_one() -> None:
    half = grounding(0.5, [cited("n1.1", "George Raft starred")], ["He was born in 1895."])
    path = _chain(("Johnny.", grounding(0.0, [], ["Johnny."])), ("George.[1] 1895.", half))

    assert carried(path[0], path)["id"] == "n1.1"
