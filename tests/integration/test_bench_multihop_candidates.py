"""A benchmark run's final rows carry every answer its tree reached and what the anytime search
found weak in its first answer, through the real engine with testkit's scripted reader; the
first answer's row does not."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.multihop import MultihopConfig, run_multihop, scripted_models
from bench.multihop_report import section


async def test_final_rows_list_each_answered_path_with_the_chosen_one_as_the_row_scores_it(
    tmp_path: Path,
) -> None:
    out = await run_multihop(MultihopConfig(limit=2), scripted_models, tmp_path)

    finals = [row for row in out["rows"] if row["config"] in ("chain", "anytime")]
    assert len(finals) == 4
    for row in finals:
        candidates = row["candidates"]
        assert candidates, row["config"]
        [chosen] = [c for c in candidates if c["chosen"]]
        assert (chosen["predicted"], chosen["f1"], chosen["em"]) == (
            row["predicted"],
            row["f1"],
            row["em"],
        )
        assert candidates[0]["first"]  # the greedy first path answers first
        # The scripted reader reports no token confidence: none is made up.
        assert {c["confidence"] for c in candidates} == {None}
    chain = [row for row in finals if row["config"] == "chain"]
    assert all(len(row["candidates"]) == 1 for row in chain)
    # The anytime rows say what their search found weak in the first answer; the chain's not.
    assert all(isinstance(r["first_weak"], list) for r in finals if r["config"] == "anytime")
    assert all("first_weak" not in row for row in chain)
    assert all("candidates" not in row for row in out["rows"] if row["config"] == "chain@first")
    page = "\n".join(section(out))
    assert "Every answer the tree reached (`candidates` in the 2 `anytime` rows" in page
    assert "The first answer was found sufficient" in page
    counts = Counter(row["chosen_by"] for row in finals if row["config"] == "anytime")
    said = ", ".join(f"`{how}` {n}" for how, n in counts.most_common())
    assert f"How the `anytime` answers were chosen: {said}" in page
    # Each way of choosing against the first answers of the same runs, with its question count.
    by_way = next(line for line in page.splitlines() if line.startswith("Against the first"))
    for how, n in counts.items():
        assert f"`{how}` on {n}: answer F1 " in by_way
