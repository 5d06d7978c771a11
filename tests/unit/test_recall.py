"""The recollection of a thread's earlier runs: passages ranked by relevance to the new task,
bounded, each once, under ids unique across runs; the planner's and the prompts' view of it."""

from __future__ import annotations

from agents.grounding.evidence import Evidence, evidence_source
from agents.prompts import planner_messages
from agents.recall import KNOWN_NODE_ID, EarlierRun, known_node, known_summary, recall, shown_path
from agents.state import new_node


def _item(node_id: str, k: int, title: str, text: str) -> Evidence:
    return Evidence(
        id=f"{node_id}/{k}",
        node_id=node_id,
        tool="search",
        source=evidence_source(title, f"https://example.org/{title}"),
        text=text,
        sentences=[],
    )


def _run(run_id: str, question: str, *items: Evidence, cited: tuple[str, ...] = ()) -> EarlierRun:
    return EarlierRun(
        run_id=run_id,
        question=question,
        answer=f"answer {run_id}",
        cited=list(cited),
        evidence=list(items),
    )


RIVER = _item("n1", 1, "Seine", "The Seine flows through Paris to the English Channel.")
TOWER = _item("n1", 2, "Eiffel Tower", "The Eiffel Tower is 330 metres tall.")
CHEESE = _item("n1.1", 1, "Brie", "Brie is a soft cheese made near Paris.")


def test_passages_are_ranked_by_relevance_to_the_new_task() -> None:
    earlier = [_run("r1", "Tell me about Paris", TOWER, CHEESE, RIVER)]

    known = recall("Where does the Seine river reach the sea?", earlier, max_items=2)

    assert known is not None
    # The Seine matches the task; Brie the earlier question ("Paris"); the tower neither.
    assert [item["source"]["title"] for item in known["evidence"]] == ["Seine", "Brie"]


def test_a_cited_passage_comes_first_among_equals_and_the_count_is_bounded() -> None:
    earlier = [_run("r1", "q", TOWER, CHEESE, cited=("soft cheese",))]

    known = recall("unrelated words", earlier, max_items=1)

    assert known is not None
    assert [item["source"]["title"] for item in known["evidence"]] == ["Brie"]


def test_a_passage_found_by_two_runs_is_recalled_once_under_a_run_unique_id() -> None:
    earlier = [_run("r1", "q1", RIVER), _run("r2", "q2", RIVER, TOWER)]

    known = recall("Seine", earlier)

    assert known is not None
    ids = [item["id"] for item in known["evidence"]]
    assert ids == ["r2/n1/1", "r2/n1/2"]
    assert {item["node_id"] for item in known["evidence"]} == {KNOWN_NODE_ID}


def test_only_the_latest_turns_are_kept_and_nothing_earlier_means_no_recollection() -> None:
    earlier = [_run(f"r{i}", f"question {i}") for i in range(6)]

    known = recall("q", earlier, max_turns=2)

    assert known is not None
    assert [t["question"] for t in known["turns"]] == ["question 4", "question 5"]
    assert recall("q", []) is None


def test_the_known_step_comes_before_a_path_with_the_recalled_evidence() -> None:
    known = recall("Seine", [_run("r1", "Which river?", RIVER)])
    assert known is not None
    root = new_node(parent=None, index=1, step="next", planned=[])

    shown = shown_path(known, [root])

    assert [n["id"] for n in shown] == [KNOWN_NODE_ID, "n1"]
    assert known_node(known)["status"] == "done"
    assert known_node(known)["evidence"][0]["text"] == RIVER["text"]
    assert shown_path(None, [root]) == [root]


def test_the_planner_is_told_what_is_known_inside_a_fence() -> None:
    known = recall("Seine", [_run("r1", "Which river?", RIVER)])
    assert known is not None

    told = planner_messages("And its length?", 3, known_summary(known))[-1].text
    cold = planner_messages("And its length?", 3)[-1].text

    assert "Already known from earlier questions on this thread" in told
    assert "Earlier question: Which river?" in told
    assert cold == "Task: And its length?"
