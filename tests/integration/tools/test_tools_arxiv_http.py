"""`arxiv` end to end through `arxiv.Client` and `requests`, with Atom XML served by `responses`."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.support.tool_fixtures import without_shown_passages
from tools.registry import ToolOverrides, build_tools

API = "https://export.arxiv.org/api/query"
DATA = Path(__file__).parent / "data"
FEED = (DATA / "arxiv_tot.xml").read_bytes()
EMPTY_FEED = (DATA / "arxiv_empty.xml").read_bytes()
ATOM = "application/atom+xml; charset=utf-8"


@pytest.fixture
def arxiv_tool(make_settings, clock):
    def make(**fields: Any):
        fields.setdefault("arxiv_max_results", 2)
        settings = make_settings(tools=["arxiv"], **fields)
        overrides = ToolOverrides(clock=clock, sleep=clock.sleep, jitter=lambda: 0.5)
        [tool] = build_tools(settings, overrides=overrides)
        return tool

    return make


def _params(call: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(call.request.url).query, keep_blank_values=True)


async def test_feed_is_parsed_into_papers_with_authors_dates_abstract_links(
    http, arxiv_tool, call_tool
) -> None:
    http.get(API, body=FEED, content_type=ATOM)

    message = await call_tool(arxiv_tool(), {"query": "tree of thoughts"})

    content = message.content
    assert without_shown_passages(message) == {
        "ok": True,
        "error_kind": None,
        "sources": [
            {
                "title": "Tree of Thoughts: Deliberate Problem Solving with Large Language Models",
                "url": "https://arxiv.org/abs/2305.10601v2",
            },
            {
                "title": "Language Agent Tree Search Unifies Reasoning Acting and Planning in "
                "Language Models",
                "url": "https://arxiv.org/abs/2310.04406v3",
            },
        ],
    }
    authors = "Shunyu Yao, Dian Yu, Jeffrey Zhao, Izhak Shafran, Thomas L. Griffiths et al."
    assert f"Authors: {authors}" in content
    assert "published 2023-05-17, updated 2023-12-03" in content
    assert "category cs.CL" in content
    assert "PDF: https://arxiv.org/pdf/2305.10601v2" in content
    assert "We introduce a new framework for language model inference, Tree of Thoughts" in content


async def test_one_page_of_exactly_the_wanted_size_is_requested(
    http, arxiv_tool, call_tool
) -> None:
    http.get(API, body=FEED, content_type=ATOM)

    await call_tool(arxiv_tool(arxiv_max_results=2), {"query": "tree of thoughts"})

    [call] = http.calls
    params = _params(call)
    assert params["search_query"] == ["tree of thoughts"]
    assert params["max_results"] == ["2"]
    assert params["start"] == ["0"]


async def test_an_arxiv_id_is_looked_up_by_id(http, arxiv_tool, call_tool) -> None:
    http.get(API, body=FEED, content_type=ATOM)

    await call_tool(arxiv_tool(), {"query": "arXiv:2305.10601"})

    params = _params(http.calls[0])
    assert params["id_list"] == ["2305.10601"]
    assert params["search_query"] == [""]


async def test_an_empty_feed_is_an_empty_success(http, arxiv_tool, call_tool) -> None:
    http.get(API, body=EMPTY_FEED, content_type=ATOM)

    message = await call_tool(arxiv_tool(), {"query": "zzqxv"})

    assert message.artifact == {"ok": True, "error_kind": "no_results", "sources": []}
    assert message.content.startswith('arxiv: no results for "zzqxv"')


async def test_rate_limit_is_retried_after_the_servers_retry_after(
    http, arxiv_tool, call_tool, clock
) -> None:
    http.get(API, status=429, headers={"Retry-After": "5"}, body="Rate exceeded.")
    http.get(API, body=FEED, content_type=ATOM)

    message = await call_tool(arxiv_tool(), {"query": "tree of thoughts"})

    assert message.artifact["ok"] is True
    assert len(http.calls) == 2
    # 5 s of Retry-After already covers arXiv's 3 s spacing: no extra wait for the slot.
    assert clock.sleeps == [5.0]


async def test_requests_are_spaced_three_seconds_apart(http, arxiv_tool, call_tool, clock) -> None:
    http.get(API, body=FEED, content_type=ATOM)
    tool = arxiv_tool(tool_min_interval_s=0.0)

    await call_tool(tool, {"query": "first"})
    await call_tool(tool, {"query": "second"})

    assert clock.sleeps == [3.0]


async def test_persistent_rate_limit_gives_up_after_the_retries(
    http, arxiv_tool, call_tool
) -> None:
    http.get(API, status=429, body="Rate exceeded.")

    message = await call_tool(arxiv_tool(tool_max_retries=2), {"query": "q"})

    assert len(http.calls) == 3
    assert message.content == "arxiv: rate limited, try a different query or tool"
    assert message.artifact == {"ok": False, "error_kind": "rate_limited", "sources": []}


async def test_service_unavailable_is_retried(http, arxiv_tool, call_tool) -> None:
    http.get(API, status=503, body="<html>busy</html>")

    message = await call_tool(arxiv_tool(tool_max_retries=1), {"query": "q"})

    assert len(http.calls) == 2
    assert message.artifact["error_kind"] == "http_error"
    assert "HTTP 503" in message.content


async def test_forbidden_is_not_retried(http, arxiv_tool, call_tool) -> None:
    http.get(API, status=403, body="<html>Forbidden</html>")

    message = await call_tool(arxiv_tool(tool_max_retries=3), {"query": "q"})

    assert len(http.calls) == 1
    assert message.artifact == {"ok": False, "error_kind": "http_error", "sources": []}
    assert "HTTP 403" in message.content


async def test_a_read_timeout_is_retried_as_a_timeout(http, arxiv_tool, call_tool) -> None:
    http.get(API, body=requests.exceptions.ReadTimeout("read timed out"))

    message = await call_tool(arxiv_tool(tool_max_retries=1), {"query": "q"})

    assert len(http.calls) == 2
    assert message.artifact["error_kind"] == "timeout"


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Service temporarily unavailable</body></html>",
        FEED[: len(FEED) // 2],
        b"",
    ],
    ids=["html-page", "truncated-feed", "empty-body"],
)
async def test_a_body_that_is_not_an_atom_feed_is_a_bad_response(
    http, arxiv_tool, call_tool, body: bytes
) -> None:
    http.get(API, body=body, content_type=ATOM)

    message = await call_tool(arxiv_tool(), {"query": "q"})

    assert message.artifact == {"ok": False, "error_kind": "bad_response", "sources": []}
    assert len(http.calls) == 1


async def test_results_are_bounded_by_the_result_size_setting(http, arxiv_tool, call_tool) -> None:
    http.get(API, body=FEED, content_type=ATOM)

    message = await call_tool(arxiv_tool(tool_result_max_chars=400), {"query": "q"})

    assert len(message.content) <= 400
    assert [s["url"] for s in message.artifact["sources"]] == ["https://arxiv.org/abs/2305.10601v2"]
