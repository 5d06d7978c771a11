"""The store's passage search as the document tools' tests stand it in: passages found, a
search that answers from a list, and a tool's answer to a query as the agent awaits it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from langchain_core.tools import BaseTool, StructuredTool

from tools.results import ToolResult

PassageT = TypeVar("PassageT")


@dataclass(frozen=True)
class Found:
    """A passage as the store's `PassageHit` has it; `name` is its file's path in a folder."""

    collection_id: str
    document_id: str
    title: str
    page: int | None
    text: str
    name: str = ""


class ListedSearch(Generic[PassageT]):
    """A search that answers from a list, fails with the errors given first, and counts."""

    def __init__(self, found: Sequence[PassageT], *errors: Exception) -> None:
        self.found = list(found)
        self.errors = list(errors)
        self.queries: list[tuple[str, int]] = []

    async def __call__(self, query: str, k: int) -> Sequence[PassageT]:
        self.queries.append((query, k))
        if self.errors:
            raise self.errors.pop(0)
        return self.found[:k]


async def answer(tool: BaseTool, query: str) -> ToolResult:
    """`tool`'s answer to `query`: what the model reads, and the artifact recorded."""
    assert isinstance(tool, StructuredTool)
    assert tool.coroutine is not None
    result: ToolResult = await tool.coroutine(query)
    return result
