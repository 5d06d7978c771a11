"""`run_record`: a stored run read back, its parameters into `RunParams` once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agents.params import RunParams
from app.store.base import RunRecord
from app.store.reads import run_record


def _row(params: dict[str, Any]) -> dict[str, Any]:
    """A runs row as a store reads it: every column, the optional ones at their defaults."""
    now = datetime.now(UTC)
    optional = {
        name: field.get_default(call_default_factory=True)
        for name, field in RunRecord.model_fields.items()
        if not field.is_required()
    }
    return optional | {
        "id": "r1",
        "task": "t",
        "params": params,
        "status": "queued",
        "created_at": now,
        "updated_at": now,
    }


def test_the_stored_parameters_come_back_as_run_params() -> None:
    record = run_record(_row({"max_paths": 2, "seed": 5}))

    assert isinstance(record.params, RunParams)
    assert (record.params.max_paths, record.params.seed) == (2, 5)


def test_a_parameter_a_later_version_no_longer_has_is_left_out_not_refused() -> None:
    record = run_record(_row({"max_paths": 3, "retired_knob": True}))

    assert record.params.max_paths == 3
    assert "retired_knob" not in record.params.model_dump()
