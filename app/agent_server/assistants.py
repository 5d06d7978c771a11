"""The Agent Server API's assistants under `/lg`: the built-in presets (`plantree`,
`plantree-fast`), every caller's and read only, and a caller's own, which preset run parameters
(`collections` included) under an id of the caller's: made, read, changed, deleted and searched
as the SDKs' `client.assistants` do. A run started with an assistant's id takes its parameters
(run_routes.py).

An assistant's parameters are read from `config.configurable` and `context` as a run's are
(its bodies are in assistant_bodies.py) and checked as a run's are (app/access/assistants.py):
a value out of bounds or an unknown parameter is a 422, a collection not the caller's a 404.
Another key's assistant is a 404, like another key's run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response
from pydantic import ValidationError

from agents.params import RunParams
from app.access.assistants import CallerAssistants, Change
from app.agent_server import shapes
from app.agent_server.assistant_bodies import (
    PRESET_ASSISTANTS,
    AssistantCreate,
    AssistantPatch,
    AssistantSearch,
)
from app.agent_server.bodies import given_params
from app.agent_server.routes import Id
from app.http.auth import Authorized
from app.http.errors import invalid_model
from app.http.responses import ERRORS, conflict
from app.runs.manager import RunManager

router = APIRouter(prefix="/lg", tags=["langgraph-agent-server"])
T = TypeVar("T")
_TAKEN = "The id is a preset's (`assistant_is_preset`) or the caller's (`assistant_exists`)."
_READ_ONLY = "A preset cannot change (`assistant_is_preset`)."


def _assistants(request: Request, caller: Authorized) -> CallerAssistants:
    """The assistants the request's caller may reach (the key is checked here)."""
    manager: RunManager = request.app.state.manager
    return CallerAssistants(manager, PRESET_ASSISTANTS, caller)


Assistants = Annotated[CallerAssistants, Depends(_assistants)]


def _checked(make: Callable[[], T]) -> T:
    """`make()`, the run parameters of a body; a value out of bounds or an unknown key is a
    422."""
    try:
        return make()
    except ValidationError as e:
        raise invalid_model(e, "body", "context") from e


@router.post("/assistants", summary="Create an assistant", responses=conflict(_TAKEN))
async def create_assistant(body: AssistantCreate, assistants: Assistants) -> dict[str, Any]:
    """The caller's own assistant, presetting run parameters (`config.configurable`, then
    `context`); with `if_exists: "do_nothing"`, an id taken gives that assistant as it is."""
    params = _checked(lambda: RunParams(**given_params(body.config, body.context)))
    record = await assistants.create(
        body.assistant_id,
        params,
        name=body.name,
        description=body.description,
        metadata=body.metadata,
        if_exists=body.if_exists,
    )
    return shapes.assistant(record)


@router.post("/assistants/search", summary="The presets and the caller's assistants")
async def search_assistants(
    assistants: Assistants, response: Response, body: AssistantSearch | None = None
) -> list[dict[str, Any]]:
    """The presets first, then the caller's own, newest first; `X-Pagination-Next` names
    the next page's offset when there is one."""
    body = body or AssistantSearch()
    found = await assistants.search(body.keeps, limit=body.limit + 1, offset=body.offset)
    if len(found) > body.limit:
        response.headers["X-Pagination-Next"] = str(body.offset + body.limit)
    return [shapes.assistant(record) for record in found[: body.limit]]


@router.get("/assistants/{assistant_id}", summary="One assistant", responses=ERRORS)
async def get_assistant(assistant_id: Id, assistants: Assistants) -> dict[str, Any]:
    return shapes.assistant(await assistants.get(assistant_id))


@router.patch(
    "/assistants/{assistant_id}", summary="Change an assistant", responses=conflict(_READ_ONLY)
)
async def update_assistant(
    assistant_id: Id, body: AssistantPatch, assistants: Assistants
) -> dict[str, Any]:
    """What is sent changes: `config` or `context` replace the parameters as a whole,
    `metadata` is merged into the stored one; the version goes up by one."""
    change = Change(
        params=_checked(body.params),
        name=body.name,
        description=body.description,
        metadata=body.metadata,
    )
    return shapes.assistant(await assistants.update(assistant_id, change))


@router.delete(
    "/assistants/{assistant_id}",
    status_code=204,
    summary="Delete an assistant",
    responses=conflict(_READ_ONLY),
)
async def delete_assistant(assistant_id: Id, assistants: Assistants) -> Response:
    """Runs started from it keep their parameters."""
    await assistants.delete(assistant_id)
    return Response(status_code=204)
