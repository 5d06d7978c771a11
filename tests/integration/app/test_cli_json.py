"""`lats solve --url … --json`: the server's events as JSON Lines."""

from __future__ import annotations

import io
import json

from agents.params import RunParams
from app.cli.remote import solve_remote
from app.cli.render import JsonLines
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B"]})


async def test_solving_against_a_server_as_json_lines_prints_its_events_in_order(
    service_for: ServiceMaker,
) -> None:
    out = io.StringIO()
    async with service_for(TREE) as svc:
        code = await solve_remote(svc.url, "t", RunParams(max_paths=1), JsonLines(out), {})

    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "done"
    assert events[-1]["answer"] == "answer via B"
    assert [e["type"] for e in events].count("done") == 1
