"""The multi-hop benchmark: HotpotQA questions (distractor setting) searched by the real engine.

Per question, its own paragraphs are the only tool (`tools.local_corpus`, one passage per
paragraph), and each search configuration (`CONFIGS`) runs once at one equal model-call budget,
on a fresh engine (a cold model cache) with LangGraph's in-memory checkpointer. Answers are
scored by the official metrics (`bench.multihop_metrics`). The supporting facts an answer
predicts are the (title, sentence id) pairs its verified citations quote: a citation the
verifier rejected predicts nothing. Every verified quote is checked once more, independently
of the verifier (`misverified`): its words must stand in the paragraph it names.

    .venv/bin/python -m bench --only multihop --limit 10 --model local   # LATS_LOCAL_MODEL's
    .venv/bin/python -m bench --only multihop --limit 2 --model scripted # testkit's reader
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import unquote

from langgraph.checkpoint.memory import InMemorySaver

from agents.engine import Engine
from agents.grounding.corroborate import agrees
from agents.grounding.verify import Citation
from agents.params import RunParams
from agents.result import RunResult
from agents.state import Source
from agents.tree import from_reserve
from app.settings import Settings
from bench.engine_runs import bench_settings
from bench.machine import code_revision
from bench.multihop_data import HOTPOTQA_DEV_100, Question, documents, load
from bench.multihop_metrics import Scores, score_question, supporting_fact_scores
from bench.process import ROOT
from bench.quality import STRATEGIES, inline_threads, quiet_runs
from calls.models import ModelFactory, SettingsModelFactory
from testkit.fakes import FakeModels
from testkit.multihop_reader import MultihopReader
from testkit.policy_models import ThroughPolicy
from tools.local_corpus import NAME as CORPUS_TOOL
from tools.local_corpus import URL_SCHEME, build_corpus_tool
from tools.runtime import RateLimiter, ToolRuntime, TtlCache, tool_threads

logger = logging.getLogger(__name__)

# Configuration name -> run-parameter overrides, applied over `FIXED`. `chain` is a plain
# plan-and-execute agent (one path, never branching, nothing revived); the others are
# bench/quality.py's strategies of the same names at the service's defaults: `breadth` keeps
# every proposal, scores none and prunes none, shallowest first; `mcts` is the service's
# default; `beam` keeps the best two per layer. `reserve` is `mcts` with `reserve: true`:
# pruned candidates run once nothing else is left, their paths corroborate. `chain-again` is
# `chain` once more: how far two runs of one configuration differ; `mcts-again` the default
# once more (run with `chain-again` on chosen questions, `--ids`: did a loss hold?).
CONFIGS: dict[str, dict[str, Any]] = {
    "chain": {**STRATEGIES["chain"], "max_paths": 1},
    "breadth": STRATEGIES["breadth"],
    "mcts": STRATEGIES["mcts"],
    "beam": STRATEGIES["beam"],
    "reserve": {**STRATEGIES["mcts"], "reserve": True},
    "chain-again": {**STRATEGIES["chain"], "max_paths": 1},
    "mcts-again": STRATEGIES["mcts"],
}
DEFAULT = "mcts"
# What a benchmark run compares unless told otherwise: the four.
DEFAULT_CONFIGS = ("chain", "breadth", "mcts", "beam")
# Every run: path and node limits at their bounds, so the call budget is what stops the search
# (except `chain`, which stops at its one path by definition).
FIXED: dict[str, Any] = {"max_paths": 50, "max_nodes": 500}
# Task text: the question, and the answer's form the official metrics reward.
TASK = (
    "{question}\n\nAnswer with the shortest phrase that answers the question (a name, a "
    "date, a number, or yes or no), without explanation."
)
_LINK = re.compile(r"\[[^\]]*\]\([^)\s]*\)")  # [title](url), as an uncited answer may
_MARKER = re.compile(r"\s*\[\d{1,6}\]")  # a citation marker

ModelsFor = Callable[[Question, Settings], ModelFactory]
"""The models of one question's runs: the same factory for every question, or a script each."""


