"""A document fetched by URL (app/collections/fetching.py), against a scripted transport and
resolver (no network): the webhooks' guard on the URL and on every redirect, the body's bound,
the redirects' bound, and the name the file is read under."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.collections.errors import UrlFailed, UrlRefused
from app.collections.fetching import MAX_REDIRECTS, UrlFetcher, fetched_name
from app.store.collection_base import DocumentTooLarge

ADDRESSES = {"docs.example": "93.184.216.34", "intranet.example": "10.0.0.7"}


async def resolve(host: str, port: int) -> list[str]:
    return [ADDRESSES[host]]


def fetcher(handler: httpx.MockTransport, max_bytes: int = 1000) -> UrlFetcher:
    return UrlFetcher(
        allow_private=False, timeout_s=5, max_bytes=max_bytes, resolve=resolve, transport=handler
    )


def transport(routes: dict[str, httpx.Response], asked: list[str]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return routes[str(request.url)]

    return httpx.MockTransport(answer)


async def test_a_public_url_is_fetched_through_its_redirects() -> None:
    asked: list[str] = []
    routes = {
        "https://docs.example/latest": httpx.Response(302, headers={"Location": "/v2/guide"}),
        "https://docs.example/v2/guide": httpx.Response(
            200, text="<html><title>Guide</title></html>", headers={"Content-Type": "text/html"}
        ),
    }

    fetched = await fetcher(transport(routes, asked)).fetch("https://docs.example/latest")

    assert asked == ["https://docs.example/latest", "https://docs.example/v2/guide"]
    assert (fetched.name, fetched.url) == ("guide.html", "https://docs.example/v2/guide")
    assert fetched.data.startswith(b"<html>")


@pytest.mark.parametrize(
    "location", ["http://127.0.0.1/admin", "http://intranet.example/", "http://169.254.169.254/"]
)
async def test_a_redirect_to_a_private_address_is_refused_before_it_is_followed(
    location: str,
) -> None:
    asked: list[str] = []
    routes = {"https://docs.example/go": httpx.Response(302, headers={"Location": location})}

    with pytest.raises(UrlRefused, match=r"the document host .* is a loopback, link-local or"):
        await fetcher(transport(routes, asked)).fetch("https://docs.example/go")

    assert asked == ["https://docs.example/go"]


async def test_a_private_url_is_refused_without_a_request() -> None:
    asked: list[str] = []

    with pytest.raises(UrlRefused):
        await fetcher(transport({}, asked)).fetch("http://intranet.example/wiki")
    with pytest.raises(UrlRefused, match="http:// or https://"):
        await fetcher(transport({}, asked)).fetch("file:///etc/passwd")

    assert asked == []


async def test_endless_redirects_end_after_a_few() -> None:
    asked: list[str] = []
    routes = {"https://docs.example/loop": httpx.Response(302, headers={"Location": "/loop"})}

    with pytest.raises(UrlFailed, match=f"more than {MAX_REDIRECTS} times"):
        await fetcher(transport(routes, asked)).fetch("https://docs.example/loop")

    assert len(asked) == MAX_REDIRECTS + 1


async def test_a_body_over_the_limit_is_refused() -> None:
    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(2):
            yield b"x" * 600

    routes = {
        "https://docs.example/declared": httpx.Response(200, content=b"x" * 5000),
        "https://docs.example/streamed": httpx.Response(200, content=chunks()),
    }
    fetch = fetcher(transport(routes, []))

    with pytest.raises(DocumentTooLarge, match="over the limit of 1,000 bytes"):
        await fetch.fetch("https://docs.example/declared")
    with pytest.raises(DocumentTooLarge):
        await fetch.fetch("https://docs.example/streamed")


async def test_an_error_status_fails_the_fetch() -> None:
    routes = {"https://docs.example/gone": httpx.Response(410)}

    with pytest.raises(UrlFailed, match="HTTP 410"):
        await fetcher(transport(routes, [])).fetch("https://docs.example/gone")


@pytest.mark.parametrize(
    ("url", "content_type", "name"),
    [
        ("https://docs.example/papers/heron.pdf", "application/pdf", "heron.pdf"),
        ("https://docs.example/papers/heron", "application/pdf", "heron.pdf"),
        ("https://docs.example/notes.md?raw=1", "text/plain", "notes.md"),
        ("https://docs.example/", "text/html; charset=utf-8", "docs.example.html"),
        ("https://docs.example/a%20b", None, "a b"),
        ("https://docs.example/bad%00name", "text/plain", "docs.example.txt"),
    ],
)
def test_a_fetched_file_is_named_by_its_url_and_media_type(
    url: str, content_type: str | None, name: str
) -> None:
    assert fetched_name(url, content_type) == name
