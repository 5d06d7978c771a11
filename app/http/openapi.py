"""The OpenAPI document (with the run event schema, the SSE payloads, under components) and the
pages that show it: Swagger UI at `/docs`, Redoc at `/redoc`.

Both viewers are vendored (vendoring/, served under /static/vendor) and started by script files of
their own, so the pages work offline, load nothing from another origin and need no inline
script. FastAPI's built-in pages would fetch both from a CDN and inline their start-up script.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse

from agents.events import EVENT_ADAPTER
from app.http import security_headers
from app.http.routes.ui import PAGE_HEADERS, PAGES_DIR, page

SSE_PATHS = (("/solve", "post"), ("/runs/{run_id}/events", "get"))

# One SSE frame as OpenAPI 3.2 describes an event stream's items: `data` is JSON, a `RunEvent`.
SSE_ITEM = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "description": "The event's `type`."},
        "id": {"type": "string", "description": "The per-run sequence number."},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": "#/components/schemas/RunEvent"},
        },
    },
    "required": ["data"],
}

# What a started run's `run_id` leads to (OpenAPI links: clients and fuzzers follow them).
RUN_LINKS = {
    "GetRun": ("/runs/{run_id}", "get"),
    "FollowRun": ("/runs/{run_id}/events", "get"),
    "TraceRun": ("/runs/{run_id}/trace", "get"),
    "CancelRun": ("/runs/{run_id}/cancel", "post"),
}


docs_router = APIRouter(include_in_schema=False)


@docs_router.get("/docs")
async def swagger_ui() -> FileResponse:
    """The API's interactive documentation (Swagger UI)."""
    return page("docs.html")


# Redoc's bundle inserts one stylesheet (perfect-scrollbar's) as it loads, before `Redoc.init`
# can hand it the nonce: the policy allows exactly that text (and the empty element it starts
# as) by hash. A new Redoc version may change it: tests/e2e/ui/test_docs_pages.py then reports
# the policy violation with the new hash.
REDOC_STYLE_HASHES = (
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",
    "'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='",
)


@docs_router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    """The API's reference documentation (Redoc). Redoc injects its styles as `<style>`
    elements at run time: they carry this response's nonce, which the page's policy allows."""
    html = (PAGES_DIR / "redoc.html").read_text(encoding="utf-8")
    security_headers.allow_styles(request, *REDOC_STYLE_HASHES)
    nonce = security_headers.style_nonce(request)
    return HTMLResponse(html.replace("{{style_nonce}}", nonce), headers=PAGE_HEADERS)


def install(app: FastAPI) -> None:
    """Serve `/docs` and `/redoc`; make `app.openapi()` describe each SSE frame's `data` as a
    `RunEvent` and link a started run to its operations. The app must be created with
    `docs_url=None, redoc_url=None`."""
    app.include_router(docs_router)

    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(
            title=app.title, version=app.version, summary=app.summary, routes=app.routes
        )
        events = EVENT_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(events.pop("$defs", {}))
        schemas["RunEvent"] = {
            **events,
            "description": "The `data:` of one SSE frame (`event:` is its `type`, `id:` the "
            "per-run sequence number). See docs/events.md.",
        }
        paths = spec["paths"]
        for path, method in SSE_PATHS:
            content = paths[path][method]["responses"]["200"]["content"]
            content["text/event-stream"] = {"itemSchema": SSE_ITEM}
        paths["/runs"]["post"]["responses"]["202"]["links"] = {
            name: {
                "operationId": paths[path][method]["operationId"],
                "parameters": {"run_id": "$response.body#/run_id"},
            }
            for name, (path, method) in RUN_LINKS.items()
        }
        app.openapi_schema = spec
        return spec

    app.openapi = build  # type: ignore[method-assign]  # FastAPI's documented override hook