@dataclass(frozen=True)
class MultihopConfig:
    """Which questions and configurations, at which budget."""

    data: Path = HOTPOTQA_DEV_100
    limit: int | None = None
    configs: tuple[str, ...] = DEFAULT_CONFIGS
    max_llm_calls: int = 40
    # Over the 100 vendored questions (each question and gold title as a query, 5 passages),
    # every gold sentence of a gold paragraph shown is shown whole at 5,000 characters; at the
    # service's default of 3,000, 22 of 592 are cut off.
    tool_result_max_chars: int = 5000
    passages: int = 5
    settings: dict[str, Any] = field(default_factory=dict)
    """Further settings for every run (e.g. timeouts for a slow local model)."""
    measured: tuple[str, ...] = ()
    """Configurations reported from the rows `progress` already holds, over the questions it
    has them for, and never run (a configuration measured on fewer questions than the rest)."""
    shard: tuple[int, int] = (0, 1)
    """(i, n): run only the questions whose position is i modulo n, so that n processes share
    one long run (each appends to the same `progress` file; a last run with the default
    (0, 1) then only reads the rows back)."""
    progress: Path | None = None
    """A JSON Lines file of the rows done so far: each row is appended as it ends, and the
    rows already there are kept instead of run again (a run of hours can be taken up)."""
    ids: tuple[str, ...] = ()
    """Only the questions whose id starts with one of these (after `limit`): a few questions
    looked at again, e.g. with `traces`."""
    traces: Path | None = None
    """A directory where each run's whole result (its tree: every node's step, tool calls,
    evidence, answer, grounding and score; the chosen path) is written as
    `<question id>-<configuration>.json`: what an answer came from, question by question."""


class Row(TypedDict):
    id: str
    type: str
    config: str
    gold: str
    answer: str | None  # the run's answer as given
    predicted: str | None  # what is scored (`predicted_answer`)
    em: float
    f1: float
    precision: float
    recall: float
    sp_em: float
    sp_f1: float
    sp_precision: float
    sp_recall: float
    joint_f1: float
    groundedness: float | None
    citations: int
    rejected: int
    rejected_why: dict[str, int]  # the verifier's reasons, counted
    misverified: int  # verified citations whose quote the independent check does not find
    status: str
    stop_reason: str | None
    llm_calls: int
    tokens: int
    tool_calls: int
    paths: int
    wall_s: float
    gold_seen: float  # share of the gold paragraphs that any tool call of the run showed
    gold_on_path: float  # the same for the chosen path's sources
    revived: int  # answered paths run from the reserve
    agreeing: int  # other answered paths whose answer agrees with the chosen one
    nodes: int  # the tree's nodes, run or not
    branched: int  # nodes the replanner gave two or more distinct next steps
    pruned: int  # nodes cut without running (by the evaluator's score or the search)
    code: str  # the commit of the code that made the row (bench/machine.py: code_revision)


def params_for(name: str, max_llm_calls: int) -> RunParams:
    """The run parameters of configuration `name` at the budget."""
    return RunParams.model_validate({"max_llm_calls": max_llm_calls, **FIXED, **CONFIGS[name]})


def predicted_answer(answer: str | None) -> str | None:
    """What of a run's answer is scored: its first non-empty line, citation links and
    markers removed."""
    if answer is None:
        return None
    text = _MARKER.sub("", _LINK.sub("", answer))
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def supporting_fact_metrics(question: Question, predicted: Sequence[tuple[str, int]]) -> Scores:
    """Supporting-fact EM/F1 of predicted (title, sent_id) pairs, titles as in the data file
    (`CorpusDocument.doc_id`)."""
    return supporting_fact_scores(predicted, question.supporting_facts)


