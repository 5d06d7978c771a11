"""Callers' mistakes get clear 4xx answers, never a 500 or internal text; keys guard the API."""

from __future__ import annotations

from pathlib import Path

import httpx
from pydantic import SecretStr

from app.main import create_app
from app.settings import Settings
from calls.models import SettingsModelFactory
from calls.settings import DEFAULT_MODEL, ROLES
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.server import serve

TREE = Scenario(plan=["A"])


async def test_an_invalid_body_gets_422_with_field_messages(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        response = await svc.client.post("/solve", json={"task": "", "max_paths": 999})

    body = response.json()
    assert response.status_code == 422
    assert body["code"] == "invalid_request"
    assert {tuple(f["loc"]) for f in body["fields"]} == {("body", "task"), ("body", "max_paths")}


async def test_unknown_fields_and_non_json_bodies_are_422(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        unknown = await svc.client.post("/runs", json={"task": "x", "maxpaths": 1})
        garbage = await svc.client.post(
            "/runs", content=b"{not json", headers={"Content-Type": "application/json"}
        )

    assert unknown.status_code == 422
    assert garbage.status_code == 422


async def test_a_task_over_4000_characters_is_refused(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        response = await svc.client.post("/runs", json={"task": "x" * 4001})

    assert response.status_code == 422


async def test_an_oversized_body_gets_413(service_for: ServiceMaker) -> None:
    async with service_for(TREE, max_body_bytes=2048) as svc:
        response = await svc.client.post("/runs", json={"task": "x", "pad": "y" * 5000})

    assert response.status_code == 413


async def test_unknown_runs_are_404_everywhere(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        statuses = [
            (await svc.client.get("/runs/nope")).status_code,
            (await svc.client.get("/runs/nope/events")).status_code,
            (await svc.client.get("/runs/nope/trace")).status_code,
            (await svc.client.post("/runs/nope/cancel")).status_code,
        ]

    assert statuses == [404, 404, 404, 404]


async def test_bad_query_parameters_are_422(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        responses = await svc.get_each(
            "/runs?limit=0", "/runs?status=bogus", "/runs/x/events?after=-1"
        )

    assert [r.status_code for r in responses] == [422, 422, 422]


async def test_with_keys_configured_every_endpoint_but_health_needs_one(
    service_for: ServiceMaker,
) -> None:
    keys = [SecretStr("k-one"), SecretStr("k-two")]
    async with service_for(TREE, api_keys=keys) as svc:
        missing = await svc.client.get("/runs")
        wrong = await svc.client.get("/runs", headers={"Authorization": "Bearer nope"})
        bearer = await svc.client.get("/runs", headers={"Authorization": "Bearer k-one"})
        header = await svc.client.get("/runs", headers={"X-API-Key": "k-two"})
        solve = await svc.client.post("/solve", json={"task": "x"})
        health = await svc.client.get("/healthz")
        ready = await svc.client.get("/readyz")

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.json()["code"] == "unauthorized"
    assert "k-one" not in missing.text
    assert (bearer.status_code, header.status_code) == (200, 200)
    assert solve.status_code == 401
    assert (health.status_code, ready.status_code) == (200, 200)


async def test_readyz_reports_the_store_and_model(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        body = (await svc.client.get("/readyz")).json()

    assert body["status"] == "ready"
    assert body["checks"]["database"] == "ok"
    # What each role's model factory says it uses, not the settings' default model string.
    assert body["models"] == dict.fromkeys(ROLES, "scripted")


async def test_readyz_reports_the_local_model_the_factory_falls_back_to(
    no_model_environment: None, tmp_path: Path
) -> None:
    # No model configured and no Gemini key: the settings still name the Gemini default.
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        model_voter="openai:gpt-x",
    )
    app = create_app(settings, models=SettingsModelFactory(settings), tools=[], worker=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c,
    ):
        body = (await c.get("/readyz")).json()

    assert settings.model == DEFAULT_MODEL
    assert body["models"] == {**dict.fromkeys(ROLES, "local"), "voter": "openai:gpt-x"}


async def test_readyz_reports_the_models_behind_the_call_policy(settings: Settings) -> None:
    async with serve(settings, TREE, policy=True) as svc:
        body = (await svc.client.get("/readyz")).json()

    assert body["models"] == dict.fromkeys(ROLES, "scripted")


async def test_openapi_documents_the_run_body_and_errors(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        spec = (await svc.client.get("/openapi.json")).json()

    solve = spec["paths"]["/solve"]["post"]
    assert "text/event-stream" in solve["responses"]["200"]["content"]
    assert "429" in solve["responses"]
    stream = solve["responses"]["200"]["content"]["text/event-stream"]
    data = stream["itemSchema"]["properties"]["data"]
    assert data["contentSchema"] == {"$ref": "#/components/schemas/RunEvent"}
    links = spec["paths"]["/runs"]["post"]["responses"]["202"]["links"]
    assert links["GetRun"]["parameters"] == {"run_id": "$response.body#/run_id"}
    event_types = set(spec["components"]["schemas"]["RunEvent"]["discriminator"]["mapping"])
    assert {"run_started", "plan", "node_started", "done", "error", "cancelled"} <= event_types
    body = spec["components"]["schemas"]["SolveRequest"]["properties"]
    assert body["task"]["maxLength"] == 4000
    assert body["max_paths"]["maximum"] == 50


async def test_readyz_counts_the_runs_waiting_for_any_worker(settings: Settings) -> None:
    app = create_app(settings, models=FakeModels(TREE), tools=[], worker=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c,
    ):
        before = (await c.get("/readyz")).json()
        created = await c.post("/runs", json={"task": "waits for a worker"})
        after = (await c.get("/readyz")).json()

    assert created.status_code == 202
    assert (before["waiting_runs"], after["waiting_runs"]) == (0, 1)
    assert after["queued_runs"] == 0  # this API-only process queues nothing itself


async def test_run_parameters_take_the_json_types_of_the_schema(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        quoted_int = await svc.client.post("/runs", json={"task": "x", "max_paths": "3"})
        quoted_bool = await svc.client.post("/runs", json={"task": "x", "use_cache": "true"})
        int_for_float = await svc.client.post("/runs", json={"task": "x", "deadline_s": 30})

    assert (quoted_int.status_code, quoted_bool.status_code) == (422, 422)
    assert quoted_int.json()["code"] == "invalid_request"
    assert int_for_float.status_code == 202
