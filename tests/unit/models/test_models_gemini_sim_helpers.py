"""The simulator's pure parts: seeded random faults, role inference, request helpers."""

from __future__ import annotations

from agents import prompts
from testkit.gemini_roles import messages_of, role_of
from testkit.gemini_sim import Fault, RandomFaults, SimRequest


def _request(system: str = "", **body: object) -> SimRequest:
    full: dict[str, object] = {"contents": [], **body}
    if system:
        full["systemInstruction"] = {"parts": [{"text": system}]}
    return SimRequest(seq=1, model="gemini-2.5-flash", stream=False, api_key="k", body=full)


def test_random_faults_repeat_with_the_same_seed() -> None:
    a, b = RandomFaults(0.3, (429, 503), seed=7), RandomFaults(0.3, (429, 503), seed=7)

    draws_a = [a.draw() for _ in range(200)]
    draws_b = [b.draw() for _ in range(200)]

    assert draws_a == draws_b
    faults = [d for d in draws_a if d is not None]
    assert 30 < len(faults) < 90
    assert {f.status for f in faults} == {429, 503}
    assert all(isinstance(f, Fault) for f in faults)


def test_a_zero_rate_never_fails() -> None:
    faults = RandomFaults(0.0, seed=1)

    assert all(faults.draw() is None for _ in range(100))


def test_every_role_is_recognised_from_its_system_prompt() -> None:
    cases = {
        prompts.PLANNER_SYSTEM.format(max_steps=4): "planner",
        prompts.EXECUTOR_SYSTEM: "executor",
        prompts.REPLANNER_SYSTEM.format(k=3): "replanner",
        prompts.RESPONDER_SYSTEM: "responder",
        prompts.VOTER_SYSTEM: "voter",
        prompts.EVALUATOR_PROGRESS_SYSTEM: "evaluator",
    }

    assert {text: role_of(_request(text)) for text in cases} == cases
    assert role_of(_request("You are a pirate.")) is None
    assert role_of(_request()) is None


def test_request_helpers_read_the_gemini_body() -> None:
    request = _request(
        "sys",
        contents=[
            {"role": "user", "parts": [{"text": "find otters"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "lookup", "response": {"r": "otters"}}}],
            },
        ],
        tools=[{"functionDeclarations": [{"name": "lookup"}, {"name": "fetch"}]}],
        generationConfig={"responseJsonSchema": {"type": "object"}},
    )

    assert request.system == "sys"
    assert request.prompt == "find otters"
    assert request.tool_names == ["lookup", "fetch"]
    assert request.function_responses == [{"name": "lookup", "response": {"r": "otters"}}]
    assert request.response_schema == {"type": "object"}
    assert [m.type for m in messages_of(request)] == ["human", "ai", "tool"]
    assert messages_of(request)[-1].text == '{"r": "otters"}'


def test_a_text_tool_result_reads_back_as_the_text_the_engine_held() -> None:
    # The client sends a text tool result as {"output": text}; the engine's message held text.
    def reply(response: object) -> str:
        part = {"functionResponse": {"name": "lookup", "response": response}}
        return messages_of(_request(contents=[{"role": "user", "parts": [part]}]))[0].text

    assert reply({"output": "[1] Otters\nOtters eat fish."}) == "[1] Otters\nOtters eat fish."
    assert reply({"output": ["a", "b"]}) == '{"output": ["a", "b"]}'
    assert reply({"output": "x", "extra": 1}) == '{"output": "x", "extra": 1}'
