"""An MCP client session on the service's streamable-HTTP endpoint (`/mcp`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialised session on `url`'s MCP endpoint, with `key` as its bearer key."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
