"""`PlainErrorsAsJson`: a plain-text error becomes the JSON error body; nothing else changes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.http.errors import PlainErrorsAsJson


async def refused(request: Request) -> Response:
    return PlainTextResponse("Invalid host header", status_code=400)


async def refused_in_parts(request: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        yield b"Content "
        yield b"Too Large"

    return StreamingResponse(parts(), status_code=413, media_type="text/plain")


async def empty(request: Request) -> Response:
    return PlainTextResponse("", status_code=429)


async def fine(request: Request) -> Response:
    return PlainTextResponse("all good")


def client() -> httpx.AsyncClient:
    routes = [
        Route("/refused", refused),
        Route("/parts", refused_in_parts),
        Route("/empty", empty),
        Route("/fine", fine),
    ]
    app = PlainErrorsAsJson(Starlette(routes=routes))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_plain_text_errors_become_json_and_the_rest_passes_through() -> None:
    async with client() as http:
        refused_response = await http.get("/refused")
        in_parts = await http.get("/parts")
        empty_response = await http.get("/empty")
        fine_response = await http.get("/fine")

    assert refused_response.status_code == 400
    assert refused_response.json() == {"code": "bad_request", "message": "Invalid host header"}
    assert refused_response.headers["content-length"] == str(len(refused_response.content))
    assert in_parts.json() == {"code": "too_large", "message": "Content Too Large"}
    assert empty_response.json() == {"code": "http_error", "message": "Too Many Requests"}
    assert fine_response.headers["content-type"].startswith("text/plain")
    assert fine_response.text == "all good"
