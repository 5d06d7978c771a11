"""A document fetched by URL for a collection, through the webhooks' guard
(app/webhooks/targets.py): an http(s) URL whose host resolves only to public addresses unless
the operator allows private ones, checked again at every redirect (followed here, a few at
most, never by the client), the body read to the per-file bound, the whole fetch within one
deadline. The file's name comes from the URL's last path segment, with the suffix its
`Content-Type` implies when it has none, so the reader tells text kinds apart as for an upload.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpx

from app.collections.errors import UrlFailed, UrlRefused
from app.collections.uploads import shown
from app.store.collection_base import DocumentTooLarge
from app.webhooks.targets import Resolver, WebhookRefused, check_target, system_resolve
from tools.documents.reading import MAX_NAME_CHARS, DocumentRefused, clean_name

MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
SUFFIXES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/markdown": ".md",
    "text/plain": ".txt",
}
_KNOWN_SUFFIXES = (".pdf", ".docx", ".html", ".htm", ".xhtml", ".md", ".markdown", ".txt", ".text")


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched file: the name it is read under, the URL it came from, and its bytes."""

    name: str
    url: str
    data: bytes


def fetched_name(url: str, content_type: str | None) -> str:
    """The name a fetched file is read under: the URL's last path segment (its host when the
    path has none, or none that is a file name), with the suffix its media type implies when
    it has none the reader knows."""
    parts = urlsplit(url)
    segment = unquote(parts.path.rstrip("/").rsplit("/", 1)[-1]).strip()
    try:
        name = clean_name(segment) if segment else ""
    except DocumentRefused:
        name = ""
    name = name or (parts.hostname or "document")
    media = (content_type or "").split(";", 1)[0].strip().lower()
    suffix = SUFFIXES.get(media, "")
    if suffix and not name.lower().endswith(_KNOWN_SUFFIXES):
        name += suffix
    if len(name) > MAX_NAME_CHARS:
        name = name[: MAX_NAME_CHARS - len(suffix)] + suffix
    return name


class UrlFetcher:
    """Fetches document URLs (`client`: its own, without redirects or proxies from the
    environment), within `timeout_s` a fetch and `max_bytes` a file."""

    def __init__(
        self,
        *,
        allow_private: bool,
        timeout_s: float,
        max_bytes: int,
        resolve: Resolver = system_resolve,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._allow_private = allow_private
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._resolve = resolve
        self._transport = transport

    async def fetch(self, url: str) -> Fetched:
        """The file at `url`; raises `UrlRefused`, `UrlFailed` or `DocumentTooLarge`."""
        try:
            async with (
                httpx.AsyncClient(
                    follow_redirects=False,
                    trust_env=False,
                    timeout=self._timeout_s,
                    transport=self._transport,
                ) as client,
                asyncio.timeout(self._timeout_s),
            ):
                return await self._follow(client, url)
        except TimeoutError as e:
            raise UrlFailed(f"the URL gave no answer within {self._timeout_s:g} seconds") from e

    async def _follow(self, client: httpx.AsyncClient, url: str) -> Fetched:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                await check_target(
                    url, allow_private=self._allow_private, resolve=self._resolve, what="document"
                )
            except WebhookRefused as e:
                raise UrlRefused(str(e)) from e
            try:
                async with client.stream("GET", url) as response:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECTS and location:
                        url = str(response.url.join(location))
                        continue
                    if response.status_code >= 400:
                        raise UrlFailed(f"the URL answered HTTP {response.status_code}")
                    data = await self._body(response)
                    name = fetched_name(str(response.url), response.headers.get("content-type"))
                    return Fetched(name, str(response.url), data)
            except httpx.TimeoutException as e:
                raise UrlFailed(f"the URL gave no answer within {self._timeout_s:g} seconds") from e
            except (httpx.HTTPError, httpx.InvalidURL) as e:
                raise UrlFailed(f"the URL could not be fetched ({type(e).__name__})") from e
        raise UrlFailed(f"the URL redirects more than {MAX_REDIRECTS} times")

    async def _body(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise DocumentTooLarge(self._too_large(str(response.url)))
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_bytes:
                raise DocumentTooLarge(self._too_large(str(response.url)))
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, url: str) -> str:
        return f"the file at {shown(url)} is over the limit of {self._max_bytes:,} bytes a file"
