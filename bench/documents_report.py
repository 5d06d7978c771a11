"""The documents benchmark's goals (those of the documents issue), its lines on the console and
its section of docs/benchmarks.md, from `bench/results/documents.json`. Pure."""

from __future__ import annotations

import math
from typing import Any, TypedDict

from app.store.sqlite.db import SEARCHERS

NAMES = {"sqlite": "SQLite", "postgres": "Postgres"}
# The goals: search at 8 concurrent searchers, ingest, the 300-page PDF, and recall@5
# within this much of the bm25s index's.
P50_MS = {"sqlite": 10.0}
P99_MS = {"sqlite": 50.0, "postgres": 100.0}
MIN_PASSAGES_PER_S = 1000.0
MAX_PDF_S = 30.0
MAX_RECALL_GAP = 0.03


class Goal(TypedDict):
    """One goal: what it bounds, its bound, what was measured, and whether it holds."""

    goal: str
    bound: str
    measured: float
    met: bool


def _searchers(data: dict[str, Any]) -> int:
    """The most concurrent searchers measured (the goals' 8 at full size)."""
    return int(max(data["config"]["searchers"]))


def goals(data: dict[str, Any]) -> list[Goal]:
    """Each goal of every backend measured."""
    out: list[Goal] = []
    at = str(_searchers(data))
    base = data["recall_at_k"]["bm25s"]
    for name, backend in data["backends"].items():
        shown = NAMES[name]
        timing = backend["latency"]["questions"][at]
        if name in P50_MS:
            p50 = timing["p50_ms"]
            out.append(
                _goal(
                    f"{shown} search p50, {at} searchers",
                    f"≤ {P50_MS[name]:g} ms",
                    p50,
                    p50 <= P50_MS[name],
                )
            )
        p99 = timing["p99_ms"]
        out.append(
            _goal(
                f"{shown} search p99, {at} searchers",
                f"≤ {P99_MS[name]:g} ms",
                p99,
                p99 <= P99_MS[name],
            )
        )
        rate = backend["ingest"]["passages_per_s"]
        out.append(
            _goal(
                f"{shown} ingest, text",
                f"≥ {MIN_PASSAGES_PER_S:,.0f} passages/s",
                rate,
                rate >= MIN_PASSAGES_PER_S,
            )
        )
        pdf = backend["pdf"]["total_s"]
        pages = data["pdf"]["pages"]
        out.append(
            _goal(
                f"{shown} {pages}-page PDF read, cut and stored",
                f"< {MAX_PDF_S:g} s",
                pdf,
                pdf < MAX_PDF_S,
            )
        )
        k = data["config"]["k"]
        found = data["recall_at_k"][name]
        out.append(
            _goal(
                f"{shown} recall@{k}",
                f"≥ bm25s's {base:.3f} - {MAX_RECALL_GAP}",
                found,
                found >= base - MAX_RECALL_GAP - 1e-9,
            )
        )
    return out


def _goal(goal: str, bound: str, measured: float, met: bool) -> Goal:
    return {
        "goal": goal,
        "bound": bound,
        "measured": measured,
        "met": met and not math.isnan(measured),
    }


def summary(data: dict[str, Any]) -> list[str]:
    """A line per backend, and one per goal missed."""
    at = str(_searchers(data))
    k = data["config"]["k"]
    lines = []
    for name, backend in data["backends"].items():
        timing = backend["latency"]["questions"][at]
        lines.append(
            f"documents {NAMES[name]:<8} search p50 {timing['p50_ms']:.1f} ms, p99 "
            f"{timing['p99_ms']:.1f} ms ({at} searchers); ingest "
            f"{backend['ingest']['passages_per_s']:.0f} passages/s; PDF "
            f"{backend['pdf']['total_s']:.1f} s; recall@{k} {data['recall_at_k'][name]:.3f}"
        )
    lines.append(f"documents bm25s recall@{k} {data['recall_at_k']['bm25s']:.3f}")
    lines += [
        f"documents goal missed: {g['goal']} {g['bound']}" for g in data["goals"] if not g["met"]
    ]
    return lines


def _ms(value: float) -> str:
    return f"{value:.1f}"


