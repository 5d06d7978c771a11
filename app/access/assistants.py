"""One door to a caller's assistants (the Agent Server API's `/lg/assistants`): run parameters
saved under an id, which a run started with that `assistant_id` takes as its own.

A caller reaches only its own assistants, as it reaches only its own collections: the store finds
one by its tenant (the caller's key name; None without keys), so another key's assistant is
answered like a missing one, and the admin key's assistants are its own. Beside them every caller
sees the built-in presets (`presets`), which nobody changes or deletes and whose ids no assistant
takes.

An assistant's parameters are checked as a run's are, when it is made and whenever they change:
the server's allow-lists (models, tools, app/runs/options.py) and the collections they name,
each the caller's (app/runs/run_tools.py). A collection deleted later is not looked for: a run
started from the assistant is then refused like any run that names an unknown collection.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from agents.params import RunParams
from app.errors import ServiceError
from app.keys.tenancy import SINGLE_USER, Caller
from app.runs.manager import RunManager
from app.runs.run_tools import check_collections
from app.store.assistant_base import AssistantRecord, Assistants

logger = logging.getLogger(__name__)
UPDATE_TRIES = 3  # an update read over again when another one landed first
PAGE = 100  # assistants read from the store at a time by a search


class AssistantNotFound(ServiceError, code="not_found"):
    """No assistant of that id among the presets and the caller's own (or another key's)."""


class AssistantConflict(ServiceError, code="assistant_conflict"):
    """The assistant's state refuses the request (a 409); `code` says how."""


class AssistantExists(AssistantConflict, code="assistant_exists"):
    """The caller has an assistant of that id already (and `if_exists` is `raise`)."""


class PresetReadOnly(AssistantConflict, code="assistant_is_preset"):
    """A built-in preset: it cannot be changed or deleted, nor its id taken."""


class AssistantChanged(AssistantConflict, code="assistant_changed"):
    """Other updates of the assistant kept landing first; nothing was written."""


@dataclass(frozen=True, slots=True)
class Change:
    """What an update changes; a field left None is kept. `metadata` is merged into the
    stored metadata (its keys replace theirs)."""

    params: RunParams | None = None
    name: str | None = None
    description: str | None = None
    metadata: Mapping[str, Any] | None = None


def stored_params(params: RunParams) -> dict[str, Any]:
    """The parameters an assistant keeps: those given, as JSON."""
    return params.model_dump(mode="json", exclude_unset=True)


