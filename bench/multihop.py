"""The multi-hop benchmark: HotpotQA, 2WikiMultihopQA and MuSiQue questions searched by the
real engine, in the distractor setting or the open-corpus one (`bench.multihop_corpus`).

The corpus is the only tool (`tools.local_corpus`, one passage per paragraph), and each search
configuration (`CONFIGS`) runs once a question at one equal model-call budget, on a fresh
engine (a cold model cache) with LangGraph's in-memory checkpointer. Answers are scored by the
official metrics (`bench.multihop_metrics`). The supporting facts an answer predicts are the
(paragraph, sentence id) pairs its verified citations quote: a citation the verifier rejected
predicts nothing. Every verified quote is checked once more, independently of the verifier
(`misverified`): its words must stand in the paragraph it names. The rows are made in
`bench.multihop_rows`.

    .venv/bin/python -m bench --only multihop --limit 10 --model local   # LATS_LOCAL_MODEL's
    .venv/bin/python -m bench --only multihop --limit 2 --model scripted # testkit's reader
    .venv/bin/python -m bench --only multihop --data musique --corpus pooled --model local
    .venv/bin/python -m bench --only multihop --offset 40 --limit 60 --model local  # 41 to 100
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver

from agents.engine import Engine
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from bench.engine_runs import bench_settings
from bench.machine import code_revision
from bench.multihop_collection import pooled_collection
from bench.multihop_corpus import (
    LABELS,
    Pool,
    QuestionCorpus,
    Setting,
    distractor_corpus,
    pooled_corpus,
)
from bench.multihop_data import HOTPOTQA_DEV_100, Question, dataset_name, load
from bench.multihop_rows import (
    FIRST_ROWS,
    Row,
    RowKey,
    append_rows,
    done_rows,
    final_row,
    first_row,
    predicted_answer,
    summarise,
    supporting_fact_metrics,
)
from bench.process import ROOT
from bench.quality import STRATEGIES, inline_threads, quiet_runs
from calls.models import ModelFactory, SettingsModelFactory
from testkit.fakes import FakeModels
from testkit.multihop_reader import MultihopReader
from testkit.policy_models import ThroughPolicy
from tools.local_corpus import NAME as CORPUS_TOOL
from tools.runtime import RateLimiter, ToolRuntime, TtlCache, tool_threads

logger = logging.getLogger(__name__)

__all__ = [
    "CONFIGS",
    "DEFAULT",
    "DEFAULT_CONFIGS",
    "MultihopConfig",
    "Row",
    "params_for",
    "predicted_answer",
    "run_multihop",
    "supporting_fact_metrics",
]

# Configuration name -> run-parameter overrides, applied over `FIXED`. `anytime` is the
# service's default search (no overrides), run once for two rows (`FIRST_ROWS`): its final
# answer, and as `chain@first` its first verified answer, which its greedy first path gives as
# the chain would, at the calls and wall of that moment. `chain` is a plain plan-and-execute
# agent (one path, never branching, nothing revived), kept as a configuration of its own to
# check that the two chains answer alike. The others are bench/quality.py's strategies of the
# same names: `mcts` the PUCT search (the service's default before `anytime`); `breadth` keeps
# every proposal, scores none and prunes none, shallowest first; `beam` keeps the best two per
# layer. `reserve` is `mcts` with `reserve: true`: pruned candidates run once nothing else is
# left, their paths corroborate. `<name>-again` is `<name>` once more: how far two runs of one
# configuration differ (rerun agreement), or whether a loss held (with `--ids`).
# `<name>-threads` is `<name>` run as the service runs it (`THREADED`): every blocking call,
# the model's included, in a worker thread of the loop's pool, where the other configurations
# make them inline (bench/quality.py `inline_threads`), one at a time in the order the engine
# reaches them. Its answers against `<name>`'s say whether a run's answer depends on how its
# calls were scheduled (docs/models.md: it should not).
CONFIGS: dict[str, dict[str, Any]] = {
    "chain": {**STRATEGIES["chain"], "max_paths": 1},
    "anytime": {},
    "breadth": STRATEGIES["breadth"],
    "mcts": STRATEGIES["mcts"],
    "beam": STRATEGIES["beam"],
    "reserve": {**STRATEGIES["mcts"], "reserve": True},
    "chain-again": {**STRATEGIES["chain"], "max_paths": 1},
    "anytime-again": {},
    "mcts-again": STRATEGIES["mcts"],
    "anytime-threads": {},
}
THREADED = frozenset({"anytime-threads"})
DEFAULT = "anytime"
# What a benchmark run compares unless told otherwise: the default search's two rows (final
# and first answer), and the chain run on its own.
DEFAULT_CONFIGS = ("chain", "anytime")
# Every run: path and node limits at their bounds, so the call budget is what stops the search
# (except `chain`, which stops at its one path by definition).
# The deadline at its bound too: a local model on 2 cores can take minutes a call, and a run
# cut by the clock measures the machine, not the search.
FIXED: dict[str, Any] = {"max_paths": 50, "max_nodes": 500, "deadline_s": 7200}
# Task text: the question, and the answer's form the official metrics reward.
TASK = (
    "{question}\n\nAnswer with the shortest phrase that answers the question (a name, a "
    "date, a number, or yes or no), without explanation."
)

ModelsFor = Callable[[Question, Settings], ModelFactory]
"""The models of one question's runs: the same factory for every question, or a script each."""


