"""A tenant's limit on unfinished runs, checked and taken by the store in the step that creates
the run: concurrent creations through two stores on one real database (two processes, to the
database) never pass it."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.store.base import TooManyOpen
from tests.support.makers import Opener
from tests.support.runs import run_record

LIMIT = 3
TRIES = 24


async def test_concurrent_creations_of_one_tenant_never_pass_its_limit(
    open_store: Opener,
) -> None:
    stores = [await open_store(), await open_store()]
    tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"

    async def create(index: int) -> int | None:
        record = run_record().model_copy(update={"tenant": tenant})
        try:
            await stores[index % 2].runs.create(record, started="{}", max_open=LIMIT)
        except TooManyOpen as refused:
            return refused.limit
        return None

    created = await asyncio.gather(*(create(i) for i in range(TRIES)))

    assert created.count(None) == LIMIT
    assert created.count(LIMIT) == TRIES - LIMIT  # every other one refused, naming the limit
    assert await stores[0].runs.count_open(tenant) == LIMIT
    assert await stores[1].runs.count_open(tenant) == LIMIT
    # Another tenant is not held back by this one's runs.
    await stores[1].runs.create(
        run_record().model_copy(update={"tenant": other}), started="{}", max_open=1
    )
    assert await stores[0].runs.count_open(other) == 1


async def test_a_finished_run_frees_its_place_and_no_limit_means_none(
    open_store: Opener,
) -> None:
    store = await open_store()
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    first = run_record().model_copy(update={"tenant": tenant})
    await store.runs.create(first, started="{}", max_open=1)
    with pytest.raises(TooManyOpen):
        await store.runs.create(
            run_record().model_copy(update={"tenant": tenant}), started="{}", max_open=1
        )
    for _ in range(3):  # without max_open nothing is counted
        await store.runs.create(run_record().model_copy(update={"tenant": tenant}), started="{}")
    assert await store.runs.count_open(tenant) == 4

    claimed = await store.leases.claim(first.id, "w", 30.0)
    assert claimed is not None
    await store.leases.release(first.id, "w", "cancelled")
    assert await store.runs.count_open(tenant) == 3
    with pytest.raises(TooManyOpen):
        await store.runs.create(
            run_record().model_copy(update={"tenant": tenant}), started="{}", max_open=3
        )
    await store.runs.create(
        run_record().model_copy(update={"tenant": tenant}), started="{}", max_open=4
    )
