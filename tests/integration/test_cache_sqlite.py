"""The model-call cache on its SQLite file: what one handle wrote, another reads back."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration

from calls.cache import RoleCache, SqliteStore


def _reply(text: str) -> list[ChatGeneration]:
    usage = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    return [ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))]


def test_the_sqlite_store_outlives_its_process_handle(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "cache.sqlite")
    RoleCache(first, "executor").update("p", "m", _reply("found"))
    first.close()

    again = RoleCache(SqliteStore(tmp_path / "cache.sqlite"), "executor").lookup("p", "m")

    assert again is not None
    assert again[0].text == "found"
