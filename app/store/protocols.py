"""What the service persists about runs, one small protocol per concern, bundled as `RunStore`.

Implementations: SQLite (embedded default, app/store/sqlite/) and Postgres (app/store/postgres/),
one module per concern in each. Both keep the same rules:

- a run is executed by the one worker that holds its **lease** (`owner`, `lease_until`); only
  a free or expired lease can be taken, atomically;
- every write of a run's history is **fenced**: it lands only while the writer still owns the
  run, else it raises `LeaseLost`;
- event ids come from the store (the next id after the stored ones), never from memory, under
  the unique (run, seq) key;
- the terminal event, the status and the result land in **one transaction**
  (`EventLog.finish`); a store written before that was so is brought up to it when opened
  (app/store/upgrade.py);
- a run belongs to a **tenant** (the name of the API key that started it, never the key);
- a run **waiting** for a caller's answer (its plan's approval) is `interrupted` with
  `awaiting` set and no lease: no worker claims it until it is answered (`Waits.answer`), and
  the answer is kept with the run for whichever worker resumes it;
- a caller's steering **commands** for an open run wait in the store, numbered per run, until
  the run's search takes them (`Commands.after`); a run that has ended takes none;
- a **thread** holds a sequence of runs of one tenant; deleting it deletes its runs, only when
  every one of them has ended;
- a **collection** holds one tenant's documents, each stored whole with its passages in one
  transaction and searchable from then on; it is deleted with them, only when no unfinished
  run lists it in its parameters (app/store/collection_base.py).

Each method is one transaction, whichever concerns its rows belong to: a run is created with
its first event, a pause stores its event with the wait, a deletion takes a run's events and
commands with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from agents.result import RunResult
from agents.steering import SteerCommand
from app.store.assistant_base import Assistants
from app.store.base import (
    Held,
    Lease,
    RunRecord,
    RunStatus,
    StoredEvent,
    ThreadRecord,
    WebhookDelivery,
)
from app.store.collection_base import (
    AddedDocument,
    CollectionRecord,
    DocumentRecord,
    NewDocument,
    PassageHit,
)
from tools.documents.passages import Passage


class RunRecords(Protocol):
    """Runs as records: stored with their first event, read, counted, deleted when ended."""

    async def create(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        """Store a new run with its first event (`run_started` JSON) as id 1, held under
        `lease`, or free for any worker. With `max_open`, raises `TooManyOpen` instead when
        the run's tenant already has that many unfinished runs: the count and the insert are
        one atomic step, so concurrent creations never pass the limit."""

    async def get(self, run_id: str) -> RunRecord | None: ...

    async def page(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        """A page of runs, newest first; only `tenant`'s when given."""

    async def count_open(self, tenant: str | None) -> int:
        """How many runs of `tenant` are unfinished (queued, running or interrupted)."""

    async def delete(self, run_id: str) -> bool:
        """Delete a finished run with its events and commands; False when there is no such
        finished run (unfinished runs are never deleted)."""

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        """Delete up to `limit` runs that finished before `cutoff`, with their events; how many."""


