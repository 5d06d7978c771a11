"""Benchmark 11, KV prefix reuse of the local model: ONE real engine run on the local model
(`LATS_LOCAL_MODEL`, or `--model-path`) with the `local_docs` tool over a tiny folder, done
three times in one process: with saved KV states off (llama.cpp then reuses only what the
previous call left in its context), on (`LATS_LOCAL_KV_CACHE_MB`), and on with the prompt
layout that opens every role's prompt on the path (`LATS_LOCAL_INSTRUCTIONS_LAST`). Reports,
per run, the prompt tokens of every call and those llama.cpp actually evaluated, the model's
time and the wall time, and, on the same calls, what other reuse schemes would have evaluated
(`calls.local_kv.PromptShare`): the unrestricted reuse llama-cpp-python does by itself (of the
last call's context, `prompt_unrestricted`, or of any earlier call's, `prompt_floor`, the least
any prefix reuse could evaluate), and exact reuse with other block sizes.

    .venv/bin/python -m bench --only local_prefix
    LATS_LOCAL_MODEL=qwen2.5-coder-1.5b .venv/bin/python -m bench --only local_prefix

Each run gets a fresh engine and the model-call cache is off, so every run makes its calls
for real; the seed is fixed, and with exact reuse a reply does not depend on what the runner
served before, so runs with and without saved states make the same calls. Every llama.cpp
instance is loaded before the clock starts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.engine import Engine
from agents.params import RunParams
from app import startup
from app.settings import Settings
from calls.local_kv import PromptShare, evaluated
from calls.local_model import LocalChatModel
from calls.local_runner import BLOCK, LlamaRunner, LocalStats
from calls.models import ResilientChatModel, SettingsModelFactory

logger = logging.getLogger(__name__)

# Block sizes whose exact reuse is reported besides the runner's own (`BLOCK`).
BLOCKS = (32, 64, 128, 256)

TASK = "Which writer was from England, Henry Roth or Robert Erskine Childers?"
# Few shared words, so that a search about one writer finds only that writer: the task then
# takes more than one step, and the replanner has something to branch on.
DOCS = {
    "henry_roth.md": "# Henry Roth\n\nHenry Roth (1906-1995) was an American novelist. His "
    "family emigrated from Tysmenitz in Galicia, Austria-Hungary, to New York City when he was "
    "a small child. Call It Sleep (1934) tells of an immigrant boyhood on the Lower East Side.\n",
    "erskine_childers.md": "# Robert Erskine Childers\n\nRobert Erskine Childers (1870-1922) "
    "was an English-born author and Irish nationalist. Mayfair, London, was his birthplace. His "
    "spy story The Riddle of the Sands appeared in 1903. He was executed in Dublin in 1922, "
    "during the Irish Civil War.\n",
    "erskine_hamilton_childers.md": "# Erskine Hamilton Childers\n\nErskine Hamilton "
    "Childers (1905-1974), a son of Robert Erskine Childers, was the fourth President of "
    "Ireland (1973-1974).\n",
}


@dataclass(frozen=True)
class LocalPrefixConfig:
    model_path: Path | None = None  # None: the file of LATS_LOCAL_MODEL
    kv_cache_mb: int = 512
    # A small budget; the other run parameters are the service's defaults (max_concurrency
    # 4 lets sibling branches' calls interleave, as they do in the service).
    max_paths: int = 2
    max_llm_calls: int = 12
    max_depth: int | None = None


def _settings(
    config: LocalPrefixConfig, data_dir: Path, docs: Path, kv_cache_mb: int, shared: bool | None
) -> Settings:
    values: dict[str, Any] = {
        "model": "local",
        "tools": ["local_docs"],
        "local_docs_dir": docs,
        "local_kv_cache_mb": kv_cache_mb,
        "local_instructions_last": shared,
        "data_dir": data_dir,
        # The benchmark counts tokens: a call that waits its turn behind slower ones must not
        # time out and be retried (which would count its prompt twice).
        "model_timeout_s": 600.0,
        "step_timeout_s": 3600.0,
    }
    if config.model_path is not None:
        values["local_model_path"] = config.model_path
    return Settings(_env_file=None, **values)


def _local_model(factory: SettingsModelFactory) -> LocalChatModel:
    model = factory.for_role("planner")
    inner = model.inner if isinstance(model, ResilientChatModel) else model
    assert isinstance(inner, LocalChatModel)
    return inner


def _by_block(shares: list[PromptShare]) -> dict[str, dict[str, int]]:
    """Prompt tokens the run's calls evaluate under each reuse scheme: exact reuse in blocks
    of each size, and unrestricted reuse; from the last call's context and with saved states."""
    schemes: dict[str, int | None] = {str(block): block for block in BLOCKS}
    schemes["unrestricted"] = None
    return {
        name: {
            "context": evaluated(shares, block, saved=False),
            "saved": evaluated(shares, block, saved=True),
        }
        for name, block in schemes.items()
    }


