"""Benchmark 17, documents: the store's full-text search over a user's collections, on SQLite
and Postgres side by side in one process (the same index on both, app/store/passage_index.py),
against the goals of the documents issue.

- Retrieval quality: the pooled HotpotQA paragraphs (one document each) in a collection of
  their own; each question as the query, its gold paragraphs as the relevant ones: recall@k on
  both backends and of the bm25s index the open-corpus setting used before (`index_corpus`).
- Ingest: text documents generated to bring a second collection (the pool again, plus the
  generated text) to `passages` passages, each read and cut by the service's reader (a process
  per file, app/collections/reader.py) and stored in both backends; passages a second. Then a
  generated text PDF of `pdf_pages` pages: read, cut and stored, in seconds.
- Search latency over that collection: the questions (and the gold paragraphs' titles, a tool's
  short query) searched by `searchers` concurrent callers through `Collections.search`, the
  call the `documents` tool makes; p50 and p99. The backends take turns round by round, so a
  change in the machine's load falls on both.

    .venv/bin/python -m bench --only documents

Postgres: a fresh database on LATS_BENCH_POSTGRES_URL's server (dropped after), or the
database `postgres_url` names (left as it is); its passages are vacuumed and analyzed after the
load, as autovacuum would soon do, since the search reads the planner's statistics.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from app.collections.intake import DocumentIntake
from app.collections.reader import DocumentReader, ReadFile
from app.heap import freeze_startup_heap
from app.settings import Settings
from app.store.collection_base import CollectionRecord, NewDocument
from app.store.passage_index import BEST, RESCORED, WHOLE
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.library import without_memory_statistics
from app.store.sqlite.search_processes import SearchProcesses
from app.store.sqlite.store import SqliteRunStore
from bench.documents_report import goals
from bench.documents_search import Search, as_search, latencies, mapped, mean_recall
from bench.documents_text import TextMaker
from bench.multihop_collection import store_pool
from bench.multihop_corpus import Pool, pooled_corpus
from bench.multihop_data import HOTPOTQA_DEV_100, load
from bench.workers import fresh_database
from testkit.pdfs import text_pdf
from tools.local_corpus import index_corpus

logger = logging.getLogger(__name__)

Backend = Literal["sqlite", "postgres"]
TENANT = "bench"


@dataclass(frozen=True)
class DocumentsConfig:
    passages: int = 100_000
    paragraphs_per_document: int = 1500  # about 900 passages: a file of about 1 MB
    pdf_pages: int = 300
    searchers: tuple[int, ...] = (1, 8)
    rounds: int = 3  # passes over the queries per backend and number of searchers
    k: int = 5
    seed: int = 17
    backends: tuple[Backend, ...] = ("sqlite", "postgres")
    postgres_url: str | None = None
    data: Path = HOTPOTQA_DEV_100
    limit: int | None = None  # the first questions only (their paragraphs the pool)


@dataclass
class _Side:
    """One backend's store and what was measured on it."""

    name: Backend
    store: RunStore
    version: str
    url: str | None = None  # Postgres's database
    out: dict[str, Any] = field(default_factory=dict)

    async def collection(self, name: str) -> str:
        record = CollectionRecord(
            id=uuid.uuid4().hex, tenant=TENANT, name=name, created_at=datetime.now(UTC)
        )
        await self.store.collections.create(record)
        return record.id

    def searcher(self, collection_id: str, k: int) -> Search:
        """The ids of the documents of the best `k` passages for a query, best first."""

        async def search(query: str) -> list[str]:
            hits = await self.store.collections.search(TENANT, [collection_id], query, k)
            return [hit.document_id for hit in hits]

        return search


@contextlib.asynccontextmanager
async def _sides(config: DocumentsConfig, work: Path) -> AsyncIterator[list[_Side]]:
    with contextlib.ExitStack() as databases:
        opened: list[_Side] = []
        try:
            for name in config.backends:
                if name == "sqlite":
                    store: RunStore = await SqliteRunStore.open(work / "documents.sqlite")
                    opened.append(_Side(name, store, sqlite3.sqlite_version))
                else:
                    url = config.postgres_url or databases.enter_context(fresh_database())
                    store = await PostgresRunStore.open(url)
                    (version,) = await _on_postgres(url, "SHOW server_version")
                    opened.append(_Side(name, store, str(version), url))
            yield opened
        finally:
            for side in opened:
                await side.store.close()


