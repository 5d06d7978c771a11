"""`local_docs` over real files: BM25 ranking, the folder rules, index reuse and refresh."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from calls.errors import ConfigError
from tools.local_docs import load_index
from tools.registry import ToolOverrides, build_tools
from tools.runtime import TtlCache

DOCS = {
    "ops/deploy.md": "# Deployment\n\nRun the service behind nginx.\n\n## Database\n\n"
    "Postgres stores the checkpoints of every run. Back it up nightly.\n",
    "notes/cats.txt": "Our office cats sleep on the servers. The cat Rust likes warm racks.\n",
    "guide/compiler.md": "# Compiler guide\n\nThe compiler reports errors with codes. "
    "Compiling twice clears stale caches.\n",
    "images/diagram.pdf": "Postgres checkpoints compiler cats",
    ".private/secret.md": "Postgres checkpoints compiler cats",
}


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    for relative, text in DOCS.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.fixture
def docs_tool(make_settings, clock, docs_dir):
    def make(**fields: Any):
        fields.setdefault("local_docs_dir", docs_dir)
        settings = make_settings(tools=["local_docs"], **fields)
        overrides = ToolOverrides(clock=clock, sleep=clock.sleep)
        [tool] = build_tools(settings, overrides=overrides)
        return tool

    return make


async def test_the_best_matching_passage_comes_first(docs_tool, call_tool) -> None:
    message = await call_tool(docs_tool(), {"query": "where are checkpoints stored"})

    first = message.artifact["sources"][0]
    assert first == {"title": "Deployment > Database", "url": "local://ops/deploy.md"}
    assert "Postgres stores the checkpoints" in message.content
    assert message.artifact["ok"] is True


async def test_words_match_across_inflections(docs_tool, call_tool) -> None:
    message = await call_tool(docs_tool(), {"query": "compilers"})

    assert message.artifact["sources"][0]["url"] == "local://guide/compiler.md"


async def test_hidden_files_and_other_formats_are_not_indexed(docs_tool, call_tool) -> None:
    message = await call_tool(docs_tool(), {"query": "postgres checkpoints compiler cats"})

    urls = {source["url"] for source in message.artifact["sources"]}
    assert urls == {"local://ops/deploy.md", "local://notes/cats.txt", "local://guide/compiler.md"}


async def test_a_query_matching_nothing_is_an_empty_success(docs_tool, call_tool) -> None:
    message = await call_tool(docs_tool(), {"query": "kubernetes helm"})

    assert message.artifact == {"ok": True, "error_kind": "no_results", "sources": []}


async def test_an_empty_folder_answers_with_no_results(
    make_settings, call_tool, clock, tmp_path
) -> None:
    settings = make_settings(tools=["local_docs"], local_docs_dir=tmp_path)
    [tool] = build_tools(settings, overrides=ToolOverrides(clock=clock))

    message = await call_tool(tool, {"query": "anything"})

    assert message.artifact["error_kind"] == "no_results"


def test_the_index_is_built_once_and_reused(docs_dir: Path) -> None:
    assert load_index(docs_dir) is load_index(docs_dir)


def test_the_index_is_rebuilt_when_a_file_changes(docs_dir: Path) -> None:
    before = load_index(docs_dir)
    path = docs_dir / "notes/cats.txt"
    path.write_text("Dogs guard the data centre.\n", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    after = load_index(docs_dir)

    assert after is not before
    assert [p.path for p, _ in after.search("dogs data centre")] == ["notes/cats.txt"]
    assert before.search("dogs data centre") == []


def test_local_docs_is_listed_after_the_other_enabled_tools(make_settings, docs_dir) -> None:
    settings = make_settings(tools=["local_docs", "wikipedia"], local_docs_dir=docs_dir)

    assert [tool.name for tool in build_tools(settings)] == ["local_docs", "wikipedia"]


def test_a_missing_folder_fails_start_up(make_settings, tmp_path) -> None:
    settings = make_settings(tools=["local_docs"], local_docs_dir=tmp_path / "nope")

    with pytest.raises(ConfigError, match="is not an existing folder"):
        build_tools(settings)


def test_a_file_instead_of_a_folder_fails_start_up(make_settings, docs_dir) -> None:
    settings = make_settings(tools=["local_docs"], local_docs_dir=docs_dir / "ops/deploy.md")

    with pytest.raises(ConfigError, match="is not an existing folder"):
        build_tools(settings)


async def test_a_changed_corpus_is_not_answered_from_the_old_cache(
    make_settings, call_tool, clock, docs_dir
) -> None:
    settings = make_settings(tools=["local_docs"], local_docs_dir=docs_dir)
    overrides = ToolOverrides(clock=clock, cache=TtlCache(clock=clock))
    [before] = build_tools(settings, overrides=overrides)
    first = await call_tool(before, {"query": "dogs"})
    path = docs_dir / "notes/cats.txt"
    path.write_text("Dogs guard the data centre.\n", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    [after] = build_tools(settings, overrides=overrides)
    second = await call_tool(after, {"query": "dogs"})

    assert first.artifact["error_kind"] == "no_results"
    assert second.artifact["sources"] == [{"title": "cats", "url": "local://notes/cats.txt"}]