def cited_facts(citations: Iterable[Citation]) -> list[tuple[str, int]]:
    """The (title, sent_id) pairs the verified citations quote, in order, each once."""
    facts: list[tuple[str, int]] = []
    for citation in citations:
        url = citation["source"]["url"]
        if not url.startswith(URL_SCHEME):
            continue
        for sent_id in citation["sent_ids"]:
            fact = (unquote(url.removeprefix(URL_SCHEME)), sent_id)
            if fact not in facts:
                facts.append(fact)
    return facts


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def misverified(question: Question, citations: Iterable[Citation]) -> int:
    """Verified citations whose quote the paragraph they name does not hold, by a check of
    its own: nine in ten of the quote's words, in order, within the paragraph's words."""
    paragraphs = {doc.doc_id: _words(doc.text) for doc in documents(question)}
    wrong = 0
    for citation in citations:
        url = citation["source"]["url"]
        text = paragraphs.get(unquote(url.removeprefix(URL_SCHEME)), [])
        quote = _words(citation["quote"])
        found, at = 0, 0
        for word in quote:
            try:
                at = text.index(word, at) + 1
                found += 1
            except ValueError:
                continue
        if not quote or found < 0.9 * len(quote):
            wrong += 1
    return wrong


def corpus_runtime(settings: Settings) -> ToolRuntime:
    """A runtime of its own for one run's corpus tool: nothing remote, so no spacing, no
    retries, and a fresh cache."""
    return ToolRuntime(
        name=CORPUS_TOOL,
        timeout_s=settings.tool_timeout_s,
        max_retries=0,
        max_chars=settings.tool_result_max_chars,
        cache_ttl_s=settings.tool_cache_ttl_s,
        limiter=RateLimiter(0.0, clock=time.monotonic, sleep=asyncio.sleep),
        cache=TtlCache(),
        threads=tool_threads(settings.tool_max_workers),
    )


def _doc_ids(sources: Iterable[Source]) -> set[str]:
    """The corpus documents that `sources` cite (`corpus://<doc_id>` URLs)."""
    return {
        unquote(source["url"].removeprefix(URL_SCHEME))
        for source in sources
        if source["url"].startswith(URL_SCHEME)
    }


async def run_one(
    question: Question,
    name: str,
    config: MultihopConfig,
    settings: Settings,
    models: ModelFactory,
    code: str = "unknown",
) -> Row:
    """One configuration on one question, by the code at commit `code`; the row holds its
    answer scores."""
    tool = build_corpus_tool(documents(question), corpus_runtime(settings), k=config.passages)
    engine = Engine(settings=settings, models=models, tools=[tool], checkpointer=InMemorySaver())
    params = params_for(name, config.max_llm_calls)
    started = time.monotonic()
    with inline_threads():
        result = await engine.run(
            TASK.format(question=question.question), params, run_id=f"{question.id}-{name}"
        )
    wall = time.monotonic() - started
    if config.traces is not None:
        write_trace(config.traces / f"{question.id}-{name}.json", question, result)
    predicted = predicted_answer(result.answer)
    facts = cited_facts(result.citations)
    scores = score_question(question.answer, question.supporting_facts, predicted, facts)
    gold = {title for title, _ in question.supporting_facts}
    seen = _doc_ids([s for node in result.nodes for s in node["sources"]])
    revived, agreeing = _paths_of(result)
    branched, pruned = _tree_of(result)
    return {
        "id": question.id,
        "type": question.type,
        "config": name,
        "gold": question.answer,
        "answer": result.answer,
        "predicted": predicted,
        "em": scores.answer.em,
        "f1": round(scores.answer.f1, 4),
        "precision": round(scores.answer.precision, 4),
        "recall": round(scores.answer.recall, 4),
        "sp_em": scores.supporting.em,
        "sp_f1": round(scores.supporting.f1, 4),
        "sp_precision": round(scores.supporting.precision, 4),
        "sp_recall": round(scores.supporting.recall, 4),
        "joint_f1": round(scores.joint.f1, 4),
        "groundedness": result.groundedness,
        "citations": len(result.citations),
        "rejected": len(result.rejected),
        "rejected_why": dict(Counter(r["reason"] for r in result.rejected)),
        "misverified": misverified(question, result.citations),
        "status": result.status,
        "stop_reason": result.stop_reason,
        "llm_calls": int(result.metrics.get("llm_calls", 0)),
        "tokens": int(result.metrics.get("input_tokens", 0))
        + int(result.metrics.get("output_tokens", 0)),
        "tool_calls": int(result.metrics.get("tool_calls", 0)),
        "paths": int(result.metrics.get("paths_completed", 0)),
        "wall_s": round(wall, 3),
        "gold_seen": _share(gold, seen),
        "gold_on_path": _share(gold, _doc_ids(result.sources)),
        "revived": revived,
        "agreeing": agreeing,
        "nodes": len(result.nodes),
        "branched": branched,
        "pruned": pruned,
        "code": code,
    }


