"""A stand-in `search` tool that answers each query with its page from a fixed table, and such
pages."""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.tools import BaseTool, StructuredTool

from tools.results import Hit, ToolResult, render_hits


def wiki_page(title: str, text: str) -> Hit:
    """The English Wikipedia article `title` (a name without spaces) as a search hit."""
    return Hit(title=title, url=f"https://en.wikipedia.org/wiki/{title}", text=text)


class PageSearch:
    """The search tool over `pages` (query -> its one hit; any other query finds nothing),
    with the queries it was asked."""

    def __init__(self, pages: Mapping[str, Hit]) -> None:
        self.pages = pages
        self.queries: list[str] = []

    def tool(self) -> BaseTool:
        """The tool, as the executor is handed it."""

        async def search(query: str) -> ToolResult:
            self.queries.append(query)
            hits = [self.pages[query]] if query in self.pages else []
            return render_hits("search", query, hits, 3000)

        return StructuredTool.from_function(
            coroutine=search,
            name="search",
            description="Search the web.",
            response_format="content_and_artifact",
        )
