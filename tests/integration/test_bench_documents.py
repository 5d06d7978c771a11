"""The documents benchmark at a tiny size (ten questions' paragraphs and generated text up to
600 passages, a 3-page PDF), on SQLite alone and on SQLite and Postgres side by side: the shape
of its results, its goals and its section of the benchmarks page, never its timings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.store.sqlite.search_processes import PROCESSES
from bench.documents import DocumentsConfig, run_documents
from bench.documents_report import section, summary

TINY = DocumentsConfig(
    passages=600, paragraphs_per_document=200, pdf_pages=3, searchers=(1, 2), rounds=1, limit=10
)
LATENCY_KEYS = {"p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms", "n", "failed"}

pytestmark = pytest.mark.timeout(300)


def _check_backend(out: dict[str, Any], name: str) -> None:
    backend = out["backends"][name]
    for kind, count in out["queries"].items():
        for searchers in ("1", "2"):
            timing = backend["latency"][kind][searchers]
            assert set(timing) == LATENCY_KEYS
            assert (timing["n"], timing["failed"]) == (count, 0)
    ingest = backend["ingest"]
    assert ingest["passages"] == out["corpus"]["generated_passages"]
    assert ingest["passages_per_s"] > 0
    assert backend["pdf"]["total_s"] >= backend["pdf"]["store_s"] > 0
    assert 0.0 <= out["recall_at_k"][name] <= 1.0
    assert 0.0 <= backend["recall_at_k_in_corpus"] <= 1.0


async def test_sqlite_is_measured_at_a_tiny_size(tmp_path: Path) -> None:
    out = await run_documents(replace(TINY, backends=("sqlite",)), tmp_path)

    assert set(out["backends"]) == {"sqlite"}
    assert out["queries"]["questions"] == 10
    corpus = out["corpus"]
    assert corpus["passages"] == 600
    assert corpus["pool_passages"] + corpus["generated_passages"] == 600
    assert out["pdf"]["pages"] == 3
    assert out["pdf"]["passages"] >= 3
    _check_backend(out, "sqlite")
    assert 0.0 <= out["recall_at_k"]["bm25s"] <= 1.0
    assert [g["goal"] for g in out["goals"]] == [
        "SQLite search p50, 2 searchers",
        "SQLite search p99, 2 searchers",
        "SQLite ingest, text",
        "SQLite 3-page PDF read, cut and stored",
        "SQLite recall@5",
    ]
    assert "## 17. Documents" in section(out)[0]
    assert summary(out)[0].startswith("documents SQLite")
    # The searches measured ran in the store's search processes, started by the first search
    # (of the pool's recall), and the page says so.
    processes = out["search_processes"]
    assert processes["processes"] == PROCESSES
    latency = out["backends"]["sqlite"]["latency"]
    measured = sum(timing["n"] for kind in latency.values() for timing in kind.values())
    assert processes["answered"] >= measured
    assert f"The search processes answered {processes['answered']:,} of" in "\n".join(section(out))


async def test_both_backends_are_measured_side_by_side(tmp_path: Path, postgres_url: str) -> None:
    out = await run_documents(replace(TINY, postgres_url=postgres_url), tmp_path)

    assert set(out["backends"]) == {"sqlite", "postgres"}
    for name in ("sqlite", "postgres"):
        _check_backend(out, name)
    # Both backends store the same generated text, read once.
    ingest = [out["backends"][name]["ingest"] for name in ("sqlite", "postgres")]
    assert ingest[0]["read_s"] == ingest[1]["read_s"]
    assert ingest[0]["documents"] == ingest[1]["documents"]
    assert out["postgres_autovacuum"] in ("on", "off")
    assert {g["goal"] for g in out["goals"]} >= {
        "Postgres search p99, 2 searchers",
        "Postgres recall@5",
    }
    page = "\n".join(section(out))
    assert "| questions, 2 searchers |" in page
    assert "Postgres p50 | Postgres p99" in page
