"""Live steering of a run: prune a subtree, boost a node, add a step, while the run goes on.
Each route reaches only the caller's runs."""

from __future__ import annotations

from fastapi import APIRouter

from app.http.deps import CallerRuns
from app.http.responses import conflict
from app.http.schemas import CommandAccepted, CommandRequest, ErrorBody

router = APIRouter(tags=["runs"])


@router.post(
    "/runs/{run_id}/commands",
    status_code=202,
    response_model=CommandAccepted,
    summary="Steer a running search",
    responses={
        **conflict("The run has ended (`run_ended`)."),
        429: {
            "model": ErrorBody,
            "description": "The run has taken its most commands (200, `too_many_commands`).",
        },
    },
)
async def send_command(run_id: str, body: CommandRequest, runs: CallerRuns) -> CommandAccepted:
    """Queues the command for the run's next scheduling round; the run's `steered` event says
    how it was applied (with the sending key's name), or why it was refused (an unknown node,
    a step under a node that is not done, a boost of a node that has run). A run waiting for
    its plan's approval takes it once it searches; a run that has ended refuses it (409)."""
    command_id = await runs.steer(run_id, body.command, body.node_id, body.step)
    return CommandAccepted(run_id=run_id, command_id=command_id, events=f"/runs/{run_id}/events")