def write_trace(path: Path, question: Question, result: RunResult) -> None:
    """A run's whole result beside its question and gold answer, as JSON at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    trace = {
        "question": question.question,
        "gold": question.answer,
        "supporting_facts": question.supporting_facts,
        "result": result.model_dump(mode="json"),
    }
    path.write_text(json.dumps(trace, indent=1) + "\n", encoding="utf-8")


def _paths_of(result: RunResult) -> tuple[int, int]:
    """How many answered paths ran from the reserve, and how many agree with the chosen one."""
    nodes = {node["id"]: node for node in result.nodes}
    leaves = [node for node in result.nodes if node["answer"]]
    chosen = nodes.get(result.chosen_id or "")
    revived = sum(1 for leaf in leaves if from_reserve(nodes, leaf))
    agreeing = sum(
        1
        for leaf in leaves
        if chosen is not None
        and leaf["id"] != chosen["id"]
        and agrees(leaf["answer"] or "", chosen["answer"] or "")
    )
    return revived, agreeing


def _tree_of(result: RunResult) -> tuple[int, int]:
    """How many nodes have two children or more, and how many nodes were pruned: where the
    search had a choice to make, and how often it cut one."""
    children = Counter(node["parent_id"] for node in result.nodes if node["parent_id"])
    branched = sum(1 for count in children.values() if count >= 2)
    pruned = sum(1 for node in result.nodes if node["status"] == "pruned")
    return branched, pruned


def _done_rows(progress: Path | None) -> dict[tuple[str, str], Row]:
    if progress is None or not progress.exists():
        return {}
    lines = progress.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line]
    return {(row["id"], row["config"]): row for row in rows}


def _append_row(progress: Path | None, row: Row) -> None:
    if progress is not None:
        progress.parent.mkdir(parents=True, exist_ok=True)
        with progress.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def _share(gold: set[str], found: set[str]) -> float:
    return round(len(gold & found) / len(gold), 4) if gold else 0.0


def summarise(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per configuration, means over its questions (wall: the median)."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(row["config"] for row in rows):
        mine: list[Mapping[str, Any]] = [row for row in rows if row["config"] == name]
        means = {
            key: round(statistics.fmean(float(row[key]) for row in mine), 4)
            for key in (
                "em",
                "f1",
                "sp_em",
                "sp_precision",
                "sp_recall",
                "sp_f1",
                "joint_f1",
                "llm_calls",
                "tokens",
                "tool_calls",
                "gold_seen",
                "gold_on_path",
            )
        }
        grounded = [row["groundedness"] for row in mine if row["groundedness"] is not None]
        means["groundedness"] = round(statistics.fmean(grounded), 4) if grounded else 0.0
        done = sum(1 for row in mine if row["status"] == "done")
        wall = round(statistics.median(row["wall_s"] for row in mine), 3)
        counts = {key: sum(int(row[key]) for row in mine) for key in ("citations", "misverified")}
        out[name] = {"n": len(mine), "done": done, **means, **counts, "wall_s": wall}
    return out


async def run_multihop(
    config: MultihopConfig, models_for: ModelsFor, work_dir: Path
) -> dict[str, Any]:
    """Every configuration on every question, JSON-ready (`save` writes it)."""
    questions = load(config.data, config.limit)
    if config.ids:
        questions = [q for q in questions if q.id.startswith(config.ids)]
        if not questions:
            raise ValueError(f"no question's id starts with any of {', '.join(config.ids)}")
    index, of = config.shard
    if not 0 <= index < of:
        raise ValueError(f"shard {index}/{of}: want 0 <= i < n")
    questions = questions[index::of]
    unknown = sorted(set(config.configs + config.measured) - set(CONFIGS))
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; known: {list(CONFIGS)}")
    settings = bench_settings(
        work_dir, tool_result_max_chars=config.tool_result_max_chars, **config.settings
    )
    done = _done_rows(config.progress)
    code = code_revision(ROOT)
    rows: list[Row] = []
    with quiet_runs():
        for number, question in enumerate(questions, start=1):
            for name in config.configs:
                kept = done.get((question.id, name))
                if kept is None:
                    kept = await run_one(
                        question, name, config, settings, models_for(question, settings), code
                    )
                    _append_row(config.progress, kept)
                rows.append(kept)
            rows += [done[key] for name in config.measured if (key := (question.id, name)) in done]
            logger.info("multihop: %s/%s questions", number, len(questions))
    out = {
        "config": {
            "data": shown_path(config.data),
            "questions": len(questions),
            "max_llm_calls": config.max_llm_calls,
            "tool_result_max_chars": config.tool_result_max_chars,
            "passages": config.passages,
            "configs": {name: CONFIGS[name] for name in config.configs + config.measured},
            "measured": list(config.measured),
            "fixed": FIXED,
            "default": DEFAULT,
            "task": TASK,
        },
        "totals": summarise(rows),
        "rows": rows,
    }
    return out


def shown_path(path: Path) -> str:
    """`path` as the results and docs show it: relative to the checkout when inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else path)


