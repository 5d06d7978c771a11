"""A stdio MCP server for the tests: one tool that works, one that reports an error, one that
never answers, and one that kills the server in the middle of the call."""

from __future__ import annotations

import asyncio
import os

from mcp.server.fastmcp import FastMCP

server = FastMCP("fixture")


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return f"echo: {text}"


@server.tool()
def refuse(text: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {text}")


@server.tool()
async def hang(text: str) -> str:
    """Never answers in time."""
    await asyncio.sleep(600)
    return text


@server.tool()
def die(text: str) -> str:
    """Kills the server mid-call."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
