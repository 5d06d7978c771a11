"""Where a webhook may be sent: an http(s) URL whose host resolves only to public addresses.

A run's caller names the URL and the service POSTs to it, so without this rule a caller could
make the service reach its own network (loopback, link-local cloud metadata, private ranges).
Every address the host resolves to must be global; an operator can allow private ones
(`LATS_WEBHOOK_ALLOW_PRIVATE`). The check runs when the run is created and again before each
delivery attempt (the name may resolve differently by then); redirects are never followed.
A document fetched by URL for a collection passes the same check, and again at each redirect
(app/collections/fetching.py).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from app.errors import ServiceError

RESOLVE_TIMEOUT_S = 5.0
MAX_URL_CHARS = 2048

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""The network edge: a host and port to the IP addresses it resolves to."""

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(ServiceError, code="webhook_refused"):
    """The webhook URL is not one the service sends to."""


async def system_resolve(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver, within `RESOLVE_TIMEOUT_S`."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(RESOLVE_TIMEOUT_S):
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def is_public(address: IpAddress) -> bool:
    """Whether `address` is a global unicast address (an IPv4-mapped IPv6 address is judged
    as the IPv4 address it carries)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def _parts(url: str, what: str) -> tuple[str, int]:
    if len(url) > MAX_URL_CHARS:
        raise WebhookRefused(f"the {what} URL is longer than {MAX_URL_CHARS} characters")
    try:
        httpx.URL(url)  # what the delivery will send to must parse there too
        parts = urlsplit(url)
        port = parts.port
    except (ValueError, httpx.InvalidURL) as e:
        raise WebhookRefused(f"the {what} URL is not a valid URL") from e
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused(f"the {what} URL must be http:// or https:// with a host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def check_target(
    url: str, *, allow_private: bool, resolve: Resolver, what: str = "webhook"
) -> None:
    """Refuse (`WebhookRefused`) a URL that is not http(s), or whose host is or resolves to a
    loopback, link-local, private or otherwise non-global address (unless `allow_private`),
    or does not resolve. `what` names the URL in the refusal: the webhook's, or the one a
    document is fetched from (app/collections/fetching.py)."""
    host, port = _parts(url, what)
    if allow_private:
        return
    try:
        addresses: list[IpAddress] = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = await resolve(host, port)
        except (OSError, TimeoutError, UnicodeError) as e:
            raise WebhookRefused(f"the {what} host {host!r} does not resolve") from e
        addresses = [ipaddress.ip_address(text.split("%", 1)[0]) for text in found]
    if not addresses:
        raise WebhookRefused(f"the {what} host {host!r} does not resolve")
    private = sorted(str(a) for a in addresses if not is_public(a))
    if private:
        raise WebhookRefused(
            f"the {what} host {host!r} is a loopback, link-local or private address "
            f"({', '.join(private)}); the service reaches only public addresses"
        )