async def run_documents(config: DocumentsConfig, work: Path) -> dict[str, Any]:
    """The three measurements on every backend of `config`, with the goals they meet."""
    loads = {"start": os.getloadavg()}
    questions = load(config.data, config.limit)
    pool = Pool.of(questions)
    titles = {d.doc_id: d.title for d in pool.documents}
    gold = [(q.question, pooled_corpus(q, pool, _no_tool).gold_documents) for q in questions]
    queries = {
        "questions": [q for q, _ in gold],
        "titles": list(dict.fromkeys(titles[doc] for _, docs in gold for doc in sorted(docs))),
    }
    maker = TextMaker.from_texts([d.text for d in pool.documents], config.seed)
    reader = DocumentIntake.from_settings(Settings(_env_file=None)).reader
    corpus = index_corpus(pool.documents)

    def bm25s(query: str) -> list[str]:
        return [p.doc_id for p, _ in corpus.index.search(query, config.k)]

    out: dict[str, Any] = {
        "config": _config(config),
        "queries": {k: len(v) for k, v in queries.items()},
    }
    async with _sides(config, work) as sides:
        out["recall_at_k"] = {"bm25s": await mean_recall(as_search(bm25s), gold)}
        for side in sides:
            out["recall_at_k"][side.name] = await _pool_recall(side, pool, gold, config.k)
        out["corpus"] = await _ingest(sides, config, pool, maker, reader)
        out.update(await _settle(sides))
        loads["latency"] = os.getloadavg()
        for side in sides:
            search = mapped(side.searcher(side.out["collection"], config.k), side.out["pool"])
            side.out["recall_at_k_in_corpus"] = await mean_recall(search, gold)
        # As the service does once started (app/heap.py): what the process holds now is kept
        # out of the collector's full collections, whose pauses would otherwise stand in for
        # the searches' tail.
        freeze_startup_heap()
        searches: dict[str, Search] = {
            side.name: side.searcher(side.out["collection"], config.k) for side in sides
        }
        processes = _search_processes(sides)
        before = processes.answered if processes is not None else 0
        measured = await latencies(searches, queries, config.searchers, config.rounds)
        if processes is not None:
            # How many of SQLite's measured searches its search processes answered (the rest
            # ran on its connections: none, unless a process was lost).
            out["search_processes"] = {
                "processes": processes.count,
                "answered": processes.answered - before,
            }
        for side in sides:
            side.out["latency"] = measured[side.name]
            logger.info("documents %s: latency %s", side.name, side.out["latency"])
        pdf = text_pdf(maker.pdf_pages(config.pdf_pages), title="A generated report")
        started = time.perf_counter()
        found = await reader.read("report.pdf", pdf, label="bench")
        read_s = time.perf_counter() - started
        out["pdf"] = {"pages": found.pages, "passages": len(found.passages), "bytes": len(pdf)}
        for side in sides:
            collection = await side.collection("pdf")
            store_s = await _store(side, collection, "report", "report.pdf", len(pdf), found)
            side.out["pdf"] = {"read_s": read_s, "store_s": store_s, "total_s": read_s + store_s}
        out["backends"] = {
            side.name: {k: v for k, v in side.out.items() if k not in ("collection", "pool")}
            for side in sides
        }
        out["versions"] = {side.name: side.version for side in sides}
    loads["end"] = os.getloadavg()
    out["load_average"] = {k: [round(x, 2) for x in v] for k, v in loads.items()}
    out["cores"] = os.cpu_count()
    if "sqlite" in config.backends:  # decided when its store opened
        out["sqlite_memory_statistics"] = "off" if without_memory_statistics() else "on"
    # The store's bounds on a search's work (app/store/passage_index.py).
    out["index"] = {"whole": WHOLE, "best": BEST, "rescored": RESCORED}
    out["goals"] = goals(out)
    return out


def _search_processes(sides: list[_Side]) -> SearchProcesses | None:
    for side in sides:
        if isinstance(side.store, SqliteRunStore):
            return side.store.search_processes
    return None


def _no_tool(runtime: Any) -> Any:
    raise AssertionError("the benchmark reads the gold documents, never the tool")


