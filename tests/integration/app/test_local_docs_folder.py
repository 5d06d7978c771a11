"""The `local_docs` folder loaded into the store at start-up, on the real SQLite file and the real
Postgres: one collection however often and however many processes start, no document stored
twice, a changed file's document replaced and a deleted file's removed, files that cannot be
read skipped, the collection out of every caller's reach, and the `local_docs` tool searching
it through the store's full-text index (real reader processes, the real run service)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from app import startup
from app.collections.local_folder import COLLECTION_NAME, FOLDER_TENANT
from app.keys.tenancy import ADMIN
from app.service import run_service
from app.settings import Settings
from app.store.collection_base import DocumentRecord
from app.store.protocols import RunStore
from calls.errors import ConfigError
from testkit.fakes import FakeModels
from testkit.pdfs import text_pdf
from testkit.scenario import Scenario

FILES: dict[str, str | bytes] = {
    "ops/deploy.md": "# Deployment\n\nRun the service behind nginx.\n\n## Database\n\n"
    "Postgres stores the checkpoints of every run. Back it up nightly.\n",
    "notes/cats.txt": "Our office cats sleep on the servers. The cat Rust likes warm racks.\n",
    "guide/manual.pdf": text_pdf(
        [["The compiler manual."], ["The compiler reports errors with numbered codes."]],
        title="Compiler manual",
    ),
    "guide/copy-of-cats.txt": "Our office cats sleep on the servers. The cat Rust likes warm "
    "racks.\n",  # the same content as notes/cats.txt: stored once
    "broken.pdf": b"%PDF-1.7\nnot a pdf at all",
    "images/diagram.png": b"\x89PNG\r\n\x1a\n postgres checkpoints",
    ".private/secret.md": "Postgres checkpoints compiler cats",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for relative, content in FILES.items():
        path = docs / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return docs


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path, folder: Path) -> Settings:
    """A service with `local_docs` over `folder`, on SQLite files or a Postgres database."""
    fields: dict[str, Any] = {
        "tools": ["local_docs"],
        "local_docs_dir": folder,
        "data_dir": tmp_path / "data",
    }
    if request.param == "postgres":
        fields["database_url"] = request.getfixturevalue("postgres_url")
    return Settings(_env_file=None, **fields)


@asynccontextmanager
async def started(
    settings: Settings, tools: Sequence[BaseTool] | None = None
) -> AsyncIterator[tuple[RunStore, BaseTool | None]]:
    """A service process started as `lats serve` starts it: its tools built (unless given),
    then its run service (the store opened and the folder loaded); the store and the
    `local_docs` tool."""
    tools = startup.research_tools(settings) if tools is None else tools
    models = FakeModels(Scenario(plan=["A"]))
    async with run_service(settings, models=models, tools=tools, worker=False) as manager:
        yield manager.store, next(iter(tools), None)


async def _call(tool: BaseTool | None, query: str) -> ToolMessage:
    """The tool called as LangGraph's tool node calls it."""
    assert tool is not None
    call = {"name": tool.name, "args": {"query": query}, "id": "call-1", "type": "tool_call"}
    message = await tool.ainvoke(call)
    assert isinstance(message, ToolMessage)
    return message


async def _documents(store: RunStore) -> list[DocumentRecord]:
    [collection] = await store.collections.page(FOLDER_TENANT, limit=10, offset=0)
    assert collection.name == COLLECTION_NAME
    found = await store.collections.documents(FOLDER_TENANT, collection.id, limit=100, offset=0)
    return sorted(found, key=lambda d: d.name)


async def _sources(tool: BaseTool | None, query: str) -> list[dict[str, str]]:
    message = await _call(tool, query)
    assert message.artifact["ok"] is True, message.content
    sources: list[dict[str, str]] = message.artifact["sources"]
    return sources


async def test_the_folder_is_loaded_once_however_often_the_service_starts(
    settings: Settings,
) -> None:
    async with started(settings) as (store, _):
        first = await _documents(store)
    async with started(settings) as (store, _):
        second = await _documents(store)

    # Unreadable, hidden and other kinds of files are skipped; a content is stored once.
    assert [d.name for d in first] == [
        "guide/copy-of-cats.txt",
        "guide/manual.pdf",
        "ops/deploy.md",
    ]
    assert [(d.kind, d.pages) for d in first] == [("text", 1), ("pdf", 2), ("markdown", 1)]
    assert second == first


async def test_processes_starting_together_share_one_collection(settings: Settings) -> None:
    async with started(settings) as (one, _), started(settings) as (other, _):
        assert await _documents(one) == await _documents(other)

    async def start() -> list[DocumentRecord]:
        async with started(settings) as (store, _):
            return await _documents(store)

    together = await asyncio.gather(start(), start(), start())
    assert together[0] == together[1] == together[2]
    assert len(together[0]) == 3


async def test_a_changed_file_is_replaced_and_a_deleted_one_removed(
    settings: Settings, folder: Path
) -> None:
    async with started(settings) as (store, _):
        before = {d.name: d for d in await _documents(store)}
    (folder / "guide/copy-of-cats.txt").unlink()
    (folder / "notes/cats.txt").write_text("Dogs guard the data centre at night.\n")
    (folder / "ops/deploy.md").unlink()

    async with started(settings) as (store, tool):
        after = {d.name: d for d in await _documents(store)}
        dogs = await _sources(tool, "dogs data centre")
        cats = await _call(tool, "office cats warm racks")
        nginx = await _call(tool, "nginx")

    # The document of the copy (the first path of that content) went with it.
    assert sorted(after) == ["guide/manual.pdf", "notes/cats.txt"]
    assert after["guide/manual.pdf"] == before["guide/manual.pdf"]  # untouched
    assert dogs == [{"title": "cats", "url": "local://notes/cats.txt"}]
    assert cats.artifact["error_kind"] == "no_results"
    assert nginx.artifact["error_kind"] == "no_results"


async def test_the_local_docs_tool_finds_passages_with_their_file_and_page(
    settings: Settings,
) -> None:
    async with started(settings) as (_, tool):
        compiler = await _sources(tool, "compiler error codes")
        database = await _call(tool, "where are checkpoints stored")

    assert compiler[0] == {
        "title": "Compiler manual, p. 2",
        "url": "local://guide/manual.pdf#page=2",
    }
    assert database.artifact["sources"][0] == {"title": "deploy", "url": "local://ops/deploy.md"}
    assert "Postgres stores the checkpoints" in database.content


async def test_no_caller_reaches_the_folders_collection(settings: Settings) -> None:
    async with started(settings) as (store, _):
        [collection] = await store.collections.page(FOLDER_TENANT, limit=10, offset=0)
        for tenant in (None, ADMIN, "alice"):
            assert await store.collections.page(tenant, limit=10, offset=0) == []
            assert await store.collections.get(tenant, collection.id) is None
            assert await store.collections.search(tenant, [collection.id], "cats", 5) == []


async def test_a_folder_that_is_gone_stops_the_start_up_and_empties_nothing(
    settings: Settings, folder: Path
) -> None:
    async with started(settings) as (store, _):
        loaded = await _documents(store)
    moved = await asyncio.to_thread(folder.rename, folder.with_name("elsewhere"))

    # The tools were built before (as a test or an embedding process may pass them).
    with pytest.raises(ConfigError, match="is not an existing folder"):
        async with started(settings, tools=[]):
            pass
    await asyncio.to_thread(moved.rename, folder)

    async with started(settings) as (store, _):
        assert await _documents(store) == loaded
