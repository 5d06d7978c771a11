"""The Agent Server API's assistant bodies (`POST /assistants`, `PATCH /assistants/{id}`,
`POST /assistants/search`) and the built-in assistants, the presets. An assistant's parameters
are read from `config.configurable` and `context` as a run's are (bodies.py: `given_params`).

What an assistant keeps is bounded, and refused when either store could not keep it (a NUL
character, a lone surrogate, NaN in its metadata): a 422, never a store's error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agents.params import RunParams
from app.agent_server.bodies import GRAPH_ID, RunConfig, given_params
from app.http.presets import PRESETS
from app.http.schemas import ID_PATTERN
from app.store.assistant_base import AssistantRecord

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # when the presets are said to have been made
MAX_METADATA_CHARS = 16_384  # an assistant's metadata, as JSON
PRESET_ASSISTANTS = tuple(
    AssistantRecord(
        id=name,
        name=name,
        description="plantree's search with the preset's run parameters",
        params=dict(values),
        created_at=_EPOCH,
        updated_at=_EPOCH,
    )
    for name, values in PRESETS.items()
)
"""The built-in assistants: the presets, every caller's, read only."""


def _without_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("a NUL character is not allowed")
    return value


def _bounded_json(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Metadata both stores can keep: bounded, standard JSON (no NaN), no NUL character and
    no lone surrogate (`encode` raises), which Postgres's JSONB refuses."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if len(text) > MAX_METADATA_CHARS:
        raise ValueError(f"over {MAX_METADATA_CHARS} characters as JSON")
    if "\\u0000" in text:
        raise ValueError("a NUL character is not allowed")
    text.encode()
    return value


AssistantId = Annotated[str, Field(min_length=1, max_length=64, pattern=ID_PATTERN)]
AssistantName = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_without_nul)]
AssistantDescription = Annotated[str, Field(max_length=2000), AfterValidator(_without_nul)]
AssistantMetadata = Annotated[dict[str, Any] | None, AfterValidator(_bounded_json)]
OurGraph = Literal["plantree"]


class AssistantCreate(BaseModel):
    """`POST /assistants`: the caller's own assistant, presetting run parameters."""

    model_config = ConfigDict(extra="forbid")

    graph_id: OurGraph = Field(description="This server's one graph.")
    assistant_id: AssistantId | None = Field(default=None, description="None: a new UUID.")
    config: RunConfig | None = Field(default=None, description="`configurable`: parameters.")
    context: dict[str, Any] | None = Field(default=None, description="Parameters (win).")
    metadata: AssistantMetadata = None
    if_exists: Literal["raise", "do_nothing"] = Field(
        default="raise", description="An id taken already: a 409, or that assistant as it is."
    )
    name: AssistantName = "Untitled"
    description: AssistantDescription | None = None


class AssistantPatch(BaseModel):
    """`PATCH /assistants/{id}`: what is sent changes; `config` or `context` replace the
    parameters as a whole, `metadata` is merged into the stored metadata."""

    model_config = ConfigDict(extra="forbid")

    graph_id: OurGraph | None = None
    config: RunConfig | None = None
    context: dict[str, Any] | None = None
    metadata: AssistantMetadata = None
    name: AssistantName | None = None
    description: AssistantDescription | None = None

    def params(self) -> RunParams | None:
        """The new parameters, when any are sent; raises pydantic's `ValidationError`."""
        if self.config is None and self.context is None:
            return None
        return RunParams(**given_params(self.config, self.context))


class AssistantSearch(BaseModel):
    """`POST /assistants/search`: the presets, then the caller's own, newest first."""

    model_config = ConfigDict(extra="forbid")

    graph_id: str | None = Field(default=None, max_length=200)
    metadata: AssistantMetadata = Field(default=None, description="Each pair must match.")
    name: str | None = Field(default=None, max_length=200, description="Part of the name.")
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=1_000_000)

    def keeps(self, record: AssistantRecord) -> bool:
        """Whether `record` matches every filter sent."""
        if self.graph_id not in (None, GRAPH_ID):
            return False
        if self.name is not None and self.name.casefold() not in record.name.casefold():
            return False
        return all(record.metadata.get(k) == v for k, v in (self.metadata or {}).items())
