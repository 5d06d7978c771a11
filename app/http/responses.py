"""What the routes share in their answers: a run's view built from its stored record (`view`), and
the error responses every route documents (`ERRORS`, and `conflict` for a route whose run or
thread can refuse it by its state)."""

from __future__ import annotations

from typing import Any

from app.http.schemas import ErrorBody, RunView
from app.store.base import RunRecord

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The body is not JSON, or the Host is not served."},
    401: {"model": ErrorBody, "description": "An API key is required."},
    404: {"model": ErrorBody, "description": "No such run or thread (or another key's)."},
    413: {"model": ErrorBody, "description": "The body is too large."},
    422: {
        "model": ErrorBody,
        "description": "The body or a parameter is invalid, or the server does not accept a "
        "choice (`option_refused`: a model, tool or webhook).",
    },
    429: {
        "model": ErrorBody,
        "description": "The run queue is full, or a limit of the key is reached; see Retry-After.",
    },
    503: {"model": ErrorBody, "description": "The store is unreachable; see Retry-After."},
    507: {
        "model": ErrorBody,
        "description": "The embedded store's disk is full (`storage_full`); see Retry-After.",
    },
}


def conflict(
    description: str, errors: dict[int | str, dict[str, Any]] = ERRORS
) -> dict[int | str, dict[str, Any]]:
    """`errors` with the 409 of a route that the state of its run (or thread) can refuse."""
    return {**errors, 409: {"model": ErrorBody, "description": description}}


# The stored fields a view shows as they are: those both have, but `answer`, which on a record
# is a caller's answer to a waiting run and on a view the run's own.
SHOWN_AS_STORED = (set(RunView.model_fields) & set(RunRecord.model_fields)) - {"answer"}


def view(record: RunRecord, nodes: list[dict[str, Any]] | None = None) -> RunView:
    stored = record.model_dump(include=SHOWN_AS_STORED)
    return RunView(run_id=record.id, nodes=nodes, **stored, **record.answer_fields())
