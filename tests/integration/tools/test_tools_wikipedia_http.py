"""`wikipedia` end to end through the `wikipedia` package and `requests`, against a fake
MediaWiki API served by `responses` (the JSON shapes of the real `action=query` API)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses
import wikipedia

from tests.support.tool_fixtures import without_shown_passages
from tools.registry import ToolOverrides, build_tools

USER_AGENT = "plantree-tests/1.0 (https://example.invalid/plantree; tests@example.invalid)"
JSON = "application/json; charset=utf-8"

# tools.wikipedia_search silences this at import, but pytest resets filters after collection.
pytestmark = pytest.mark.filterwarnings("ignore::bs4.GuessedAtParserWarning")


@dataclass
class Article:
    title: str
    pageid: int
    extract: str = ""
    options: list[str] | None = None  # set for a disambiguation page


@dataclass
class FakeWikipediaApi:
    """Answers the four request kinds the package sends: search, page info, extract, revisions."""

    articles: dict[str, Article] = field(default_factory=dict)
    searches: dict[str, list[str]] = field(default_factory=dict)
    requests: list[requests.PreparedRequest] = field(default_factory=list)

    def add(self, article: Article) -> None:
        self.articles[article.title] = article

    def __call__(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        self.requests.append(request)
        params = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query, True).items()}
        assert params["format"] == "json"
        if params.get("list") == "search":
            titles = self.searches.get(params["srsearch"], [])[: int(params["srlimit"])]
            search = [{"ns": 0, "title": t, "pageid": self._id(t)} for t in titles]
            body: dict[str, Any] = {
                "batchcomplete": "",
                "query": {"searchinfo": {"totalhits": len(titles)}, "search": search},
            }
        else:
            body = {"batchcomplete": "", "query": {"pages": self._pages(params)}}
        return 200, {}, json.dumps(body)

    def _id(self, title: str) -> int:
        article = self.articles.get(title)
        return article.pageid if article else -1

    def _pages(self, params: dict[str, str]) -> dict[str, Any]:
        title = params["titles"]
        article = self.articles.get(title)
        if article is None:
            return {"-1": {"ns": 0, "title": title, "missing": ""}}
        page: dict[str, Any] = {"pageid": article.pageid, "ns": 0, "title": article.title}
        if params["prop"] == "info|pageprops":
            slug = article.title.replace(" ", "_")
            page["fullurl"] = f"https://en.wikipedia.org/wiki/{slug}"
            if article.options is not None:
                page["pageprops"] = {"disambiguation": ""}
        elif params["prop"] == "extracts":
            page["extract"] = article.extract
        elif params["prop"] == "revisions":
            items = "".join(
                f'<li><a href="/wiki/{o.replace(" ", "_")}">{o}</a>, a meaning</li>'
                for o in article.options or []
            )
            html = f"<div><p><b>{article.title}</b> may refer to:</p><ul>{items}</ul></div>"
            page["revisions"] = [{"contentformat": "text/x-wiki", "*": html}]
        return {str(article.pageid): page}


MCTS = Article(
    "Monte Carlo tree search",
    19364411,
    "In computer science, Monte Carlo tree search (MCTS) is a heuristic search algorithm for "
    "some kinds of decision processes, most notably those employed in software that plays "
    "board games.",
)
MERCURY = Article(
    "Mercury", 19694, options=["Mercury (planet)", "Mercury (element)", "Freddie Mercury"]
)


@pytest.fixture
def api() -> FakeWikipediaApi:
    fake = FakeWikipediaApi()
    fake.add(MCTS)
    fake.add(MERCURY)
    fake.searches["monte carlo tree search"] = [MCTS.title, "Tree search", "Monte Carlo method"]
    fake.searches["mercury"] = [MERCURY.title, "Mercury (planet)"]
    return fake


@pytest.fixture
def wiki_tool(make_settings, clock):
    def make(**fields: Any):
        fields.setdefault("wikipedia_user_agent", USER_AGENT)
        settings = make_settings(tools=["wikipedia"], **fields)
        overrides = ToolOverrides(clock=clock, sleep=clock.sleep, jitter=lambda: 0.5)
        [tool] = build_tools(settings, overrides=overrides)
        return tool

    return make


def _serve(http: responses.RequestsMock, api: FakeWikipediaApi, lang: str = "en") -> None:
    http.add_callback(responses.GET, f"https://{lang}.wikipedia.org/w/api.php", callback=api)


async def test_best_match_is_summarised_with_its_url_and_other_titles(
    http, api, wiki_tool, call_tool
) -> None:
    _serve(http, api)

    message = await call_tool(wiki_tool(), {"query": "monte carlo tree search"})

    assert without_shown_passages(message) == {
        "ok": True,
        "error_kind": None,
        "sources": [
            {
                "title": "Monte Carlo tree search",
                "url": "https://en.wikipedia.org/wiki/Monte_Carlo_tree_search",
            }
        ],
    }
    assert "is a heuristic search algorithm" in message.content
    assert message.content.endswith("Other matching articles: Tree search; Monte Carlo method")


async def test_every_request_carries_the_configured_user_agent_over_https(
    http, api, wiki_tool, call_tool
) -> None:
    _serve(http, api)

    await call_tool(wiki_tool(), {"query": "monte carlo tree search"})

    assert len(api.requests) == 3  # search, page info, extract
    for request in api.requests:
        assert request.headers["User-Agent"] == USER_AGENT
        assert request.url is not None
        assert request.url.startswith("https://en.wikipedia.org/w/api.php?")


async def test_the_configured_language_edition_is_queried(http, api, wiki_tool, call_tool) -> None:
    _serve(http, api, lang="de")

    message = await call_tool(wiki_tool(wikipedia_lang="de"), {"query": "monte carlo tree search"})

    assert message.artifact["ok"] is True
    assert {urlsplit(r.url).hostname for r in api.requests} == {"de.wikipedia.org"}


async def test_the_package_state_is_restored_after_a_call(http, api, wiki_tool, call_tool) -> None:
    _serve(http, api)

    await call_tool(wiki_tool(), {"query": "monte carlo tree search"})

    assert wikipedia.wikipedia.requests is requests


async def test_a_disambiguation_page_offers_its_options(http, api, wiki_tool, call_tool) -> None:
    _serve(http, api)

    message = await call_tool(wiki_tool(), {"query": "mercury"})

    assert message.artifact == {"ok": True, "error_kind": "disambiguation", "sources": []}
    assert message.content.splitlines() == [
        'wikipedia: "mercury" is ambiguous; call wikipedia again with one of:',
        "- Mercury (planet)",
        "- Mercury (element)",
        "- Freddie Mercury",
    ]


async def test_no_search_hit_is_an_empty_success(http, api, wiki_tool, call_tool) -> None:
    _serve(http, api)

    message = await call_tool(wiki_tool(), {"query": "zzqxv"})

    assert message.artifact == {"ok": True, "error_kind": "no_results", "sources": []}
    assert len(api.requests) == 1


async def test_a_search_hit_without_a_page_falls_back_to_the_next(
    http, api, wiki_tool, call_tool
) -> None:
    api.searches["mcts"] = ["Deleted article", MCTS.title]
    _serve(http, api)

    message = await call_tool(wiki_tool(), {"query": "mcts"})

    assert [s["title"] for s in message.artifact["sources"]] == [MCTS.title]


async def test_forbidden_is_an_http_error_and_not_retried(http, wiki_tool, call_tool) -> None:
    # What Wikimedia answers a client without a proper User-Agent: an HTML page.
    http.get("https://en.wikipedia.org/w/api.php", status=403, body="<html>Forbidden</html>")

    message = await call_tool(wiki_tool(tool_max_retries=2), {"query": "q"})

    assert len(http.calls) == 1
    assert message.artifact == {"ok": False, "error_kind": "http_error", "sources": []}
    assert message.content.startswith("wikipedia: the service answered with an error (HTTP 403)")


async def test_too_many_requests_is_retried_then_reported(http, wiki_tool, call_tool) -> None:
    http.get("https://en.wikipedia.org/w/api.php", status=429, body="Too many requests")

    message = await call_tool(wiki_tool(tool_max_retries=2), {"query": "q"})

    assert len(http.calls) == 3
    assert message.content == "wikipedia: rate limited, try a different query or tool"
    assert message.artifact["error_kind"] == "rate_limited"


async def test_a_503_then_success_answers(http, api, wiki_tool, call_tool) -> None:
    http.get("https://en.wikipedia.org/w/api.php", status=503, body="<html>busy</html>")
    _serve(http, api)

    message = await call_tool(wiki_tool(), {"query": "monte carlo tree search"})

    assert message.artifact["ok"] is True
    assert len(http.calls) == 4  # the 503, then search, page info, extract


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<html><body>Wikimedia Error</body></html>", "text/html"),
        (json.dumps({"unexpected": True}), JSON),
        (json.dumps({"query": {"search": [{"no_title": 1}]}}), JSON),
    ],
    ids=["html-with-200", "json-without-query", "search-items-without-title"],
)
async def test_an_unreadable_body_is_a_bad_response(
    http, wiki_tool, call_tool, body: str, content_type: str
) -> None:
    http.get("https://en.wikipedia.org/w/api.php", body=body, content_type=content_type)

    message = await call_tool(wiki_tool(), {"query": "q"})

    assert message.artifact == {"ok": False, "error_kind": "bad_response", "sources": []}
    assert len(http.calls) == 1


async def test_an_overloaded_api_is_a_retryable_timeout(http, wiki_tool, call_tool) -> None:
    error = {"error": {"code": "internal_api_error", "info": "Pool queue is full"}}
    http.get("https://en.wikipedia.org/w/api.php", json=error)

    message = await call_tool(wiki_tool(tool_max_retries=1), {"query": "q"})

    assert message.artifact["error_kind"] == "timeout"
    assert len(http.calls) == 2


async def test_a_repeated_query_is_answered_from_the_cache(http, api, wiki_tool, call_tool) -> None:
    _serve(http, api)
    tool = wiki_tool()

    first = await call_tool(tool, {"query": "monte carlo tree search"})
    second = await call_tool(tool, {"query": "Monte Carlo Tree Search"})

    assert second.content == first.content
    assert len(api.requests) == 3
