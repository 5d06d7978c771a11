"""The official `openai` client against the real app: completions, streaming, models, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from pydantic import SecretStr

from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})
ASK = [{"role": "user", "content": "What is B?"}]


def _client(url: str, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=20)


async def test_a_completion_answers_with_the_run_id_and_sources(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        client = _client(svc.url)
        raw = await client.chat.completions.with_raw_response.create(
            model="plantree", messages=ASK, extra_body={"max_paths": 2, "strategy": "mcts"}
        )
        completion = raw.parse()
        run = (await svc.client.get(f"/runs/{completion.id}")).json()

    extra: dict[str, Any] = completion.model_extra or {}
    assert raw.headers["x-plantree-run-id"] == completion.id
    assert completion.choices[0].message.content in {"answer via B", "answer via C"}
    assert completion.choices[0].finish_reason == "stop"
    assert extra["plantree"]["run_id"] == completion.id
    assert extra["plantree"]["stop_reason"] == "max_paths"
    assert run["status"] == "done"
    assert run["params"]["max_paths"] == 2
    assert completion.usage is not None
    assert completion.usage.total_tokens == (
        run["metrics"]["input_tokens"] + run["metrics"]["output_tokens"]
    )


async def test_earlier_turns_reach_the_planner_as_context(service_for: ServiceMaker) -> None:
    messages = [
        {"role": "system", "content": "Answer for a physicist."},
        {"role": "user", "content": "Tell me about Tree of Thoughts."},
        {"role": "assistant", "content": "It searches over thoughts."},
        {"role": "user", "content": "How does it do on Game of 24?"},
    ]
    async with service_for(Scenario(plan=["A"])) as svc:
        completion = await _client(svc.url).chat.completions.create(
            model="plantree", messages=messages
        )
        run = (await svc.client.get(f"/runs/{completion.id}")).json()
        planner_prompt = svc.models.recorder.by_role("planner")[0].prompt

    assert run["task"].startswith("How does it do on Game of 24?")
    assert "assistant: It searches over thoughts." in run["task"]
    assert "system: Answer for a physicist." in planner_prompt


async def test_the_model_suffix_and_preset_set_run_parameters(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        completion = await _client(svc.url).chat.completions.create(
            model="plantree-fast:max_paths=1,strategy=dfs", messages=ASK
        )
        run = (await svc.client.get(f"/runs/{completion.id}")).json()

    assert run["params"]["max_paths"] == 1
    assert run["params"]["strategy"] == "dfs"
    assert run["params"]["max_depth"] == 3  # from the plantree-fast preset


async def test_streaming_sends_progress_while_the_run_is_live_then_the_answer(
    service_for: ServiceMaker,
) -> None:
    gate = asyncio.Event()
    scenario = Scenario(plan=["A"], replans={"A": ["B", "C"]}, gate=gate)
    async with service_for(scenario) as svc:
        stream = await _client(svc.url).chat.completions.create(
            model="plantree", messages=ASK, stream=True, extra_body={"max_paths": 2}
        )
        kinds: list[str] = []
        text = ""
        ids = set()
        final_extra: dict[str, Any] = {}
        status_at_first_progress = None
        async for part in stream:
            ids.add(part.id)
            if not part.choices:
                continue
            delta = part.choices[0].delta
            reasoning = (delta.model_extra or {}).get("reasoning_content")
            if reasoning:
                kinds.append("progress")
                if status_at_first_progress is None:
                    run = (await svc.client.get(f"/runs/{part.id}")).json()
                    status_at_first_progress = run["status"]
                    gate.set()  # the executor was held until progress had arrived
            if delta.content:
                kinds.append("answer")
                text += delta.content
            if part.choices[0].finish_reason:
                final_extra = part.model_extra or {}

    assert status_at_first_progress in {"queued", "running"}
    assert kinds.count("answer") == 1
    assert kinds[-1] == "answer"
    assert kinds.count("progress") >= 4  # planning, plan, steps, paths
    assert text in {"answer via B", "answer via C"}
    assert len(ids) == 1
    assert final_extra["plantree"]["run_id"] in ids
    assert final_extra["plantree"]["status"] == "done"


async def test_streaming_with_usage_ends_with_a_usage_chunk(service_for: ServiceMaker) -> None:
    async with service_for(Scenario(plan=["A"])) as svc:
        stream = await _client(svc.url).chat.completions.create(
            model="plantree",
            messages=ASK,
            stream=True,
            stream_options={"include_usage": True},
        )
        parts = [part async for part in stream]

    assert parts[-1].choices == []
    assert parts[-1].usage is not None
    assert parts[-1].usage.total_tokens > 0


async def test_models_lists_the_presets(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        client = _client(svc.url)
        models = [m.id async for m in client.models.list()]
        fast = await client.models.retrieve("plantree-fast")

    assert models == ["plantree", "plantree-fast"]
    assert fast.id == "plantree-fast"


async def test_a_parameter_out_of_bounds_is_422_like_the_run_api(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        with pytest.raises(openai.UnprocessableEntityError) as caught:
            await _client(svc.url).chat.completions.create(
                model="plantree", messages=ASK, extra_body={"max_paths": 999}
            )

    body: Any = caught.value.body
    assert body["code"] == "invalid_request"
    assert body["fields"][0]["loc"] == ["body", "max_paths"]


async def test_an_unknown_model_is_404(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        with pytest.raises(openai.NotFoundError):
            await _client(svc.url).chat.completions.create(model="gpt-4o", messages=ASK)


async def test_a_conversation_without_a_user_message_is_422(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        with pytest.raises(openai.UnprocessableEntityError):
            await _client(svc.url).chat.completions.create(
                model="plantree", messages=[{"role": "system", "content": "hi"}]
            )


async def test_the_api_keys_guard_the_openai_routes(service_for: ServiceMaker) -> None:
    async with service_for(TREE, api_keys=[SecretStr("s3cret")]) as svc:
        with pytest.raises(openai.AuthenticationError):
            await _client(svc.url, "wrong").models.list()
        models = [m.id async for m in _client(svc.url, "s3cret").models.list()]

    assert models == ["plantree", "plantree-fast"]


async def test_a_full_queue_is_429(service_for: ServiceMaker) -> None:
    gate = asyncio.Event()
    async with service_for(
        Scenario(plan=["A"], gate=gate), max_active_runs=1, max_queued_runs=0
    ) as svc:
        first = await svc.client.post("/runs", json={"task": "hold the slot"})
        with pytest.raises(openai.RateLimitError):
            await _client(svc.url).chat.completions.create(model="plantree", messages=ASK)
        gate.set()

    assert first.status_code == 202
