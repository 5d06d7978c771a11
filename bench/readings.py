"""Readings: a first path's evidence read again, to see whether reading pays where branching
does not.

Where the multi-hop benchmark's first answer was wrong, its first path had mostly read every gold
paragraph (docs/benchmarks.md §11): the model read the evidence into a wrong answer, and paths
that retrieve more do not mend that. This replays, from the runs' traces (`--traces`), the
responder on the first answer's path: once greedily, as the run did (a check that the replay is
the run's: the same answer), then `samples` times sampled, each with a seed of its own
(`write_answer`'s `salt`), at `temperature` (the responder's own, 0.2, makes near-copies). No
tool is called and no search runs: only the responder.

The readings' answers are grouped as the choice groups paths' answers (`agrees`). `replaced`
is the rule a service could run without knowing the gold answer: the greedy reading stands
unless another answer was reached by more readings than it, by two at least, and one of them
is fully verified. `majority` is plain self-consistency (the most readings; a tie keeps the
greedy one's answer). `any_right` counts questions where some reading was right: what the
best rule over these readings could reach.

    python -m bench.readings --traces DIR [DIR ...] --samples 4 --temperature 0.7 \
        --out bench/results/NAME/readings.json

with `LATS_LOCAL_MODEL` naming the model that made the traces.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agents.accounting import Accountant
from agents.choice import fully_verified
from agents.context import RunContext
from agents.events import discard
from agents.grounding.corroborate import agreeing_groups
from agents.nodes.responder import write_answer
from agents.params import RunParams
from agents.state import NodeRecord
from app.settings import Settings
from bench.engine_runs import bench_settings
from bench.multihop import TASK, MultihopConfig, engine_settings_for
from bench.multihop_metrics import best_answer_scores
from bench.multihop_rows import predicted_answer
from bench.readings_report import summary
from calls.models import ModelFactory, SettingsModelFactory

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reading:
    """One reading of a path: what of its answer is scored, its scores against the gold
    answers, and whether every citation it made verified."""

    predicted: str
    f1: float
    em: float
    verified: bool


def _groups(readings: Sequence[Reading]) -> list[list[int]]:
    """The readings' indices grouped by agreeing answers, in order of first appearance;
    readings without an answer are in no group."""
    answered = (i for i, reading in enumerate(readings) if reading.predicted)
    return agreeing_groups(answered, lambda i: readings[i].predicted)


def replaced(readings: Sequence[Reading]) -> int:
    """The reading the rule keeps (readings[0] is the greedy one): another answer only when
    more readings reached it than the greedy one's, two at least, and one of them is fully
    verified (that one is kept); else the greedy reading."""
    groups = _groups(readings)
    mine = next((g for g in groups if 0 in g), [])
    best = max((g for g in groups if 0 not in g), key=len, default=[])
    verified = [i for i in best if readings[i].verified]
    if len(best) >= 2 and len(best) > len(mine) and verified:
        return verified[0]
    return 0


def majority(readings: Sequence[Reading]) -> int:
    """Self-consistency: the first reading of the answer most readings reached (a tie goes
    to the greedy reading's answer)."""
    groups = _groups(readings)
    if not groups:
        return 0
    most = max(len(g) for g in groups)
    tied = [g for g in groups if len(g) == most]
    return next((g[0] for g in tied if 0 in g), tied[0][0])


def first_answer_node(trace: Mapping[str, Any]) -> tuple[dict[str, NodeRecord], str] | None:
    """The trace's tree by node id and the node its first answer was written at, if any."""
    result = trace.get("result") or {}
    first = result.get("first") or {}
    node_id = first.get("node_id")
    nodes = {node["id"]: node for node in result.get("nodes") or []}
    if not node_id or node_id not in nodes:
        return None
    return nodes, str(node_id)


async def read_again(
    trace: Mapping[str, Any],
    task: str,
    models: ModelFactory,
    settings: Settings,
    samples: int,
    temperature: float | None = None,
) -> dict[str, Any] | None:
    """The first answer's path of one trace read `1 + samples` times (the greedy reading
    first, then sampled at `temperature`, or the responder's own where None), each reading
    scored; None when the run gave no first answer."""
    found = first_answer_node(trace)
    if found is None:
        return None
    nodes, node_id = found
    params = RunParams()  # its budget (150 calls) is far above the readings'
    ctx = RunContext(
        run_id=f"readings-{trace['id']}",
        task=task.format(question=trace["question"]),
        params=params,
        settings=settings,
        models=models,
        tools=[],
        sink=discard,
        accountant=Accountant(params),
    )
    golds = [trace["gold"], *trace.get("aliases", [])]
    readings = []
    for i in range(samples + 1):
        salt = f"reading-{i}" if i else ""
        answer = await write_answer(ctx, nodes, node_id, salt=salt, temperature=temperature)
        predicted = predicted_answer(answer.text) or ""
        scores = best_answer_scores(predicted, golds)
        readings.append(Reading(predicted, scores.f1, scores.em, fully_verified(answer.grounding)))
    recorded = predicted_answer(trace["result"]["first"].get("answer")) or ""
    return {
        "id": trace["id"],
        "corpus": trace.get("corpus", "distractor"),
        "recorded": recorded,
        "temperature": temperature,
        "readings": [asdict(r) for r in readings],
        "replaced": replaced(readings),
        "majority": majority(readings),
    }


def traces_in(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """Every trace of the default search (`anytime`) in `folders`, with its question id."""
    found = []
    for folder in folders:
        for path in sorted(folder.glob("*-anytime*.json")):
            trace = json.loads(path.read_text(encoding="utf-8"))
            trace["id"] = path.name.split("-", 1)[0]
            found.append(trace)
    return found


async def _main(args: argparse.Namespace) -> list[dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if args.out.exists():
        kept = json.loads(args.out.read_text(encoding="utf-8"))
        done = {f"{r['corpus']}/{r['id']}": r for r in kept["rows"]}
    with tempfile.TemporaryDirectory() as work:
        overrides = engine_settings_for("local")
        settings = bench_settings(
            Path(work), tool_result_max_chars=MultihopConfig.tool_result_max_chars, **overrides
        )
        models = SettingsModelFactory(Settings(model="local"))
        header = {
            "model": settings.local_model,
            "samples": args.samples,
            "temperature": args.temperature,
            "traces": [str(t) for t in args.traces],
        }
        for trace in traces_in(args.traces)[: args.limit]:
            key = f"{trace.get('corpus', 'distractor')}/{trace['id']}"
            if key in done:
                continue
            row = await read_again(trace, TASK, models, settings, args.samples, args.temperature)
            if row is not None:
                done[key] = row
                out = {**header, "rows": list(done.values())}
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
                logger.info("readings: %d done (%s)", len(done), key)
    return list(done.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readings", description=__doc__)
    parser.add_argument("--traces", type=Path, nargs="+", required=True)
    parser.add_argument("--samples", type=int, default=4, choices=range(1, 17), metavar="1..16")
    parser.add_argument("--temperature", type=float, default=0.7, help="of the sampled readings")
    parser.add_argument("--limit", type=int, default=None, help="the first N traces only")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the results (JSON; bench/results/<name>/readings.json for §11), resumed",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    rows = asyncio.run(_main(args))
    for line in summary(rows):
        logger.info("%s", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