@dataclass(frozen=True)
class MultihopConfig:
    """Which questions and configurations, at which budget."""

    data: Path = HOTPOTQA_DEV_100
    limit: int | None = None
    offset: int = 0
    """The questions from the (offset + 1)-th of the file on: with `limit`, the next `limit`
    (questions 41 to 100 are offset 40, limit 60)."""
    corpus: Setting = "distractor"
    """`distractor`: each question searches its own paragraphs; `pooled`: every question
    searches one index of every paragraph of the data file (`bench.multihop_corpus`)."""
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
    `<question id>-<configuration>.json` (`-pooled` before `.json` in the open-corpus
    setting): what an answer came from, question by question."""


def params_for(name: str, max_llm_calls: int) -> RunParams:
    """The run parameters of configuration `name` at the budget."""
    return RunParams.model_validate({"max_llm_calls": max_llm_calls, **FIXED, **CONFIGS[name]})


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


async def run_one(
    question: Question,
    name: str,
    config: MultihopConfig,
    settings: Settings,
    models: ModelFactory,
    corpus: QuestionCorpus,
    code: str = "unknown",
) -> list[Row]:
    """One configuration on one question, by the code at commit `code`: the row of its
    answer, and for a configuration of `FIRST_ROWS` the row of its first answer before it
    (when the run gave one)."""
    engine = Engine(
        settings=settings,
        models=models,
        tools=[corpus.tool(corpus_runtime(settings))],
        checkpointer=InMemorySaver(),
    )
    params = params_for(name, config.max_llm_calls)
    started = time.monotonic()
    with contextlib.nullcontext() if name in THREADED else inline_threads():
        task = TASK.format(question=question.question)
        result = await engine.run(task, params, run_id=f"{question.id}-{name}")
    wall = time.monotonic() - started
    if config.traces is not None:
        # The distractor setting's traces keep the names they had before there were two.
        suffix = "" if corpus.setting == "distractor" else f"-{corpus.setting}"
        path = config.traces / f"{question.id}-{name}{suffix}.json"
        write_trace(path, question, corpus, result)
    final = final_row(question, corpus, name, result, wall, code, task)
    first = (
        first_row(question, corpus, FIRST_ROWS[name], result, code) if name in FIRST_ROWS else None
    )
    return [final] if first is None else [first, final]


def write_trace(path: Path, question: Question, corpus: QuestionCorpus, result: RunResult) -> None:
    """A run's whole result beside its question, gold answers and gold facts (named as its
    corpus names paragraphs), as JSON at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    trace = {
        "question": question.question,
        "gold": question.answer,
        "aliases": question.aliases,
        "corpus": corpus.setting,
        "supporting_facts": corpus.gold_facts,
        "result": result.model_dump(mode="json"),
    }
    path.write_text(json.dumps(trace, indent=1) + "\n", encoding="utf-8")


def _chosen(config: MultihopConfig) -> list[Question]:
    """The questions of this process: `offset` and `limit`, then `ids`, then its shard."""
    if config.offset < 0:
        raise ValueError(f"offset must be at least 0, not {config.offset}")
    end = None if config.limit is None else config.offset + config.limit
    questions = load(config.data, end)[config.offset :]
    if config.ids:
        questions = [q for q in questions if q.id.startswith(config.ids)]
        if not questions:
            raise ValueError(f"no question's id starts with any of {', '.join(config.ids)}")
    index, of = config.shard
    if not 0 <= index < of:
        raise ValueError(f"shard {index}/{of}: want 0 <= i < n")
    return questions[index::of]


