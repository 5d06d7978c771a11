"""The real failure path of a machine without network: each tool's real client, the real hosts,
a DNS lookup that fails. Each must come back as a `network` observation, quickly."""

from __future__ import annotations

import time

import pytest

from tools.registry import ToolOverrides, build_tools
from tools.runtime import LimiterRegistry, TtlCache


@pytest.mark.parametrize("name", ["web_search", "arxiv", "wikipedia"])
async def test_unresolvable_host_becomes_a_network_observation(
    make_settings, call_tool, name: str
) -> None:
    settings = make_settings(tools=[name], tool_timeout_s=10.0, tool_max_retries=2)
    backoffs: list[int] = []

    def jitter() -> float:
        backoffs.append(1)
        return 0.0

    # Real clock and real clients; only the process-wide limiter and cache are kept out, and
    # the jitter draw counts the backoffs.
    overrides = ToolOverrides(cache=TtlCache(), jitter=jitter)
    [tool] = build_tools(settings, overrides=overrides, limiters=LimiterRegistry())

    started = time.monotonic()
    message = await call_tool(tool, {"query": "tree of thoughts"})

    assert message.artifact == {"ok": False, "error_kind": "network", "sources": []}
    assert (
        message.content
        == f"{name}: the service is unreachable (network error), use a different tool"
    )
    # A DNS failure is not retried: one fast attempt, far inside the 10 s budget.
    assert backoffs == []
    assert time.monotonic() - started < 5.0