@dataclass(frozen=True, slots=True, eq=False)
class CallerAssistants:
    """The assistants `caller` may reach: `presets` (read only) and its own in the store."""

    manager: RunManager
    presets: Sequence[AssistantRecord]
    caller: Caller = SINGLE_USER

    @property
    def _store(self) -> Assistants:
        return self.manager.store.assistants

    def _preset(self, assistant_id: str) -> AssistantRecord | None:
        return next((p for p in self.presets if p.id == assistant_id), None)

    async def get(self, assistant_id: str) -> AssistantRecord:
        """The preset or the caller's assistant of that id; raises `AssistantNotFound`."""
        found = self._preset(assistant_id) or await self._store.get(
            self.caller.tenant, assistant_id
        )
        if found is None:
            logger.info("assistant=%s is none of caller=%s's", assistant_id, self.caller.label)
            raise AssistantNotFound(f"no assistant {assistant_id!r}")
        return found

    async def params(self, assistant_id: str) -> dict[str, Any]:
        """The run parameters the assistant presets; raises `AssistantNotFound`."""
        return dict((await self.get(assistant_id)).params)

    async def create(
        self,
        assistant_id: str | None,
        params: RunParams,
        *,
        name: str,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> AssistantRecord:
        """A new assistant of the caller (its id a new UUID when none is given). An id taken
        already (a preset's, or one of the caller's) gives that assistant with `do_nothing`,
        else raises `PresetReadOnly` or `AssistantExists`; parameters the server does not
        accept raise `RunOptionRefused`, a collection not the caller's `CollectionNotFound`."""
        assistant_id = assistant_id or str(uuid.uuid4())
        existing = await self._existing(assistant_id)
        if existing is not None:
            return self._taken(existing, if_exists)
        await self._check(params)
        now = datetime.now(UTC)
        record = AssistantRecord(
            id=assistant_id,
            tenant=self.caller.tenant,
            name=name,
            description=description,
            params=stored_params(params),
            metadata=dict(metadata or {}),
            created_at=now,
            updated_at=now,
        )
        if not await self._store.create(record):  # made meanwhile by another request
            existing = await self._existing(assistant_id)
            if existing is None:  # and deleted since
                raise AssistantChanged(f"the assistant {assistant_id!r} kept changing; try again")
            return self._taken(existing, if_exists)
        logger.info("assistant=%s created by caller=%s", assistant_id, self.caller.label)
        return record

    async def _existing(self, assistant_id: str) -> AssistantRecord | None:
        return self._preset(assistant_id) or await self._store.get(self.caller.tenant, assistant_id)

    def _taken(
        self, existing: AssistantRecord, if_exists: Literal["raise", "do_nothing"]
    ) -> AssistantRecord:
        if if_exists == "do_nothing":
            return existing
        if self._preset(existing.id) is not None:
            raise PresetReadOnly(f"{existing.id!r} is a built-in assistant; choose another id")
        raise AssistantExists(f"an assistant {existing.id!r} exists already")

    async def update(self, assistant_id: str, change: Change) -> AssistantRecord:
        """The caller's assistant with `change` applied and its version one more; raises
        `PresetReadOnly`, `AssistantNotFound`, `AssistantChanged`, or as `create` does for
        its parameters."""
        self._writable(assistant_id)
        if change.params is not None:
            await self._check(change.params)
        for _ in range(UPDATE_TRIES):
            current = await self.get(assistant_id)
            updated = current.model_copy(
                update={
                    "name": change.name if change.name is not None else current.name,
                    "description": (
                        change.description
                        if change.description is not None
                        else current.description
                    ),
                    "params": (
                        stored_params(change.params)
                        if change.params is not None
                        else current.params
                    ),
                    "metadata": {**current.metadata, **(change.metadata or {})},
                    "version": current.version + 1,
                    "updated_at": datetime.now(UTC),
                }
            )
            if await self._store.update(updated):
                logger.info("assistant=%s updated by caller=%s", assistant_id, self.caller.label)
                return updated
        raise AssistantChanged(f"the assistant {assistant_id!r} kept changing; try again")

    async def delete(self, assistant_id: str) -> None:
        """Raises `PresetReadOnly` or `AssistantNotFound`."""
        self._writable(assistant_id)
        if not await self._store.delete(self.caller.tenant, assistant_id):
            raise AssistantNotFound(f"no assistant {assistant_id!r}")
        logger.info("assistant=%s deleted by caller=%s", assistant_id, self.caller.label)

    async def search(
        self, keep: Callable[[AssistantRecord], bool], *, limit: int, offset: int
    ) -> list[AssistantRecord]:
        """Up to `limit` of the assistants `keep` keeps, after the first `offset` of them: the
        presets first, then the caller's own, newest first."""
        found: list[AssistantRecord] = []
        skip = offset
        for record in self.presets:
            if keep(record):
                if skip:
                    skip -= 1
                elif len(found) < limit:
                    found.append(record)
        at = 0
        while len(found) < limit:
            page = await self._store.page(self.caller.tenant, limit=PAGE, offset=at)
            for record in page:
                if not keep(record):
                    continue
                if skip:
                    skip -= 1
                elif len(found) < limit:
                    found.append(record)
            if len(page) < PAGE:
                break
            at += PAGE
        return found

    def _writable(self, assistant_id: str) -> None:
        if self._preset(assistant_id) is not None:
            raise PresetReadOnly(f"{assistant_id!r} is a built-in assistant: it cannot change")

    async def _check(self, params: RunParams) -> None:
        """As a run's parameters are checked when it is asked (app/runs/manager.py)."""
        self.manager.options.check_params(params)
        await check_collections(self.manager.store.collections, self.caller.tenant, params)
