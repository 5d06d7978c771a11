"""Grounded answers end to end: the server as a real process, its models the real Gemini client
against the simulator, `local_docs` as its tool. One path's responder quotes its evidence, the
other's fabricates: the verified citations reach the `done` event, `GET /runs/{id}`, the MCP
`solve` result and the OpenAI-compatible completion; the fabricated ones are rejected, their
sentences unsupported, and the vote takes the grounded candidate."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from testkit.events import read_events
from testkit.gemini_roles import fake_call, to_sim_reply
from testkit.gemini_sim import Call, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess
from testkit.scenario import Scenario
from tests.support.mcp import mcp_session
from tests.support.sim_env import sim_server

QUOTE = "The sources agree on the main result"
TREE = Scenario(plan=["Find sources"], replans={"Find sources": ["Check them", "Doubt them"]})
ANSWERS = {
    "Check them": {
        "answer": "The sources agree on the main result.[1]",
        "citations": [{"marker": 1, "evidence_id": "E1", "quote": QUOTE}],
    },
    "Doubt them": {
        "answer": "The sources disagree about everything.[1]",
        "citations": [
            {"marker": 1, "evidence_id": "E1", "quote": "The sources disagree about everything"}
        ],
    },
}
BODY = {"task": "What do the sources say?", "max_paths": 2, "max_candidates": 2, "strategy": "mcts"}


def citing(request: SimRequest) -> SimReply:
    call = fake_call(request)
    if call.role == "executor" and request.tool_names and not request.function_responses:
        return Call("local_docs", {"query": "sources"})
    if call.role == "responder":
        step = call.prompt.rsplit("\nStep ", 1)[1].split(": ", 1)[1].split("\n", 1)[0]
        return to_sim_reply(ANSWERS[step])
    if call.role == "voter":  # were it asked, it would take the fabricated answer
        return to_sim_reply({"choice": "n1.2", "reason": "bold"})
    return to_sim_reply(TREE.reply(call))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module: each test starts runs of its own."""
    with sim_server(citing, tmp_path_factory.mktemp("grounded")) as process:
        yield process


def _grounded(run: dict[str, Any]) -> None:
    assert run["answer"] == "The sources agree on the main result.[1]"
    assert run["groundedness"] == 1.0
    assert run["unsupported"] == []
    [citation] = run["citations"]
    assert citation["quote"] == QUOTE
    assert citation["verified"] is True
    assert citation["source"]["url"] == "local://sources.md"
    assert citation["node_id"] == "n1"


def test_verified_citations_reach_every_reader_and_the_vote_takes_the_grounded_path(
    server: ServerProcess,
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        run_id = client.post("/runs", json=BODY).json()["run_id"]
        events = read_events(server.url, run_id)
        run = client.get(f"/runs/{run_id}").json()

    _, last, done = events[-1]
    assert last == "done"
    _grounded(done)
    _grounded(run)
    assert run["chosen_id"] == "n1.1"
    vote = next(data for _, kind, data in events if kind == "vote")
    assert (vote["candidates"], vote["ineligible"]) == (["n1.1"], ["n1.2"])
    fabricated = next(n for n in run["nodes"] if n["id"] == "n1.2")
    assert fabricated["grounding"]["groundedness"] == 0.0
    assert [r["reason"] for r in fabricated["grounding"]["rejected"]] == ["quote_not_found"]
    assert fabricated["grounding"]["unsupported"] == ["The sources disagree about everything."]
    assert fabricated["answer"] == "The sources disagree about everything."  # marker removed


def test_the_mcp_solve_result_and_the_openai_completion_carry_the_citations(
    server: ServerProcess,
) -> None:
    async def solve() -> dict[str, Any]:
        async with mcp_session(server.url) as session:
            result = await session.call_tool("solve", BODY)
            assert not result.isError, result.content
            return dict(result.structuredContent or {})

    solved = asyncio.run(solve())
    _grounded(solved)

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0, timeout=60)
    completion = client.chat.completions.create(
        model="plantree",
        messages=[{"role": "user", "content": BODY["task"]}],
        extra_body={"max_paths": 2, "max_candidates": 2, "strategy": "mcts"},
    )
    info = (completion.model_extra or {})["plantree"]
    assert info["groundedness"] == 1.0
    assert [c["quote"] for c in info["citations"]] == [QUOTE]
    # local:// is no web address: nothing to annotate as a url_citation.
    assert completion.choices[0].message.annotations == []
