"""Security headers on every response the service sends: pages, API, streams and errors.

Pure ASGI middleware (it only edits the `http.response.start` message), so a streamed response
(SSE) passes through unbuffered. `create_app` adds it outermost, around the unexpected-error
handler (`app/http/errors.py: UnexpectedErrors`), so even an unexpected 500 carries the headers.
"""

from __future__ import annotations

import secrets

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from app.http.asgi import HttpMiddleware

# HTML pages (the run page, /docs, /redoc) run only the service's own script files and styles;
# nothing is fetched from another origin (images included: a model's answer cannot make the
# browser call elsewhere), no plug-ins, no <base> rewriting, no form posts elsewhere, and no
# other site may frame them. `data:` images are the docs viewers' inline icons.
_PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'{style_sources}; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PAGE_CSP = _PAGE_CSP.format(style_sources="")
# Everything else (JSON, SSE, files) is never meant to be rendered as a document: if a browser
# is tricked into doing so, nothing in it may load or run.
API_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

COMMON_HEADERS = {
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}


# Where a page's route leaves its extra style sources for the middleware (the request's state).
STYLE_SOURCES = "csp_style_sources"


def allow_styles(request: Request, *sources: str) -> None:
    """Let this response's page also apply the inline styles `sources` name (CSP source
    expressions: a `'nonce-…'` or a `'sha256-…'`). Only for a vendored viewer that injects its
    styles at run time; the page's own markup stays free of inline style."""
    current: tuple[str, ...] = getattr(request.state, STYLE_SOURCES, ())
    setattr(request.state, STYLE_SOURCES, (*current, *sources))


def style_nonce(request: Request) -> str:
    """A fresh nonce for this response: `<style>` elements carrying it may apply."""
    nonce = secrets.token_urlsafe(18)
    allow_styles(request, f"'nonce-{nonce}'")
    return nonce


def policy_for(content_type: str, style_sources: tuple[str, ...] = ()) -> str:
    """The Content-Security-Policy for a response of `content_type`."""
    if not content_type.lower().startswith("text/html"):
        return API_CSP
    return _PAGE_CSP.format(style_sources="".join(f" {source}" for source in style_sources))


class SecurityHeaders(HttpMiddleware):
    """Adds the security headers to every HTTP response of `app`, replacing any it set."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:

        # The routes below see this same dict as `request.state` (see `allow_styles`).
        state = scope.setdefault("state", {})

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                policy = policy_for(headers.get("content-type", ""), state.get(STYLE_SOURCES, ()))
                headers["Content-Security-Policy"] = policy
                for name, value in COMMON_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