def scripted_models(question: Question, settings: Settings) -> ModelFactory:
    """testkit's scripted reader for `question`, behind the production call policy."""
    return ThroughPolicy(FakeModels(MultihopReader(question.question, CORPUS_TOOL)), settings)


def model_label(model: str | None) -> str:
    """How the results name the model: `local` with the local model it stands for."""
    if model == "scripted":
        return "scripted (testkit's reader)"
    settings = Settings(model=model) if model else Settings()
    if settings.model == "local":
        return f"local ({settings.local_model})"
    return settings.model


def engine_settings_for(model: str | None) -> dict[str, Any]:
    """The settings the runs' engine is given for `model`: the model string a user's service
    would have, so that every default that follows from it (the local model's quote choices)
    is the user's; none for the scripted reader."""
    if model == "scripted":
        return {}
    return {"model": (Settings(model=model) if model else Settings()).model}


def models_for(model: str | None) -> ModelsFor:
    """The models of the runs: `scripted` (testkit's reader), or the factory a user's service
    would build from `model` (an init_chat_model string, or `local`) or, when None, from the
    environment (LATS_MODEL...), checked before the first question."""
    if model == "scripted":
        return scripted_models
    factory = SettingsModelFactory(Settings(model=model) if model else Settings())
    factory.check()

    def same(question: Question, settings: Settings) -> ModelFactory:
        return factory

    return same


def summary(out: dict[str, Any]) -> list[str]:
    """One line per configuration for the terminal."""
    return [
        f"multihop {name:<8} EM {t['em']:.2f}  F1 {t['f1']:.2f}  SP F1 {t['sp_f1']:.2f}  "
        f"grounded {t['groundedness']:.2f}  calls {t['llm_calls']:.1f}  "
        f"misverified {t['misverified']}/{t['citations']}"
        for name, t in out["totals"].items()
    ]
