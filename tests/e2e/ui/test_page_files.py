"""The page's files as the service serves them (no browser): headers, access, vendored libraries."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.http.routes.ui import PAGES_DIR, STATIC_DIR
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

pytestmark = pytest.mark.e2e

VENDORING = Path(__file__).resolve().parents[3] / "vendoring"


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
    assert not {"/", "/docs", "/redoc"} & set(schema["paths"])  # pages are not the API


@pytest.mark.parametrize("name", ["index.html", "docs.html", "redoc.html"])
def test_a_page_has_no_inline_script_or_style(name: str) -> None:
    parser = InlineFinder()
    parser.feed((PAGES_DIR / name).read_text())

    assert parser.scripts, "a page without a script file"
    assert parser.inline == []


class InlineFinder(HTMLParser):
    """Collects what the page policy would refuse: script bodies, style elements and
    attributes, event-handler attributes and `javascript:` URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script":
            self._in_script = True
            if named.get("src"):
                self.scripts.append(named["src"] or "")
            else:
                self.inline.append("<script> without src")
        if tag == "style":
            self.inline.append("<style>")
        for attr, value in attrs:
            if attr == "style" or attr.startswith("on"):
                self.inline.append(f"<{tag} {attr}=…>")
            if value and value.strip().lower().startswith("javascript:"):
                self.inline.append(f"<{tag} {attr}=javascript:…>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script body")


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
    lock = json.loads((VENDORING / "package-lock.json").read_text())["packages"]
    pinned = json.loads((VENDORING / "package.json").read_text())["dependencies"]
    vendored = {}
    files = [p for p in (STATIC_DIR / "vendor").iterdir() if p.suffix in {".js", ".css"}]
    for path in files:
        text = path.read_text()
        match = re.match(r"(?://|/\*) vendored: (\S+)@(\S+) ", text.splitlines()[0])
        assert match, f"{path.name} lacks the header vendoring/vendor.mjs writes"
        vendored[match.group(1)] = match.group(2)
        # No dangling source map: devtools would fetch it. (Redoc's bundle carries one inside
        # a string, for the worker it builds; that one is not a reference of the file's own.)
        assert "sourceMappingURL" not in text.rstrip().splitlines()[-1], path.name

    assert vendored == pinned
    assert {name: lock[f"node_modules/{name}"]["version"] for name in pinned} == pinned
