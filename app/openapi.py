"""The OpenAPI document, with the run event schema (SSE payloads) under components."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from agents.events import EVENT_ADAPTER

SSE_PATHS = (("/solve", "post"), ("/runs/{run_id}/events", "get"))


def install(app: FastAPI) -> None:
    """Make `app.openapi()` describe each SSE frame's `data` as a `RunEvent`."""

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
        for path, method in SSE_PATHS:
            content = spec["paths"][path][method]["responses"]["200"]["content"]
            content["text/event-stream"] = {
                "schema": {"type": "string"},
                "itemSchema": {"$ref": "#/components/schemas/RunEvent"},
            }
        app.openapi_schema = spec
        return spec

    app.openapi = build  # type: ignore[method-assign]  # FastAPI's documented override hook
