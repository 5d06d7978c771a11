"""Webhooks of the run API against a real receiver on 127.0.0.1: a run's end is POSTed, signed
per Standard Webhooks (checked here with an HMAC of our own), retried after a 500, recorded
in the run; URLs of loopback, link-local or private hosts are refused when the run is made."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from agents.params import RunParams
from app.runs.manager import RunManager
from app.service import run_service
from app.settings import Settings
from app.store.base import RunRecord, WebhookDelivery
from app.webhooks.delivery import DeliveryPolicy, WebhookSender
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.server import serving

TREE = Scenario(plan=["A"], replans={"A": []})
SECRET_BYTES = b"receiver-and-server-share-this"
# Settings built with `model_copy` are not validated again: the secret is given as its type.
SECRET = SecretStr("whsec_" + base64.b64encode(SECRET_BYTES).decode())


@dataclass
class Receiver:
    """An HTTP server that answers each POST with the next scripted status (then 204)."""

    statuses: list[int] = field(default_factory=list)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.received.append((headers, body))
        status = self.statuses.pop(0) if self.statuses else 204
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@contextlib.asynccontextmanager
async def receiving(*statuses: int) -> AsyncIterator[Receiver]:
    receiver = Receiver(list(statuses))
    async with serving(receiver) as url:
        receiver.url = f"{url}/hooks/run-ended"
        yield receiver


def _verifies(headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check, from the Standard Webhooks spec alone."""
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    digest = base64.b64encode(hmac.new(SECRET_BYTES, signed, hashlib.sha256).digest()).decode()
    return any(
        version == "v1" and hmac.compare_digest(sig, digest)
        for version, _, sig in (
            part.partition(",") for part in headers["webhook-signature"].split()
        )
    )


async def _delivered(svc: Any, run_id: str) -> dict[str, Any]:
    async with asyncio.timeout(30):  # generous: the machine may be busy
        while True:
            run: dict[str, Any] = (await svc.client.get(f"/runs/{run_id}")).json()
            delivery = run.get("delivery")
            if delivery is not None and delivery["state"] != "delivering":
                return run
            await asyncio.sleep(0.02)


async def _settled(manager: RunManager, run_id: str) -> RunRecord:
    """The run's record once its delivery has ended, as a process's manager reads it."""
    async with asyncio.timeout(30):  # generous: the machine may be busy
        while True:
            run = await manager.get(run_id)
            if run.delivery is not None and run.delivery.state != "delivering":
                return run
            await asyncio.sleep(0.05)


async def _start(svc: Any, webhook: str) -> Any:
    return await svc.client.post("/runs", json={"task": "What is A?", "webhook": webhook})


async def _hooked_run(
    service_for: ServiceMaker, statuses: list[int], **settings: Any
) -> tuple[Receiver, dict[str, Any]]:
    """A run made with a webhook to a receiver answering `statuses`, on a service with the
    secret, private hosts allowed and `settings`: the receiver, and the run once its delivery
    has ended."""
    async with (
        receiving(*statuses) as receiver,
        service_for(TREE, webhook_secret=SECRET, webhook_allow_private=True, **settings) as svc,
    ):
        response = await _start(svc, receiver.url)
        assert response.status_code == 202
        run = await _delivered(svc, response.json()["run_id"])
    return receiver, run


def _assert_delivered(run: dict[str, Any], attempts: int) -> None:
    """The run's webhook was delivered, answered 204 at its attempt number `attempts`."""
    assert run["delivery"]["state"] == "delivered"
    assert run["delivery"]["attempts"] == attempts
    assert run["delivery"]["last_status"] == 204


async def test_a_run_s_end_is_posted_signed_and_the_delivery_is_recorded(
    service_for: ServiceMaker,
) -> None:
    receiver, run = await _hooked_run(service_for, [])

    [(headers, body)] = receiver.received
    assert _verifies(headers, body)
    sent = json.loads(body)
    assert sent["type"] == "run.ended"
    assert sent["data"]["run_id"] == run["run_id"]
    assert sent["data"]["status"] == "done"
    assert sent["data"]["answer"] == run["answer"]
    assert headers["webhook-id"] == f"msg_{run['run_id']}"
    assert run["webhook"] == receiver.url
    _assert_delivered(run, attempts=1)


