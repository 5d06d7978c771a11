"""An identical rerun of a run whose steps called tools makes no model call: the tool results
come from the tool cache, the replies from the model-call cache, and a reply served from the
cache is keyed as the live reply it stands for, although its usage differs (a cached reply
costs nothing), because an earlier reply is part of every later prompt of its tool round."""

from __future__ import annotations

import pytest
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage

from agents.jobs import settle_background
from agents.params import RunParams
from app.settings import Settings
from calls.cache import canonical_prompt
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker
from tools.registry import ToolOverrides, build_tools
from tools.runtime import TtlCache

# Three branches, each step with a web search; B is slow in the first run (in the rerun every
# reply is instant).
SCENARIO = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D"], "B": [], "C": [], "D": []},
    tools={step: ("web_search", {"query": f"about {step}"}) for step in "ABCD"},
    delays={"B": 0.3},
)


@pytest.mark.parametrize(
    "params",
    [
        RunParams(strategy="mcts", max_paths=3),
        RunParams(strategy="mcts", max_paths=2, max_concurrency=1),
    ],
    ids=["every-path", "max-paths-stop"],
)
async def test_an_identical_rerun_with_tool_calls_makes_no_model_call(
    make_engine: EngineMaker, settings: Settings, params: RunParams
) -> None:
    searched: list[str] = []

    def search(query: str, **_: object) -> list[dict[str, str]]:
        searched.append(query)
        return [{"title": f"On {query}", "href": "https://example.test/r", "body": query}]

    tools = build_tools(
        settings.model_copy(update={"tools": ["web_search"], "tool_min_interval_s": 0.0}),
        overrides=ToolOverrides(web_search_fn=search, cache=TtlCache()),
    )
    engine, models = make_engine(SCENARIO, tools=tools)

    first = await engine.run("t", params)
    await settle_background()  # any call left to finish after a stop has ended
    calls, searches = len(models.recorder.calls), len(searched)
    second = await engine.run("t", params)

    assert first.metrics["tool_calls"] >= 3
    assert second.metrics["llm_calls"] == 0
    assert len(models.recorder.calls) == calls
    assert len(searched) == searches
    assert second.answer == first.answer


def test_the_cache_key_reads_what_a_prompt_says_not_how_its_replies_were_made() -> None:
    live = AIMessage(
        content="",
        id="run-1",
        usage_metadata={"input_tokens": 9, "output_tokens": 1, "total_tokens": 10},
        response_metadata={"model": "m"},
    )
    cached = AIMessage(
        content="",
        id="run-2",
        usage_metadata={"input_tokens": 9, "output_tokens": 1, "total_tokens": 10, "total_cost": 0},
    )  # type: ignore[typeddict-unknown-key]
    other = AIMessage(content="something else", id="run-1")
    ask = HumanMessage(content="q")

    assert canonical_prompt(dumps([ask, live])) == canonical_prompt(dumps([ask, cached]))
    assert canonical_prompt(dumps([ask, live])) != canonical_prompt(dumps([ask, other]))
    assert canonical_prompt("plain text") == "plain text"