def _row(
    stats: LocalStats, shares: list[PromptShare], wall_s: float, result: Any
) -> dict[str, Any]:
    return {
        "calls": stats.calls,
        "prompt_tokens": stats.prompt_tokens,
        "prompt_evaluated": stats.prompt_evaluated,
        "prompt_reused": stats.prompt_reused,
        "restores": stats.restores,
        "prompt_unrestricted": stats.prompt_unrestricted,
        "prompt_floor": stats.prompt_floor,
        "by_block": _by_block(shares),
        "completion_tokens": stats.completion_tokens,
        "model_s": round(stats.seconds, 2),
        "prompt_s": round(stats.prompt_seconds, 2),
        "prompt_tok_per_s": round(stats.prompt_evaluated / stats.prompt_seconds, 1)
        if stats.prompt_seconds
        else None,
        "wall_s": round(wall_s, 2),
        "status": result.status,
        "paths_completed": result.metrics.get("paths_completed"),
        "llm_calls_by_role": result.metrics.get("llm_calls_by_role"),
        "stop_reason": result.stop_reason,
        "tree": [
            {"depth": n["depth"], "step": n["step"], "status": n["status"]} for n in result.nodes
        ],
        "answer": result.answer,
    }


def _shares(runner: LlamaRunner, calls: int) -> list[PromptShare]:
    """The last `calls` calls' shares (the runner keeps the latest last)."""
    return list(runner.shares)[-calls:] if calls else []