@contextlib.asynccontextmanager
async def corpora(
    config: MultihopConfig, work_dir: Path
) -> AsyncIterator[tuple[Callable[[Question], QuestionCorpus], Pool | None]]:
    """What each question searches in `config.corpus`; in the pooled setting, the pool (of
    every line of the data file, whatever `limit`, `ids` and the shard), stored once as one
    collection of a store in `work_dir` and searched with the `documents` tool
    (bench/multihop_collection.py)."""
    if config.corpus == "distractor":
        yield (lambda question: distractor_corpus(question, config.passages)), None
        return
    if config.corpus != "pooled":
        raise ValueError(f"unknown corpus setting {config.corpus!r}: distractor or pooled")
    pool = Pool.of(load(config.data))
    collection = await pooled_collection(pool.documents, work_dir / "pool.sqlite")
    try:

        def tool(runtime: ToolRuntime) -> BaseTool:
            return collection.tool(runtime, config.passages)

        def corpus_of(question: Question) -> QuestionCorpus:
            return pooled_corpus(question, pool, tool, collection.doc_of, collection.facts_of)

        yield corpus_of, pool
    finally:
        await collection.close()


def _kept(
    done: dict[tuple[str, str, str], Row], question: Question, name: str, setting: str
) -> list[Row] | None:
    """The rows of `name` on `question` the progress file holds (its first answer's too, if
    there is one), or None when the run is still to do."""
    final = done.get((question.id, name, setting))
    if final is None:
        return None
    first = done.get((question.id, FIRST_ROWS.get(name, ""), setting))
    return [first, final] if first is not None else [final]


async def run_multihop(
    config: MultihopConfig, models_for: ModelsFor, work_dir: Path
) -> dict[str, Any]:
    """Every configuration on every question, in one setting, JSON-ready (`save` writes it).
    Rows the progress file holds for this setting are kept, not run again."""
    questions = _chosen(config)
    unknown = sorted(set(config.configs + config.measured) - set(CONFIGS))
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; known: {list(CONFIGS)}")
    settings = bench_settings(
        work_dir, tool_result_max_chars=config.tool_result_max_chars, **config.settings
    )
    done = done_rows(config.progress)
    code = code_revision(ROOT)
    setting = config.corpus
    async with corpora(config, work_dir) as (corpus_of, pool):
        rows = await _run_questions(config, questions, corpus_of, models_for, settings, done, code)
    return {
        "config": {
            "data": shown_path(config.data),
            "dataset": dataset_name(config.data),
            "corpus": setting,
            "pool": None if pool is None else {"documents": len(pool.documents)},
            "questions": len(questions),
            "offset": config.offset,
            "ids": list(config.ids),
            "max_llm_calls": config.max_llm_calls,
            "tool_result_max_chars": config.tool_result_max_chars,
            "passages": config.passages,
            "configs": {name: CONFIGS[name] for name in config.configs + config.measured},
            "first_rows": {
                n: FIRST_ROWS[n] for n in config.configs + config.measured if n in FIRST_ROWS
            },
            "measured": list(config.measured),
            "fixed": FIXED,
            "default": DEFAULT,
            "task": TASK,
        },
        "totals": summarise(rows),
        "rows": rows,
    }


async def _run_questions(
    config: MultihopConfig,
    questions: Sequence[Question],
    corpus_of: Callable[[Question], QuestionCorpus],
    models_for: ModelsFor,
    settings: Settings,
    done: dict[RowKey, Row],
    code: str,
) -> list[Row]:
    """Every configuration on every question, in order; the progress file's rows kept."""
    setting = config.corpus
    rows: list[Row] = []
    with quiet_runs():
        for number, question in enumerate(questions, start=1):
            corpus = corpus_of(question)
            for name in config.configs:
                kept = _kept(done, question, name, setting)
                if kept is None:
                    models = models_for(question, settings)
                    kept = await run_one(question, name, config, settings, models, corpus, code)
                    append_rows(config.progress, kept)
                rows += kept
            for name in config.measured:
                rows += _kept(done, question, name, setting) or []
            logger.info("multihop: %s/%s questions (%s)", number, len(questions), setting)
    return rows


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
    """One line per configuration for the terminal, the setting named."""
    setting = LABELS.get(out["config"].get("corpus", "distractor"), "")
    return [
        f"multihop {name:<17} EM {t['em']:.2f}  F1 {t['f1']:.2f}  SP F1 {t['sp_f1']:.2f}  "
        f"grounded {t['groundedness']:.2f}  calls {t['llm_calls']:.1f}  "
        f"misverified {t['misverified']}/{t['citations']}  ({setting})"
        for name, t in out["totals"].items()
    ]
