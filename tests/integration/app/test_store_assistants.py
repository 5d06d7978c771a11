"""A tenant's assistants on the real SQLite file and the real Postgres: created once per id and
tenant, read and listed only by their tenant, updated only over the version the change read,
deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.store.assistant_base import AssistantRecord
from tests.support.makers import Opener

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _assistant(
    assistant_id: str, tenant: str | None = "alice", *, at: datetime = T0, **fields: object
) -> AssistantRecord:
    values = {"name": assistant_id, "params": {"max_paths": 2}, "metadata": {"team": "x"}}
    return AssistantRecord.model_validate(
        {
            "id": assistant_id,
            "tenant": tenant,
            "created_at": at,
            "updated_at": at,
            **values,
            **fields,
        }
    )


async def test_an_assistant_reads_back_as_stored_and_its_id_is_its_tenants_own(
    open_store: Opener,
) -> None:
    store = await open_store()
    mine = _assistant("a1", params={"collections": ["c1"], "deadline_s": 30.5})
    made = await store.assistants.create(mine)
    again = await store.assistants.create(mine.model_copy(update={"name": "other"}))
    bobs = await store.assistants.create(_assistant("a1", "bob", name="bob's"))
    keyless = await store.assistants.create(_assistant("a1", None, name="nobody's"))
    read = await store.assistants.get("alice", "a1")
    as_bob = await store.assistants.get("bob", "a1")
    as_none = await store.assistants.get(None, "a1")
    as_carol = await store.assistants.get("carol", "a1")

    assert (made, again, bobs, keyless) == (True, False, True, True)
    assert read == mine
    assert as_bob is not None
    assert as_bob.name == "bob's"
    assert as_none is not None
    assert as_none.name == "nobody's"
    assert as_carol is None


async def test_a_tenants_assistants_are_listed_newest_first_and_only_its_own(
    open_store: Opener,
) -> None:
    store = await open_store()
    for k in range(5):
        await store.assistants.create(_assistant(f"a{k}", at=T0 + timedelta(minutes=k)))
    await store.assistants.create(_assistant("b0", "bob"))

    first = await store.assistants.page("alice", limit=3, offset=0)
    rest = await store.assistants.page("alice", limit=3, offset=3)
    bobs = await store.assistants.page("bob", limit=10, offset=0)

    assert [a.id for a in first] == ["a4", "a3", "a2"]
    assert [a.id for a in rest] == ["a1", "a0"]
    assert [a.id for a in bobs] == ["b0"]
    assert await store.assistants.page(None, limit=10, offset=0) == []


async def test_an_update_lands_only_over_the_version_it_read(open_store: Opener) -> None:
    store = await open_store()
    await store.assistants.create(_assistant("a1"))
    later = T0 + timedelta(hours=1)
    change = _assistant(
        "a1", name="renamed", params={"max_depth": 4}, metadata={}, version=2, updated_at=later
    )
    updated = await store.assistants.update(change)
    stale = await store.assistants.update(change.model_copy(update={"name": "lost"}))
    bobs = await store.assistants.update(change.model_copy(update={"tenant": "bob", "version": 3}))
    read = await store.assistants.get("alice", "a1")

    assert (updated, stale, bobs) == (True, False, False)
    assert read == change
    assert read is not None
    assert read.created_at == T0


async def test_an_assistant_is_deleted_only_by_its_tenant(open_store: Opener) -> None:
    store = await open_store()
    await store.assistants.create(_assistant("a1"))
    by_bob = await store.assistants.delete("bob", "a1")
    kept = await store.assistants.get("alice", "a1")
    deleted = await store.assistants.delete("alice", "a1")
    twice = await store.assistants.delete("alice", "a1")

    assert (by_bob, deleted, twice) == (False, True, False)
    assert kept is not None
    assert await store.assistants.get("alice", "a1") is None
