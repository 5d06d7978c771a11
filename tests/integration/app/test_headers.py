"""Every response carries the security headers: pages, static files, JSON, SSE and errors."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from app.http import security_headers
from app.http.openapi import REDOC_STYLE_HASHES
from app.http.security_headers import API_CSP, COMMON_HEADERS, PAGE_CSP
from app.http.sse import aframes
from app.main import create_app
from app.settings import Settings
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"])


def assert_protected(response: httpx.Response, policy: str) -> None:
    where = f"{response.request.method} {response.request.url.path} ({response.status_code})"
    assert response.headers.get("content-security-policy") == policy, where
    for name, value in COMMON_HEADERS.items():
        assert response.headers.get(name) == value, f"{where}: {name}"


def page_policy(response: httpx.Response) -> str:
    """The page policy `response` must carry: the strict one, plus on /redoc the style sources
    its viewer needs (a nonce of this response's own, the hashes of its fixed stylesheet)."""
    if response.request.url.path != "/redoc":
        return PAGE_CSP
    nonce = re.search(r'name="csp-style-nonce" content="([\w-]+)"', response.text)
    assert nonce, "/redoc lacks its style nonce"
    sources = (*REDOC_STYLE_HASHES, f"'nonce-{nonce.group(1)}'")
    return security_headers.policy_for("text/html", sources)


def get_paths(settings: Settings) -> list[str]:
    """The app's GET routes that take no path parameter (the pages and the listing routes)."""
    app = create_app(settings, models=FakeModels(TREE), tools=[])
    # Included routers are resolved lazily; this walks them as the OpenAPI builder does.
    return [
        route.path
        for route in iter_route_contexts(app.routes)
        if route.path and "GET" in (route.methods or set()) and "{" not in route.path
    ]


def test_the_page_policy_allows_no_inline_script_style_or_other_origin() -> None:
    assert "'unsafe-inline'" not in PAGE_CSP
    assert "'unsafe-eval'" not in PAGE_CSP
    assert "*" not in PAGE_CSP
    directives = dict(d.strip().split(" ", 1) for d in PAGE_CSP.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"


async def test_every_html_route_has_the_page_policy_and_framing_headers(
    service_for: ServiceMaker, settings: Settings
) -> None:
    paths = get_paths(settings)
    async with service_for(TREE) as svc:
        responses = [await svc.client.get(path) for path in paths]

    pages = [r for r in responses if r.headers["content-type"].startswith("text/html")]
    assert {r.request.url.path for r in pages} >= {"/", "/docs", "/redoc"}
    for response in pages:
        assert response.status_code == 200
        assert_protected(response, page_policy(response))
    for response in responses:
        if response not in pages:
            assert_protected(response, API_CSP)


async def test_static_files_have_the_headers_and_serve_no_page(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        script, vendored, page, listing = await svc.get_each(
            "/static/js/main.js", "/static/vendor/swagger-ui.css", "/static/index.html", "/static/"
        )

    assert script.status_code == vendored.status_code == 200
    assert_protected(script, API_CSP)
    assert_protected(vendored, API_CSP)
    assert page.status_code == listing.status_code == 404
    assert_protected(page, API_CSP)


async def test_api_answers_and_errors_have_the_headers(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        answers = [
            await svc.client.get("/healthz"),
            await svc.client.get("/openapi.json"),
            await svc.client.get("/nowhere"),
            await svc.client.get("/runs/nope"),
            await svc.client.delete("/healthz"),
            await svc.client.post("/runs", json={"task": ""}),
            await svc.client.post("/runs", json={"task": "go"}),
        ]

    assert [r.status_code for r in answers] == [200, 200, 404, 404, 405, 422, 202]
    for response in answers:
        assert_protected(response, API_CSP)


async def test_a_refused_key_gets_the_headers(service_for: ServiceMaker) -> None:
    async with service_for(TREE, api_keys=[SecretStr("k")]) as svc:
        refused = await svc.client.get("/runs")
        page = await svc.client.get("/")

    assert refused.status_code == 401
    assert_protected(refused, API_CSP)
    assert_protected(page, PAGE_CSP)


async def test_an_event_stream_has_the_headers_and_still_streams(
    service_for: ServiceMaker,
) -> None:
    async with (
        service_for(TREE) as svc,
        svc.client.stream("POST", "/solve", json={"task": "go"}) as stream,
    ):
        types = [frame.event async for frame in aframes(stream.aiter_lines())]

    assert stream.headers["content-type"].startswith("text/event-stream")
    assert_protected(stream, API_CSP)
    assert types[-1] == "done"


async def test_an_unexpected_500_still_carries_the_headers() -> None:
    async def boom(request: Request) -> PlainTextResponse:
        raise RuntimeError("boom")

    app = create_app(Settings(), models=FakeModels(TREE), tools=[])
    app.add_api_route("/boom", boom)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        response = await client.get("/boom")

    assert response.status_code == 500
    assert response.json() == {"code": "internal", "message": "internal error"}
    assert_protected(response, API_CSP)


async def test_the_body_limits_413_gets_the_headers_and_the_json_body(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, max_body_bytes=2048) as svc:
        response = await svc.client.request("GET", "/healthz", content=b"y" * 5000)

    assert response.status_code == 413
    assert response.json() == {"code": "too_large", "message": "Content Too Large"}
    assert_protected(response, API_CSP)


async def test_each_redoc_page_gets_a_nonce_of_its_own(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        first, second, index = await svc.get_each("/redoc", "/redoc", "/")

    policies = {first.headers["content-security-policy"], second.headers["content-security-policy"]}
    assert len(policies) == 2
    assert "'nonce-" not in index.headers["content-security-policy"]
    assert "{{" not in first.text


def test_extra_style_sources_only_widen_style_src() -> None:
    policy = security_headers.policy_for("text/html", ("'nonce-abc'",))

    assert policy == PAGE_CSP.replace("style-src 'self'", "style-src 'self' 'nonce-abc'")
    assert security_headers.policy_for("application/json", ("'nonce-abc'",)) == API_CSP


@pytest.mark.parametrize(
    ("content_type", "policy"),
    [
        ("text/html; charset=utf-8", PAGE_CSP),
        ("TEXT/HTML", PAGE_CSP),
        ("application/json", API_CSP),
    ],
)
def test_the_policy_follows_the_content_type(content_type: str, policy: str) -> None:
    assert security_headers.policy_for(content_type) == policy
