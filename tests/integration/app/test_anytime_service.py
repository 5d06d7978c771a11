"""The anytime search through the service: the stream carries the first answer as
`answer_ready` before `done`, and `done` and GET /runs/{id} say how the answer was chosen and
what the first answer was (real HTTP, scripted models, the real engine and store)."""

from __future__ import annotations

from typing import Any

from app.http.sse import aframes
from tests.integration.test_anytime_search import (
    ALTERNATIVES,
    PAGES,
    SEINE,
    TASK,
    UNGROUNDED,
    Anytime,
)
from tests.support.makers import ServiceMaker
from tests.support.page_search import PageSearch


async def test_the_first_answer_streams_before_done_and_the_run_says_how_it_chose(
    service_for: ServiceMaker,
) -> None:
    answers = {"Find its river": UNGROUNDED, **dict.fromkeys(ALTERNATIVES, SEINE)}
    scenario = Anytime(answers, vote=lambda call: {"choice": call.enum[-1]})
    body = {"task": TASK, "max_paths": 3, "seed": 5}
    async with service_for(scenario, tools=[PageSearch(PAGES).tool()]) as svc:
        events: list[tuple[str, dict[str, Any]]] = []
        async with svc.client.stream("POST", "/solve", json=body) as response:
            async for frame in aframes(response.aiter_lines()):
                events.append((frame.event, frame.json()))
        run_id = events[0][1]["run_id"]
        run = (await svc.client.get(f"/runs/{run_id}")).json()

    kinds = [kind for kind, _ in events]
    assert kinds.index("answer_ready") < kinds.index("branched") < kinds.index("done")
    ready = events[kinds.index("answer_ready")][1]
    done = events[-1][1]
    assert (ready["answer"], ready["provisional"]) == ("The Loire.", True)
    assert done["first"]["answer"] == ready["answer"]
    assert done["chosen_by"] in ("vote", "first", "rule")
    assert run["chosen_by"] == done["chosen_by"]
    assert run["first"]["node_id"] == "n1.1"
    assert run["params"]["seed"] == 5  # recorded with the run
    assert run["params"]["strategy"] == "anytime"