def _queued(data: dict[str, Any]) -> list[str]:
    """What the table says of how the searches share the machine, and how the search is
    bounded."""
    sqlite = data["backends"].get("sqlite")
    levels = [str(n) for n in data["config"]["searchers"]]
    queued = ""
    if sqlite is not None and len(levels) > 1:
        alone = sqlite["latency"]["questions"][levels[0]]["p50_ms"]
        busy = sqlite["latency"]["questions"][levels[-1]]["p50_ms"]
        processes = data.get("search_processes")
        if processes is None:
            waits = f"one of the {SEARCHERS} searching connections"
            shared = "and their Python steps one interpreter lock"
        else:
            waits = f"one of the {processes['processes']} search processes"
            shared = "each process its own interpreter"
        queued = (
            f"At {levels[-1]} searchers a SQLite search waits for {waits}: its p50 is "
            f"{busy / alone:.1f} times its p50 at {levels[0]} ({levels[-1]} searches at once "
            f"share the machine's {data.get('cores', '?')} cores, {shared}). "
        )
        if processes is not None:
            measured = sum(
                level["n"] for kind in sqlite["latency"].values() for level in kind.values()
            )
            warming = sum(data["queries"].values())
            queued += (
                f"The search processes answered {processes['answered']:,} of SQLite's "
                f"{measured + warming:,} searches here ({measured:,} measured, {warming:,} "
                "warming up; a search runs on the store's own connections only until a process "
                "is ready, or when one is lost). "
            )
        statistics = data.get("sqlite_memory_statistics")
        if statistics is not None:
            queued += (
                f"SQLite's memory statistics were {statistics} in the process "
                "(app/store/sqlite/library.py: with them on, every allocation takes one "
                "process-wide mutex, and two searches at once ran hardly faster than one), and "
                "a search's candidates come back packed in one row, not a row each (a thread "
                "reading rows takes the interpreter's lock back after each). "
            )
    index = data.get("index")
    if index is None:
        return [queued, ""] if queued else []
    return [
        queued + "Both backends keep the same index in their own tables "
        "(app/store/passage_index.py): each word's passages ordered by their weight, so that a "
        f"search reads every passage of a word at most {index['whole']:,} passages hold, and "
        f"the best {index['best']:,} of a commoner one, then scores the best "
        f"{index['rescored']:,} of its guesses exactly by BM25: its work is bounded by the "
        "query's words whatever the collection's size.",
        "",
    ]


def _sqlite_searchers(data: dict[str, Any]) -> str:
    processes = data.get("search_processes")
    if processes is None:
        return (
            f"searches on the store's {SEARCHERS} searching connections (more searches wait "
            "for one, first come first served)"
        )
    return (
        f"searches in the store's {processes['processes']} search processes "
        "(app/store/sqlite/search_processes.py, started by the first search; more searches "
        "wait for one, first come first served)"
    )


def _settled(data: dict[str, Any]) -> str:
    autovacuum = data.get("postgres_autovacuum")
    if autovacuum is None:
        return ""
    return (
        " After the load the benchmark runs `VACUUM (ANALYZE)` on Postgres's passages, as "
        "autovacuum would soon do (the search reads the planner's statistics; autovacuum is "
        f"{autovacuum} on the server measured)."
    )


