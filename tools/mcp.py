"""Tools of external MCP servers for the executor (`LATS_MCP_SERVERS`).

The setting is JSON, or the path of a JSON file, in the usual `mcpServers` shape:

    {"mcpServers": {"files": {"command": "uvx", "args": ["mcp-server-filesystem", "/data"]},
                    "search": {"url": "https://mcp.example.org/mcp", "headers": {...}}}}

Each server's tools are loaded through langchain-mcp-adapters and named `<server>__<tool>`,
so two servers never clash. Every call has the tool timeout; a failing, dying or slow server
gives the model an error observation, as any research tool does, never a failed run. A server
that cannot be reached at start-up is left out with a warning (the service still starts); a
setting that cannot be read fails the start-up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.sessions import Connection

from calls.errors import ConfigError
from tools.results import ToolResult, failure, shorten

logger = logging.getLogger(__name__)

SEPARATOR = "__"
_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME_CHARS = 64  # the longest function name model providers accept


def parse_servers(value: str) -> dict[str, Connection]:
    """The servers named by `LATS_MCP_SERVERS` (JSON, or a path to a JSON file) as the
    adapters' connections. Raises `ConfigError` with what is wrong."""
    text = value.strip()
    if not text.startswith("{"):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ConfigError(f"LATS_MCP_SERVERS: {text!r} is neither JSON nor a file")
        text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"LATS_MCP_SERVERS is not valid JSON ({e.msg})") from e
    servers = data.get("mcpServers", data) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError('LATS_MCP_SERVERS must be {"mcpServers": {name: server, …}}')
    return {str(name): _connection(str(name), spec) for name, spec in servers.items()}


def _connection(name: str, spec: Any) -> Connection:
    if not isinstance(spec, dict):
        raise ConfigError(f"LATS_MCP_SERVERS: server {name!r} must be an object")
    if "command" in spec:
        return cast(
            Connection,
            {
                "transport": "stdio",
                "command": str(spec["command"]),
                "args": [str(a) for a in spec.get("args", [])],
                "env": spec.get("env"),
                "cwd": spec.get("cwd"),
            },
        )
    if "url" in spec:
        transport = "sse" if spec.get("transport") == "sse" else "streamable_http"
        return cast(
            Connection,
            {"transport": transport, "url": str(spec["url"]), "headers": spec.get("headers")},
        )
    raise ConfigError(f"LATS_MCP_SERVERS: server {name!r} needs a `command` or a `url`")


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>`, in the characters and length function names allow."""
    return _NAME.sub("_", f"{server}{SEPARATOR}{tool}")[:MAX_NAME_CHARS]


async def load_mcp_tools(
    servers: dict[str, Connection],
    *,
    timeout_s: float,
    max_chars: int,
    connect_timeout_s: float = 30.0,
) -> list[BaseTool]:
    """Every server's tools that answers within `connect_timeout_s`, namespaced and guarded
    (each call bounded by `timeout_s`)."""
    client = MultiServerMCPClient(servers)
    tools: list[BaseTool] = []
    for server in servers:
        try:
            async with asyncio.timeout(connect_timeout_s):
                found = await client.get_tools(server_name=server)
        except Exception as e:  # a server down at start-up must not stop the service
            logger.warning("MCP server %s left out: %s", server, type(e).__name__)
            continue
        tools.extend(
            guarded(server, tool, timeout_s=timeout_s, max_chars=max_chars) for tool in found
        )
        logger.info("MCP server %s: %d tool(s)", server, len(found))
    return tools


def guarded(server: str, tool: BaseTool, *, timeout_s: float, max_chars: int) -> BaseTool:
    """`tool` renamed `<server>__<name>`, bounded by `timeout_s`, its failures turned into
    error observations, its text cut to `max_chars`."""
    name = tool_name(server, tool.name)
    if not isinstance(tool, StructuredTool) or tool.coroutine is None:
        raise ConfigError(f"MCP tool {name} cannot be called asynchronously")
    inner: Callable[..., Awaitable[Any]] = tool.coroutine

    async def call(**kwargs: Any) -> ToolResult:
        deadline = asyncio.timeout(timeout_s)
        try:
            async with deadline:
                result = await inner(**kwargs)
        except TimeoutError:
            return failure(name, "timeout")
        except ToolException as e:  # the server ran the tool and reported an error
            return failure(name, "http_error", shorten(str(e), 200))
        except Exception as e:  # the server died, refused, or sent garbage: tell the model
            if deadline.expired():
                # The client's task group wraps the cancellation our deadline caused (for
                # example while the server process is still starting) in an ExceptionGroup.
                return failure(name, "timeout")
            logger.warning("MCP tool %s failed: %s", name, type(e).__name__)
            return failure(name, "network" if _is_transport(e) else "internal")
        content = result[0] if isinstance(result, tuple) else result
        text = shorten(_text(content), max_chars)
        return text or f"{name}: no output", {"ok": True, "error_kind": None, "sources": []}

    return StructuredTool.from_function(
        coroutine=call,
        name=name,
        description=f"[{server}] {tool.description}",
        args_schema=tool.args_schema,
        response_format="content_and_artifact",
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in content]
        return "\n".join(p for p in parts if p)
    return str(content)


def _is_transport(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return any(_is_transport(e) for e in error.exceptions)
    return isinstance(error, OSError | EOFError | ConnectionError) or type(error).__name__ in {
        "McpError",
        "ClosedResourceError",
        "BrokenResourceError",
        "EndOfStream",
    }
