"""The multi-hop benchmark's smoke run with the bundled local model (SmolLM2 through llama.cpp,
no key, no network): one HotpotQA question, the single chain and the default search, through
`python -m bench --only multihop --model local`. Its answers are weak; what is checked is that
every stage ran, the metrics are computed, and every citation shown as verified really is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench import run_bench

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
# One question, the single chain and the default search, at most 8 model calls each. Questions
# after the first add only model time: tests/integration/test_bench_multihop.py runs two.
OPTIONS = ("--limit", "1", "--model", "local", "--configs", "chain,mcts", "--budget", "8")


def test_a_question_with_the_bundled_model_end_to_end(tmp_path: Path) -> None:
    code, results = run_bench("multihop", tmp_path, *OPTIONS)

    out = json.loads((results / "multihop.json").read_text(encoding="utf-8"))
    assert code == 0
    assert [(r["config"], r["llm_calls"] <= 8) for r in out["rows"]] == [
        ("chain", True),
        ("mcts", True),
    ]
    for row in out["rows"]:
        assert row["status"] in ("done", "failed")
        assert 0.0 <= row["f1"] <= 1.0
        assert 0.0 <= row["sp_f1"] <= 1.0
        assert row["tool_calls"] >= 0
        assert row["misverified"] == 0  # every verified citation's quote is in its paragraph
    assert set(out["totals"]) == {"chain", "mcts"}
    assert all(t["misverified"] == 0 for t in out["totals"].values())