async def _pool_recall(
    side: _Side, pool: Pool, gold: Sequence[tuple[str, set[str]]], k: int
) -> float:
    """Recall@k on a collection of the pool alone (deleted after, so that the index holds only
    the next collection's passages)."""
    collection = await side.collection("pool")
    stored = await store_pool(side.store.collections, collection, pool.documents, TENANT, "p")
    pool_ids = {doc: document.doc_id for doc, document in stored.items()}
    found = await mean_recall(mapped(side.searcher(collection, k), pool_ids), gold)
    await side.store.collections.delete(TENANT, collection)
    return found


async def _store(
    side: _Side, collection: str, doc_id: str, name: str, size: int, found: ReadFile
) -> float:
    """Seconds to store one read file (`ReadFile`) as a document."""
    document = NewDocument(
        id=f"{doc_id}-{side.name}",
        collection_id=collection,
        title=found.title,
        name=name,
        kind=found.kind,
        sha256=found.sha256,
        bytes=size,
        pages=found.pages,
        created_at=datetime.now(UTC),
        passages=found.passages,
    )
    started = time.perf_counter()
    await side.store.collections.add_document(TENANT, document)
    return time.perf_counter() - started


async def _ingest(
    sides: list[_Side],
    config: DocumentsConfig,
    pool: Pool,
    maker: TextMaker,
    reader: DocumentReader,
) -> dict[str, Any]:
    """The searched collection on every side: the pool, then generated text documents, read
    once and stored in each side, up to `config.passages` passages."""
    pool_passages = 0
    for side in sides:
        side.out["collection"] = await side.collection("corpus")
        stored = await store_pool(
            side.store.collections, side.out["collection"], pool.documents, TENANT, "c"
        )
        side.out["pool"] = {doc: document.doc_id for doc, document in stored.items()}
        pool_passages = await _passages_in(side)
    read_s, documents, chars = 0.0, 0, 0
    store_s = {side.name: 0.0 for side in sides}
    total = pool_passages
    while total < config.passages:
        data = maker.document(config.paragraphs_per_document).encode()
        started = time.perf_counter()
        found = await reader.read(f"text-{documents}.txt", data, label="bench")
        read_s += time.perf_counter() - started
        found = replace(found, passages=found.passages[: config.passages - total])
        cut = found.passages
        for side in sides:
            store_s[side.name] += await _store(
                side,
                side.out["collection"],
                f"g{documents}",
                f"text-{documents}.txt",
                len(data),
                found,
            )
        total += len(cut)
        chars += sum(len(p.text) for p in cut)
        documents += 1
    generated = total - pool_passages
    for side in sides:
        seconds = read_s + store_s[side.name]
        side.out["ingest"] = {
            "documents": documents,
            "passages": generated,
            "read_s": read_s,
            "store_s": store_s[side.name],
            "passages_per_s": generated / seconds if seconds else float("nan"),
            "store_passages_per_s": generated / store_s[side.name]
            if store_s[side.name]
            else float("nan"),
        }
        logger.info("documents %s: ingest %s", side.name, side.out["ingest"])
    return {
        "passages": total,
        "pool_documents": len(pool.documents),
        "pool_passages": pool_passages,
        "generated_documents": documents,
        "generated_passages": generated,
        "generated_mean_chars": chars / generated if generated else 0.0,
        "vocabulary": len(maker.words),
    }


async def _passages_in(side: _Side) -> int:
    record = await side.store.collections.documents(
        TENANT, side.out["collection"], limit=100_000, offset=0
    )
    return sum(document.passages for document in record)


async def _on_postgres(url: str, *statements: str) -> list[Any]:
    """What each statement answers first (None for none), on a connection of its own in
    autocommit (VACUUM runs in no transaction)."""
    import psycopg

    answers: list[Any] = []
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=5
    ) as conn:
        for statement in statements:
            cur = await conn.execute(statement)
            found = await cur.fetchone() if cur.description else None
            answers.append(found[0] if found else None)
    return answers


async def _settle(sides: list[_Side]) -> dict[str, Any]:
    """Postgres's tables vacuumed and analyzed after the load, as autovacuum would soon do
    (the search reads the planner's statistics), and whether autovacuum is on."""
    for side in sides:
        if side.url is not None:
            (autovacuum, *_) = await _on_postgres(
                side.url,
                "SHOW autovacuum",
                "VACUUM (ANALYZE) lats_passages",
                "ANALYZE lats_documents",
            )
            return {"postgres_autovacuum": autovacuum}
    return {}


def _config(config: DocumentsConfig) -> dict[str, Any]:
    values = asdict(config)
    values["data"] = config.data.name
    values.pop("postgres_url")
    return values