def _measured(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 1 else f"{value:.3f}"


def section(data: dict[str, Any]) -> list[str]:
    """Section 17 of docs/benchmarks.md."""
    config, corpus, pdf = data["config"], data["corpus"], data["pdf"]
    backends: dict[str, Any] = data["backends"]
    names = [NAMES[name] for name in backends]
    k = config["k"]
    loads = data["load_average"]
    lines = [
        "## 17. Documents: full-text search on SQLite and Postgres",
        "",
        "**What it measures.** The store's search over a user's collections "
        "(`Collections.search`, the call the `documents` tool makes), on "
        + " and ".join(f"{NAMES[n]} {data['versions'][n]}" for n in backends)
        + ", side by side in one process (`bench/documents.py`). The collection holds "
        f"{corpus['passages']:,} passages: the {corpus['pool_documents']} pooled HotpotQA "
        f"paragraphs and {corpus['generated_passages']:,} passages of generated text "
        f"({corpus['generated_documents']} text files, {corpus['generated_mean_chars']:.0f} "
        "characters a passage; words drawn from a fixed seed with Zipf frequencies over the "
        f"pool's own vocabulary, extended to {corpus['vocabulary']:,} words, so that common "
        "words are common: `bench/documents_text.py`). The queries are the "
        f"{data['queries']['questions']} HotpotQA questions and the {data['queries']['titles']} "
        f"titles of their gold paragraphs (a tool's short query); {k} passages a search, "
        f"each query {config['rounds']} times at each number of concurrent searchers, the "
        "backends taking turns round by round after a pass that warms the caches. SQLite "
        + _sqlite_searchers(data)
        + ", each connection mapping the file into memory (`SEARCH_MMAP_BYTES` in "
        "app/store/sqlite/db.py), Postgres on its pool of 10." + _settled(data),
        "",
        "| search latency, ms | " + " | ".join(f"{n} p50 | {n} p99" for n in names) + " |",
        "| --- | " + " | ".join("--- | ---" for _ in names) + " |",
    ]
    for kind in ("questions", "titles"):
        for searchers in config["searchers"]:
            cells = []
            for backend in backends.values():
                timing = backend["latency"][kind][str(searchers)]
                failed = f" ({timing['failed']} failed)" if timing.get("failed") else ""
                cells.append(f"{_ms(timing['p50_ms'])} | {_ms(timing['p99_ms'])}{failed}")
            callers = f"{searchers} searcher" + ("s" if searchers > 1 else "")
            lines.append(f"| {kind}, {callers} | " + " | ".join(cells) + " |")
    lines += ["", *_queued(data)]
    lines += [
        f"**Ingest.** Text files of about {config['paragraphs_per_document']} paragraphs, each "
        "read and cut by the service's reader (a process per file, as an upload is) and stored "
        f"as one document; a generated {pdf['pages']}-page text PDF ({pdf['bytes'] / 1e6:.1f} "
        f"MB, {pdf['passages']:,} passages) likewise.",
        "",
        "| | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
        "| text: passages/s, read + store | "
        + " | ".join(f"{b['ingest']['passages_per_s']:,.0f}" for b in backends.values())
        + " |",
        "| text: passages/s, store alone | "
        + " | ".join(f"{b['ingest']['store_passages_per_s']:,.0f}" for b in backends.values())
        + " |",
        f"| {pdf['pages']}-page PDF: read + cut, s | "
        + " | ".join(f"{b['pdf']['read_s']:.1f}" for b in backends.values())
        + " |",
        f"| {pdf['pages']}-page PDF: store, s | "
        + " | ".join(f"{b['pdf']['store_s']:.1f}" for b in backends.values())
        + " |",
        "",
        f"**Retrieval quality.** The {corpus['pool_documents']} pooled paragraphs alone in a "
        f"collection, one document each; each question its query, its gold paragraphs the "
        f"relevant ones: recall@{k} (the share of the gold paragraphs among the {k} passages "
        "found, over the questions), beside the bm25s index the open-corpus setting used "
        "before (`tools/local_corpus.py`, which also indexes the title). The last row: the "
        "same questions over the whole collection above, the pool among the generated text.",
        "",
        "| | bm25s | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
        f"| recall@{k}, pool alone | {data['recall_at_k']['bm25s']:.3f} | "
        + " | ".join(f"{data['recall_at_k'][n]:.3f}" for n in backends)
        + " |",
        f"| recall@{k}, in {corpus['passages']:,} passages | - | "
        + " | ".join(f"{b['recall_at_k_in_corpus']:.3f}" for b in backends.values())
        + " |",
        "",
        f"**Goals** (the documents issue's; {data['cores']} cores, 1-minute load average "
        f"{loads['start'][0]:.1f} at the start, {loads['latency'][0]:.1f} when the searches "
        f"began, {loads['end'][0]:.1f} at the end: other work shared the cores).",
        "",
        "| goal | bound | measured | |",
        "| --- | --- | --- | --- |",
    ]
    for goal in data["goals"]:
        lines.append(
            f"| {goal['goal']} | {goal['bound']} | {_measured(goal['measured'])} | "
            + ("**met**" if goal["met"] else "**missed**")
            + " |"
        )
    lines.append("")
    return lines


def closing(data: dict[str, Any] | None) -> list[str]:
    """The closing note's line on the documents issue's goals."""
    if data is None:
        return []
    missed = [
        f"{g['goal']} ({_measured(g['measured'])}, {g['bound']})"
        for g in data["goals"]
        if not g["met"]
    ]
    met = len(data["goals"]) - len(missed)
    line = f"- Documents (section 17): **{met} of {len(data['goals'])} goals met**"
    return [line + (f"; missed: {'; '.join(missed)}." if missed else ".")]
