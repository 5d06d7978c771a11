"""The multi-hop benchmark with a Gemini model, as a user with a key runs it: `--model
google_genai:gemini-2.5-flash`, nothing else changed, the real langchain-google-genai client
against the simulator, which answers every role as testkit's multi-hop reader does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.gemini_roles import fake_call, to_sim_reply
from testkit.gemini_sim import Reply as SimReply
from testkit.gemini_sim import Script, SimRequest, SimulatorMaker
from testkit.multihop_reader import TITLE_QUESTION, MultihopReader
from tests.support.bench import run_bench
from tools.local_corpus import NAME as CORPUS_TOOL

pytestmark = pytest.mark.e2e

GEMINI = "google_genai:gemini-2.5-flash"


def reader_script(question: str) -> Script:
    reader = MultihopReader(question, CORPUS_TOOL)

    def script(request: SimRequest) -> SimReply:
        return to_sim_reply(reader(fake_call(request)))

    return script


def test_the_benchmark_runs_unchanged_with_a_gemini_model(
    tmp_path: Path, gemini_sim: SimulatorMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(TITLE_QUESTION) + "\n", encoding="utf-8")
    sim = gemini_sim(reader_script(str(TITLE_QUESTION["question"])))
    monkeypatch.setenv("LATS_MODEL_RPS", "0")  # no pacing against the simulator

    code, results = run_bench(
        "multihop", tmp_path, "--data", str(data), "--model", GEMINI, "--configs", "chain,mcts"
    )

    assert code == 0
    out = json.loads((results / "multihop.json").read_text(encoding="utf-8"))
    assert out["model"] == GEMINI
    rows = out["rows"]
    assert [(row["config"], row["predicted"], row["f1"]) for row in rows] == [
        ("chain", "Ann Smith", 1.0),
        ("mcts", "Ann Smith", 1.0),
    ]
    # The citation quotes the gold sentence, verified by the rule, not taken on the model's word.
    for row in rows:
        assert (row["citations"], row["misverified"], row["groundedness"]) == (1, 0, 1.0)
        assert (row["sp_precision"], row["sp_recall"]) == (1.0, 1.0)
    # Every model call of both runs went through the real client to the simulator.
    assert len(sim.answered(200)) == sum(row["llm_calls"] for row in rows) > 0
    assert "Model: google_genai:gemini-2.5-flash" in (results / "b.md").read_text(encoding="utf-8")
