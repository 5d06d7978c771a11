"""The official `openai` client against the server as a real process, its models the real
Gemini client against the simulator: a completion and a streamed completion."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from testkit.gemini_roles import research_scenario
from testkit.process import ServerProcess
from tests.support.sim_env import sim_server

ASK = [{"role": "user", "content": "What do the sources say?"}]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with sim_server(research_scenario(), tmp_path, LATS_API_KEYS="k1") as process:
        yield process


def test_completions_and_streams_through_the_real_model_client(server: ServerProcess) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k1", max_retries=0, timeout=60)

    completion = client.chat.completions.create(
        model="plantree-fast", messages=ASK, extra_body={"max_paths": 1}
    )
    kinds: list[str] = []
    answer = ""
    for part in client.chat.completions.create(
        model="plantree-fast:max_paths=2", messages=ASK, stream=True
    ):
        delta = part.choices[0].delta if part.choices else None
        if delta is not None and (delta.model_extra or {}).get("reasoning_content"):
            kinds.append("progress")
        if delta is not None and delta.content:
            kinds.append("answer")
            answer += delta.content

    info = (completion.model_extra or {})["plantree"]
    assert info["status"] == "done"
    assert info["run_id"] == completion.id
    assert completion.choices[0].message.content
    assert kinds[-1] == "answer"
    assert kinds.index("answer") > 3  # progress lines came first
    assert answer
