"""The tools bound to one run rather than to the process: today the `documents` tool over the
collections the run's parameters name, searched as the run's tenant (a collection id of another
tenant's finds nothing, even if it got past the check on submit)."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from agents.params import RunParams
from app.store.collection_base import CollectionNotFound, tool_search
from app.store.protocols import Collections
from tools.registry import build_documents_tool
from tools.settings import ToolSettings


def run_tools(
    collections: Collections, settings: ToolSettings, tenant: str | None, params: RunParams
) -> list[BaseTool]:
    """The run's own tools: `documents` when it names collections, else none."""
    ids = tuple(params.collections or ())
    if not ids:
        return []
    return [build_documents_tool(settings, tool_search(collections.search, tenant, ids))]


async def check_collections(
    collections: Collections, tenant: str | None, params: RunParams
) -> None:
    """Raises `CollectionNotFound` (nothing is stored) when a collection the run names is not
    the tenant's."""
    for collection_id in dict.fromkeys(params.collections or ()):
        if await collections.get(tenant, collection_id) is None:
            raise CollectionNotFound()