class EventLog(Protocol):
    """A run's history: events appended by the run's owner, fenced, up to its terminal one."""

    async def append(self, run_id: str, owner: str, type_: str, data: str) -> int:
        """Append a non-terminal event with the next id; the id. Fenced."""

    async def append_many(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        """Append non-terminal events (type, data), in order, with consecutive ids in one
        transaction: all of them or none; their ids. Fenced."""

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        """In one transaction: the terminal event (next id), the result with its status, and
        the lease freed. Fenced; the terminal event's id."""

    async def after(self, run_id: str, after: int, limit: int | None = None) -> list[StoredEvent]:
        """The run's events after id `after`, in order; at most `limit` of them."""

    async def last_seq(self, run_id: str) -> int:
        """The id of the run's last event (0 when it has none)."""


class Leases(Protocol):
    """Which worker executes which run, and the cancel requests its holder acts on."""

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        """Take the lease of one unfinished run if it is free or expired; the run, or None
        when another worker holds it or it has ended."""

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        """Take the oldest unfinished run whose lease is free or expired, if any (a run
        waiting for an answer is not taken)."""

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        """Take up to `limit` runs as `claim_next` does, in one trip to the store; oldest first."""

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        """Extend the leases `owner` holds on `run_ids` (the runs it executes; a lease it
        no longer backs with a task expires and the run is claimed again); the runs among
        them it still holds."""

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        """Give the run back (a drain): set `status`, free the lease. Fenced."""

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        """Set status `running`; whether a cancel was requested meanwhile (the caller then
        ends the run as cancelled instead of running it). Fenced."""

    async def request_cancel(self, run_id: str) -> None:
        """Flag the run for cancellation (its owner, or the next claimer, ends it)."""

    async def cancel_requests(self, owner: str) -> list[str]:
        """The runs `owner` holds that someone asked to cancel."""

    async def count_unclaimed(self) -> int:
        """Unfinished runs whose lease is free or expired: those waiting for a worker (not
        those waiting for a caller's answer)."""


class Waits(Protocol):
    """Runs stopped until a caller answers them."""

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        """In one transaction: the event the run stops on (next id), the run `interrupted`
        and `awaiting` an answer, its lease freed. Fenced; the event's id."""

    async def answer(self, run_id: str, answer: dict[str, Any]) -> bool:
        """Give a waiting run its answer and queue it for any worker; False when the run is
        not waiting (never was, answered already, or ended)."""


class Commands(Protocol):
    """Steering commands waiting for a run's search."""

    async def add(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        """Store a steering command for an unfinished run; its id (1, 2, … per run), or None
        when the run has ended (or does not exist)."""

    async def after(self, run_id: str, after: int) -> list[SteerCommand]:
        """The run's steering commands with an id greater than `after`, oldest first."""


class Threads(Protocol):
    """Threads: sequences of runs of one tenant."""

    async def create(self, thread: ThreadRecord) -> None:
        """Store a new, empty thread."""

    async def get(self, thread_id: str) -> ThreadRecord | None: ...

    async def page(
        self, *, limit: int, offset: int, tenant: str | None = None
    ) -> list[ThreadRecord]:
        """A page of the threads (of `tenant` when given), newest first."""

    async def runs(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs, oldest first."""

    async def delete(self, thread_id: str) -> bool:
        """Delete the thread with its runs and their events, in one transaction; False (and
        nothing deleted) when one of its runs has not ended."""


class Deliveries(Protocol):
    """How the webhook deliveries of runs' ends stand."""

    async def record(self, run_id: str, delivery: WebhookDelivery) -> None:
        """Store how the run's webhook delivery stands (whichever process delivers it; not
        fenced: the run has ended and no lease is held)."""


class Collections(Protocol):
    """A tenant's named collections of documents, and the full-text search over their passages.

    Every method names the tenant (None: the service without keys): another tenant's
    collection or document is none to it, and its ids find nothing."""

    async def create(self, collection: CollectionRecord) -> None:
        """Store a new, empty collection; raises `CollectionNameTaken` when its tenant has
        one of that name."""

    async def get(self, tenant: str | None, collection_id: str) -> CollectionRecord | None:
        """The collection with how many documents and bytes it holds, or None."""

    async def page(self, tenant: str | None, *, limit: int, offset: int) -> list[CollectionRecord]:
        """A page of the tenant's collections, newest first."""

    async def delete(self, tenant: str | None, collection_id: str) -> bool:
        """Delete the collection with its documents and passages, in one transaction; False
        when there is no such collection. Raises `CollectionInUse` (and deletes nothing) while
        a run that lists it has not finished."""

    async def add_document(self, tenant: str | None, document: NewDocument) -> AddedDocument:
        """Store the document with all its passages in one transaction: the whole of it or
        nothing. When the collection holds a document of the same SHA-256 already, that one
        is given and nothing is stored. Raises `CollectionNotFound`, or a
        `DocumentRefusedByStore` (over a limit) before anything is written."""

    async def document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> DocumentRecord | None:
        """The document of the collection, or None."""

    async def documents(
        self, tenant: str | None, collection_id: str, *, limit: int, offset: int
    ) -> list[DocumentRecord]:
        """A page of the collection's documents, newest first (none for another tenant's)."""

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        """Delete the document with its passages, in one transaction; False when there is no
        such document."""

    async def passages(
        self, tenant: str | None, collection_id: str, document_id: str, page: int
    ) -> list[Passage]:
        """The passages of the document's page `page` (from 1; a document without pages has
        only page 1), in order; none for a page it does not have or another tenant's."""

    async def search(
        self, tenant: str | None, collection_ids: Sequence[str], query: str, k: int
    ) -> list[PassageHit]:
        """The `k` (at most `MAX_SEARCH_K`) passages of the tenant's collections among
        `collection_ids` that match `query`'s words best, best first (app/store/query_words.py
        says which words; each backend's module says how it ranks)."""


class RunStore(Protocol):
    """The store: its parts, one per concern, and the store as a whole."""

    @property
    def runs(self) -> RunRecords: ...

    @property
    def events(self) -> EventLog: ...

    @property
    def leases(self) -> Leases: ...

    @property
    def waits(self) -> Waits: ...

    @property
    def commands(self) -> Commands: ...

    @property
    def threads(self) -> Threads: ...

    @property
    def deliveries(self) -> Deliveries: ...

    @property
    def collections(self) -> Collections: ...

    @property
    def assistants(self) -> Assistants: ...

    async def ping(self) -> None:
        """Raises when the store cannot be reached."""

    async def close(self) -> None: ...