async def test_a_delivery_answered_500_is_retried_with_the_same_id(
    service_for: ServiceMaker,
) -> None:
    receiver, run = await _hooked_run(service_for, [500, 503], webhook_retry_base_s=0.01)

    assert len(receiver.received) == 3
    assert len({headers["webhook-id"] for headers, _ in receiver.received}) == 1
    assert all(_verifies(headers, body) for headers, body in receiver.received)
    _assert_delivered(run, attempts=3)


async def test_a_delivery_that_keeps_failing_gives_up_after_its_attempts(
    service_for: ServiceMaker,
) -> None:
    receiver, run = await _hooked_run(
        service_for, [500] * 4, webhook_retry_base_s=0.01, webhook_max_attempts=2
    )

    assert len(receiver.received) == 2
    assert run["status"] == "done"
    assert run["delivery"] | {"updated_at": None} == {
        "webhook_id": f"msg_{run['run_id']}",
        "attempts": 2,
        "last_status": 500,
        "last_error": None,
        "state": "failed",
        "updated_at": None,
    }


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/hook",
    ],
)
async def test_a_private_address_is_refused_when_the_run_is_made(
    service_for: ServiceMaker, url: str
) -> None:
    async with service_for(TREE, webhook_secret=SECRET) as svc:
        response = await _start(svc, url)
        runs = (await svc.client.get("/runs")).json()["runs"]

    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "option_refused"
    assert "private" in body["message"]
    assert body["fields"][0]["loc"] == ["body", "webhook"]
    assert runs == []  # nothing was started


async def test_a_webhook_without_a_server_secret_is_refused(service_for: ServiceMaker) -> None:
    async with service_for(TREE, webhook_allow_private=True) as svc:
        response = await _start(svc, "http://127.0.0.1:9/hook")

    assert response.status_code == 422
    assert "LATS_WEBHOOK_SECRET" in response.json()["message"]


async def test_the_worker_process_that_ends_a_run_delivers_its_webhook(
    settings: Settings,
) -> None:
    """An API-only process stores the run; a worker process (its own store connections on the
    same SQLite file) claims it, ends it and delivers the webhook."""
    configured = settings.model_copy(
        update={"webhook_secret": SECRET, "webhook_allow_private": True}
    )
    async with (
        receiving() as receiver,
        run_service(configured, models=FakeModels(TREE), tools=[], worker=False) as api,
        run_service(configured, models=FakeModels(TREE), tools=[], worker=True),
    ):
        record = await api.submit("What is A?", RunParams(), webhook=receiver.url)
        run = await _settled(api, record.id)

    assert record.owner is None  # the API process never held it
    assert run.status == "done"
    assert run.delivery is not None
    assert run.delivery.state == "delivered"
    [(headers, body)] = receiver.received
    assert _verifies(headers, body)
    assert json.loads(body)["data"]["run_id"] == record.id


def _sender(client: httpx.AsyncClient, attempts: int = 3) -> WebhookSender:
    policy = DeliveryPolicy(
        timeout_s=5, max_attempts=attempts, retry_base_s=0.01, allow_private=True
    )
    return WebhookSender(key=SECRET_BYTES, policy=policy, client=client)


async def test_a_rejection_other_than_408_or_429_is_final() -> None:
    reports: list[WebhookDelivery] = []

    async def report(delivery: WebhookDelivery) -> None:
        reports.append(delivery)

    async with receiving(400) as receiver, httpx.AsyncClient() as client:
        delivery = await _sender(client).deliver(receiver.url, "msg_x", b"{}", report, run_id="x")

    assert len(receiver.received) == 1
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("failed", 1, 400)
    assert reports == [delivery]


async def test_a_receiver_that_is_not_listening_is_retried_then_given_up() -> None:
    reports: list[WebhookDelivery] = []

    async def report(delivery: WebhookDelivery) -> None:
        reports.append(delivery)

    async with receiving() as receiver:
        url = receiver.url  # a port that was just free, closed again below
    async with httpx.AsyncClient() as client:
        delivery = await _sender(client, attempts=2).deliver(
            url, "msg_y", b"{}", report, run_id="y"
        )

    assert [r.state for r in reports] == ["delivering", "failed"]
    assert (delivery.attempts, delivery.last_status, delivery.last_error) == (
        2,
        None,
        "ConnectError",
    )
