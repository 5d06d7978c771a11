"""The Host header check: without keys only local names (and those configured) are served."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"])


async def statuses(service_for: ServiceMaker, hosts: list[str], **overrides: Any) -> list[int]:
    async with service_for(TREE, **overrides) as svc:
        return [
            (await svc.client.get("/runs", headers={"Host": host})).status_code for host in hosts
        ]


async def test_without_keys_a_foreign_host_is_400_json_and_local_names_are_served(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        refused = await svc.client.get("/runs", headers={"Host": "rebound.example:8000"})
        page = await svc.client.get("/", headers={"Host": "rebound.example"})
        health = await svc.client.get("/healthz", headers={"Host": "evil.example"})
        served = [
            (await svc.client.get("/runs", headers={"Host": host})).status_code
            for host in ("localhost:8000", "127.0.0.1", "[::1]:8000", "LOCALHOST")
        ]

    assert refused.status_code == 400
    assert refused.json() == {"code": "host_not_allowed", "message": "this Host is not served here"}
    assert "content-security-policy" in refused.headers
    assert page.status_code == 400
    assert health.status_code == 200  # probes answer any Host
    assert served == [200, 200, 200, 200]


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        (["api", "*.example.org"], [200, 200, 400, 400]),
        (["*"], [200, 200, 200, 200]),
    ],
)
async def test_the_allowed_hosts_setting_replaces_the_default(
    service_for: ServiceMaker, allowed: list[str], expected: list[int]
) -> None:
    hosts = ["api:8000", "plantree.example.org", "localhost", "other.example"]

    assert await statuses(service_for, hosts, allowed_hosts=allowed) == expected


async def test_with_keys_any_host_is_served_unless_hosts_are_configured(
    service_for: ServiceMaker,
) -> None:
    keys = {"api_keys": [SecretStr("k")]}
    hosts = ["plantree.example.org", "localhost"]
    open_hosts = await statuses(service_for, hosts, **keys)
    keyed = {"X-API-Key": "k"}
    async with service_for(TREE, allowed_hosts=["localhost"], **keys) as svc:
        listed = [
            (await svc.client.get("/runs", headers={"Host": h, **keyed})).status_code for h in hosts
        ]

    assert open_hosts == [401, 401]  # past the Host check, to the key check
    assert listed == [400, 200]
