"""The Host header check: a browser page on another site that resolves its own name to this
machine (DNS rebinding) sends its own name as Host, and is refused here with 400. The health
probes answer any Host (an orchestrator probes by address; they disclose nothing)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_ANY_ADDRESS = {"0.0.0.0", "::", "[::]", ""}
PROBES = frozenset({"/healthz", "/readyz"})


def host_of(header: str) -> str:
    """The host part of a Host header, lower case, without its port."""
    header = header.strip().lower()
    if header.startswith("["):  # [v6]:port
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def allowed_hosts(
    configured: list[str] | None, keys_enabled: bool, bind_host: str | None
) -> frozenset[str] | None:
    """The accepted hosts, or None for any. Unset: any when keys guard the API, else the
    loopback names plus the host the server is bound to."""
    if configured is None:
        if keys_enabled:
            return None
        bound = (bind_host or "").lower()
        if ":" in bound and not bound.startswith("["):
            bound = f"[{bound}]"
        extra = () if bound in _ANY_ADDRESS else (bound,)
        return frozenset((*LOOPBACK, *extra))
    if "*" in configured:
        return None
    return frozenset(host_of(h) if not h.startswith("*.") else h.lower() for h in configured)


def _allowed(host: str, allowed: frozenset[str]) -> bool:
    if host in allowed:
        return True
    return any(p.startswith("*.") and host.endswith(p[1:]) for p in allowed)


class HostCheck:
    """Refuses HTTP requests whose Host is not allowed, with the API's JSON error body."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allowed is not None and scope["type"] == "http" and scope["path"] not in PROBES:
            host = host_of(Headers(scope=scope).get("host", ""))
            if not _allowed(host, self.allowed):
                body = {"code": "host_not_allowed", "message": "this Host is not served here"}
                await JSONResponse(body, 400)(scope, receive, send)
                return
        await self.app(scope, receive, send)