async def run_local_prefix(config: LocalPrefixConfig, work: Path) -> dict[str, Any]:
    """The three runs (saved states off, on, on with the shared layout) and the share of
    prompt evaluation each of the last two saved."""
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    depth = {} if config.max_depth is None else {"max_depth": config.max_depth}
    params = RunParams(
        max_paths=config.max_paths,
        max_llm_calls=config.max_llm_calls,
        use_cache=False,
        **depth,
    )
    # Mode -> (saved states' memory, prompt layout): before (the layout of the model's catalog
    # entry, llama.cpp reusing only the last call's state), with saved states, and with saved
    # states and every role's prompt opening on the path (`local_instructions_last`).
    modes: dict[str, tuple[int, bool | None]] = {
        "off": (0, None),
        "on": (config.kv_cache_mb, None),
        "shared": (config.kv_cache_mb, True),
    }
    engines: dict[str, tuple[Engine, LocalChatModel, Settings]] = {}
    for mode, (mb, shared) in modes.items():
        settings = _settings(config, work / f"data-{mode}", docs, mb, shared)
        factory = SettingsModelFactory(settings)
        factory.check()
        model = _local_model(factory)
        model.load()
        engine = Engine(settings=settings, models=factory, tools=startup.research_tools(settings))
        engines[mode] = (engine, model, settings)
    runs: dict[str, Any] = {}
    for mode, (engine, model, settings) in engines.items():
        runner = model.load()
        before = runner.stats
        async with startup.local_docs_alone(settings):  # the folder loaded into the store
            started = time.monotonic()
            result = await engine.run(TASK, params)
            wall = time.monotonic() - started
        stats = runner.stats - before
        runs[mode] = _row(stats, _shares(runner, stats.calls), wall, result)
        logger.info("local_prefix %s: %s", mode, runs[mode])
    model = engines["on"][1]
    off, on = runs["off"]["prompt_evaluated"], runs["on"]["prompt_evaluated"]
    shared = runs["shared"]["prompt_evaluated"]
    return {
        "model": model.model_path.name,
        "n_ctx": model.n_ctx,
        "threads": model.load().threads,
        "block": BLOCK,
        "kv_cache_mb": config.kv_cache_mb,
        "task": TASK,
        "params": params.model_dump(
            include={"max_paths", "max_llm_calls", "max_depth", "max_candidates", "max_concurrency"}
        ),
        "runs": runs,
        "prompt_evaluated_saved": round(1 - on / off, 3) if off else None,
        "prompt_evaluated_saved_shared": round(1 - shared / off, 3) if off else None,
        # The most any prefix reuse could have saved on the run without saved states: its
        # floor against what llama.cpp's last-call reuse alone evaluated there.
        "prompt_floor_saved": round(1 - runs["off"]["prompt_floor"] / off, 3) if off else None,
        # What exact reuse costs: the tokens it evaluated beyond unrestricted reuse's on the
        # same calls, from the last call's context (states off) and from saved states (on).
        "exact_cost_context": _cost(off, runs["off"]["prompt_unrestricted"]),
        "exact_cost_saved": _cost(on, runs["on"]["prompt_floor"]),
        "same_answer": runs["off"]["answer"] == runs["on"]["answer"],
    }


def _cost(exact: int, unrestricted: int) -> float | None:
    return round(exact / unrestricted - 1, 3) if unrestricted else None


def summary(by_model: dict[str, Any]) -> list[str]:
    """The console lines, per model measured: tokens evaluated per run before/after, wall."""
    lines = []
    for data in by_model.values():
        block = data.get("block")
        lines.append(
            f"local prefix reuse, {data['model']} (n_ctx {data['n_ctx']}"
            + (f", exact reuse in blocks of {block}" if block else "")
            + "):"
        )
        for mode in ("off", "on", "shared"):
            r = data["runs"].get(mode)
            if r is None:
                continue
            lines.append(
                f"  saved states {mode:<3}: {r['calls']} calls, prompt tokens "
                f"{r['prompt_tokens']}, evaluated {r['prompt_evaluated']} (restores "
                f"{r['restores']}), output {r['completion_tokens']}, model {r['model_s']:.1f}s, "
                f"wall {r['wall_s']:.1f}s"
            )
            if "by_block" in r:
                exact = ", ".join(
                    f"{name} {n['context']}/{n['saved']}" for name, n in r["by_block"].items()
                )
                lines.append(f"    same calls, context/saved states: {exact}")
        saved = data["prompt_evaluated_saved"]
        if saved is not None:
            lines.append(f"  prompt tokens evaluated: {saved * 100:.0f}% fewer with saved states")
        shared = data.get("prompt_evaluated_saved_shared")
        if shared is not None:
            lines.append(f"  ... {shared * 100:.0f}% fewer with saved states and the shared layout")
        for key, what in (
            ("exact_cost_context", "states off, against llama-cpp-python's own reuse"),
            ("exact_cost_saved", "states on, against unrestricted reuse of any earlier call"),
        ):
            cost = data.get(key)
            if cost is not None:
                lines.append(f"  exact reuse evaluates {cost * 100:+.0f}% ({what})")
        best = data.get("prompt_floor_saved")
        if best is not None:
            off, on = data["runs"]["off"], data["runs"]["on"]
            lines.append(
                f"  floor (what no prefix reuse could spare): states off {off['prompt_floor']} "
                f"({best * 100:.0f}% below what it evaluated), states on {on['prompt_floor']} "
                f"(it evaluated {on['prompt_evaluated']})"
            )
    return lines
