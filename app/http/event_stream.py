"""Streamed responses with a bounded buffer per client: a client that stops reading is cut
(`sse_response` makes one of a route's SSE frames).

A stream's frames go to the client's connection; what the client has not read waits in the
kernel's send buffer of that socket and then in the event loop's write buffer of its
transport. Both are bounded per stream to about `LATS_STREAM_BUFFER_BYTES` (half each: the
socket's `SO_SNDBUF`, which Linux doubles for its own bookkeeping, and the transport's
high-water mark). Once they are full, the server's write of the next frame waits; a write that
waits longer than `LATS_STREAM_STALL_S` ends the stream: the connection is aborted (its
buffers freed at once), the stream's slot is given back, and the run goes on. The client can
re-join with `Last-Event-ID` (or `?after=`) and read from where it stopped.

The transport is the one the server (uvicorn) handed the app: `PlantreeApp.__call__` keeps it
in the request's scope. Under a server that does not expose it, the buffers are the server's
own and a stalled stream is ended by returning, which closes the connection once it drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import FastAPI
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from app.http.sse import SSE_HEADERS

logger = logging.getLogger(__name__)

TRANSPORT_KEY = "plantree.transport"
STALL_S = 30.0
BUFFER_BYTES = 256 * 1024


class PlantreeApp(FastAPI):
    """The FastAPI app, keeping each HTTP request's transport in its scope (see the module
    docstring) before anything wraps the server's `send`."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            cycle = getattr(send, "__self__", None)  # uvicorn's request-response cycle
            transport = getattr(cycle, "transport", None)
            if isinstance(transport, asyncio.Transport):
                scope[TRANSPORT_KEY] = transport
        await super().__call__(scope, receive, send)


def _limits(scope: Scope) -> tuple[float, int]:
    app = scope.get("app")
    settings = getattr(getattr(app, "state", None), "settings", None)
    stall_s = getattr(settings, "stream_stall_s", STALL_S)
    buffer_bytes = getattr(settings, "stream_buffer_bytes", BUFFER_BYTES)
    return float(stall_s), int(buffer_bytes)


def bound_buffers(transport: asyncio.Transport, buffer_bytes: int) -> None:
    """Bound what a stream's connection holds for a client that does not read."""
    half = max(4096, buffer_bytes // 2)
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, half // 2)  # Linux doubles it
    transport.set_write_buffer_limits(high=half)


class EventStreamResponse(StreamingResponse):
    """A `StreamingResponse` whose client must keep reading (see the module docstring)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._stall_s, buffer_bytes = _limits(scope)
        self._transport: asyncio.Transport | None = scope.get(TRANSPORT_KEY)
        self._path = str(scope.get("path", ""))
        if self._transport is not None:
            bound_buffers(self._transport, buffer_bytes)
        await super().__call__(scope, receive, send)

    async def stream_response(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        frames: Any = self.body_iterator
        try:
            async for chunk in frames:
                body = chunk if isinstance(chunk, bytes | memoryview) else chunk.encode()
                if not await self._sent(send, body):
                    return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            close = getattr(frames, "aclose", None)
            if close is not None:
                await close()  # the stream's slot and its follower go now, not at collection

    async def _sent(self, send: Send, body: bytes | memoryview) -> bool:
        """Write one chunk; False when the client let it wait past the stall limit (the
        connection is then aborted)."""
        try:
            async with asyncio.timeout(self._stall_s):
                await send({"type": "http.response.body", "body": body, "more_body": True})
        except TimeoutError:
            logger.warning(
                "stream %s cut: its client read nothing for %.0fs (its buffers are full)",
                self._path,
                self._stall_s,
            )
            if self._transport is not None:
                self._transport.abort()
                await asyncio.sleep(0)  # the server sees the connection lost before we return
            return False
        return True


def sse_response(frames: AsyncIterator[bytes], headers: Mapping[str, str]) -> EventStreamResponse:
    """`frames` as a Server-Sent Events response: the headers every event stream carries
    (`SSE_HEADERS`), then the route's own `headers`."""
    return EventStreamResponse(
        frames, media_type="text/event-stream", headers={**SSE_HEADERS, **headers}
    )
