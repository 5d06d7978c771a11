"""The page's files as the service serves them (no browser): headers, access, vendored libraries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.routes.ui import STATIC_DIR
from testkit.scenario import Scenario
from tests.e2e.ui.conftest import ServiceMaker

pytestmark = pytest.mark.e2e

WEB = Path(__file__).resolve().parents[3] / "web"


async def test_the_page_is_served_with_a_policy_that_only_runs_its_own_scripts(
    service_for: ServiceMaker,
) -> None:
    async with service_for(Scenario(plan=["A"])) as svc:
        page = await svc.client.get("/")
        script = await svc.client.get("/static/js/main.js")
        schema = (await svc.client.get("/openapi.json")).json()

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "img-src 'self' data:;" in policy
    assert "frame-ancestors 'none'" in policy
    assert script.headers["content-type"].startswith("text/javascript")
    assert "/" not in schema["paths"]  # the page is not part of the API


async def test_with_api_keys_the_page_loads_without_one_and_the_api_still_needs_it(
    service_for: ServiceMaker,
) -> None:
    async with service_for(Scenario(plan=["A"]), api_keys=[SecretStr("k")]) as svc:
        page = await svc.client.get("/")
        style = await svc.client.get("/static/app.css")
        runs = await svc.client.get("/runs")

    assert page.status_code == 200
    assert style.status_code == 200
    assert runs.status_code == 401


def test_the_vendored_libraries_are_the_versions_in_the_lock_file() -> None:
    lock = json.loads((WEB / "package-lock.json").read_text())["packages"]
    pinned = json.loads((WEB / "package.json").read_text())["dependencies"]
    vendored = {}
    for path in (STATIC_DIR / "vendor").glob("*.js"):
        first = path.read_text().splitlines()[0]
        match = re.match(r"// vendored: (\S+)@(\S+) ", first)
        assert match, f"{path.name} lacks the header web/vendor.mjs writes"
        vendored[match.group(1)] = match.group(2)

    assert vendored == pinned
    assert {name: lock[f"node_modules/{name}"]["version"] for name in pinned} == pinned
    assert "sourceMappingURL" not in "".join(
        p.read_text() for p in (STATIC_DIR / "vendor").glob("*.js")
    )
