"""What opening a store brings up to date in data written by older versions: the result a
logged terminal event stands for, for runs whose end was logged without their status (before
`finish` was one transaction)."""

from __future__ import annotations

import json
from typing import Any

from agents.events import STATUS_OF_TERMINAL, TERMINAL_TYPES
from agents.result import RunAnswer, RunResult

# Checked by the migrations' queries: the last event of an unfinished run is one of these.
TERMINAL = tuple(sorted(TERMINAL_TYPES))


def result_of_terminal(run_id: str, type_: str, data: str) -> RunResult:
    """The result a stored terminal event stands for: a `done` event carries the answer,
    sources, path and metrics; `error` its code and message. For the migration of runs whose
    end was logged without their status (stores written before `finish` was one
    transaction)."""
    fields: dict[str, Any] = json.loads(data)
    if type_ == "error":
        code, message = fields.get("code", "internal"), fields.get("message", "")
        return RunResult.failed(run_id, code, message, metrics=fields.get("metrics"))
    kept = {k: fields[k] for k in RunAnswer.model_fields if k in fields}
    return RunResult(run_id=run_id, status=STATUS_OF_TERMINAL[type_], **kept)
