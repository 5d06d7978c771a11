"""The Agent Server API's mapping, without a server: request bodies to run parameters, a
question and a plan's answer; records to Thread, Run, ThreadState and values; events to stream
parts, read back with the SDK's own SSE decoder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph_sdk.schema import StreamPart
from langgraph_sdk.sse import SSEDecoder
from pydantic import ValidationError

from agents.result import RunResult
from app.agent_server import shapes, stream
from app.agent_server.assistant_bodies import PRESET_ASSISTANTS, AssistantPatch, AssistantSearch
from app.agent_server.bodies import (
    BadInput,
    RunCreate,
    ThreadCreate,
    UnknownAssistant,
    plan_decision,
    question,
    run_params,
)
from app.store.assistant_base import AssistantRecord
from app.store.base import RunRecord, RunStatus, ThreadRecord

T0 = datetime(2026, 5, 1, tzinfo=UTC)
SOURCE = {"title": "Paper", "url": "https://example.org/p"}


def _run(run_id: str, status: RunStatus, task: str = "Q?", answer: str | None = None) -> RunRecord:
    result = None
    if status in ("done", "failed", "cancelled"):
        result = RunResult(
            run_id=run_id,
            status=status,
            answer=answer,
            sources=[SOURCE] if answer else [],
            metrics={"input_tokens": 10, "output_tokens": 5},
        )
    return RunRecord(
        id=run_id,
        task=task,
        params={"max_paths": 1},
        status=status,
        created_at=T0,
        updated_at=T0 + timedelta(minutes=1),
        result=result,
        thread_id="t1",
        awaiting="plan" if status == "interrupted" else None,
    )


def _decoded(frames: list[bytes]) -> list[StreamPart]:
    decoder = SSEDecoder()
    parts = []
    for line in b"".join(frames).split(b"\n"):
        part = decoder.decode(line)
        if part is not None and (part.event or decoder.has_data):
            parts.append(part)
    return parts


def test_parameters_are_the_preset_then_configurable_then_context() -> None:
    body = RunCreate(
        assistant_id="plantree-fast",
        config={"configurable": {"max_paths": 3, "max_depth": 4, "thread_id": "t1"}},
        context={"max_paths": 1},
    )
    params = run_params(body)
    assert (params.max_paths, params.max_depth, params.max_llm_calls) == (1, 4, 40)


def test_an_unknown_assistant_or_parameter_is_refused() -> None:
    with pytest.raises(UnknownAssistant):
        run_params(RunCreate(assistant_id="gpt"))
    with pytest.raises(ValidationError):
        run_params(RunCreate(context={"max_paths": 10_000}))
    with pytest.raises(ValidationError):
        run_params(RunCreate(context={"no_such_knob": 1}))


def test_a_user_assistants_parameters_come_first_and_the_bodys_win() -> None:
    body = RunCreate(
        assistant_id="mine",
        config={"configurable": {"max_paths": 3, "checkpoint_id": "x"}},
        context={"max_depth": 2},
    )
    params = run_params(body, {"max_paths": 1, "max_depth": 5, "collections": ["c1"]})
    assert (params.max_paths, params.max_depth, params.collections) == (3, 2, ["c1"])


def test_an_assistant_shows_its_parameters_as_config_and_context() -> None:
    record = AssistantRecord(
        id="mine",
        tenant="alice",
        name="Mine",
        params={"collections": ["c1"]},
        metadata={"team": "a"},
        version=2,
        created_at=T0,
        updated_at=T0,
    )
    shown = shapes.assistant(record)
    assert shown["config"] == {"configurable": {"collections": ["c1"]}}
    assert shown["context"] == {"collections": ["c1"]}
    assert (shown["graph_id"], shown["version"], shown["metadata"]) == (
        "plantree",
        2,
        {"team": "a"},
    )
    assert [shapes.assistant(p)["context"]["max_paths"] for p in PRESET_ASSISTANTS[1:]] == [2]
    assert AssistantSearch(metadata={"team": "a"}, name="MI").keeps(record)
    assert not AssistantSearch(metadata={"team": "b"}).keeps(record)
    assert not AssistantSearch(graph_id="agent").keeps(record)
    assert AssistantPatch(name="x").params() is None
    assert AssistantPatch(context={"max_paths": 2}).params() == run_params(
        RunCreate(context={"max_paths": 2}), {}
    )


def test_settings_plantree_does_not_keep_are_refused_not_ignored() -> None:
    with pytest.raises(ValidationError):
        RunCreate(metadata={"user": "x"})
    with pytest.raises(ValidationError):
        RunCreate.model_validate({"webhook": "https://example.org/hook"})
    with pytest.raises(ValidationError):
        RunCreate(multitask_strategy="enqueue")
    with pytest.raises(ValidationError):
        ThreadCreate.model_validate({"thread_id": "mine"})
    assert RunCreate(stream_mode=["custom", "values", "custom"]).modes() == ("custom", "values")


def test_the_question_is_the_last_human_message() -> None:
    said = [
        {"type": "human", "content": "first"},
        {"type": "ai", "content": "an answer"},
        {"role": "user", "content": [{"type": "text", "text": "second "}, {"type": "image"}]},
        {"type": "ai", "content": "later"},
    ]
    assert question({"messages": said}) == "second"
    assert question({"task": "  a task "}) == "a task"
    with pytest.raises(BadInput):
        question({"messages": [{"type": "ai", "content": "no question"}]})
    with pytest.raises(BadInput):
        question({"messages": [{"type": "human", "content": "x" * 4001}]})


def test_a_plan_answer_reads_each_resume_form() -> None:
    assert plan_decision({"action": "approve"}).action == "approve"
    assert plan_decision(True).action == "approve"
    assert plan_decision("reject").action == "reject"
    edit = plan_decision(["Read the paper", "Compare"])
    assert (edit.action, edit.steps) == ("edit", ["Read the paper", "Compare"])
    with pytest.raises(ValidationError):
        plan_decision({"action": "edit"})
    with pytest.raises(BadInput):
        plan_decision(3)


def test_values_hold_the_conversation_and_the_last_runs_state() -> None:
    runs = [_run("r1", "done", "Q1", "A1 [1]"), _run("r2", "failed", "Q2")]
    values = shapes.values(runs)
    kinds = [(m["type"], m["id"]) for m in values["messages"]]
    assert kinds == [("human", "r1:question"), ("ai", "r1:answer"), ("human", "r2:question")]
    ai = values["messages"][1]
    assert ai["content"] == "A1 [1]\n\nSources:\n1. [Paper](https://example.org/p)"
    assert ai["additional_kwargs"]["sources"] == [SOURCE]
    assert ai["usage_metadata"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert (values["run_id"], values["status"], values["task"]) == ("r2", "failed", "Q2")


def test_statuses_map_to_the_agent_servers_words() -> None:
    thread = ThreadRecord(id="t1", created_at=T0)
    assert shapes.thread(thread, [])["status"] == "idle"
    assert shapes.thread(thread, [_run("r1", "running")])["status"] == "busy"
    assert shapes.thread(thread, [_run("r1", "failed")])["status"] == "error"
    assert shapes.run(_run("r1", "queued"))["status"] == "pending"
    assert shapes.run(_run("r1", "done"))["status"] == "success"
    assert shapes.run(_run("r1", "cancelled"))["status"] == "interrupted"


def test_a_waiting_run_shows_its_interrupt_in_state_and_thread() -> None:
    runs = [_run("r1", "done", answer="A"), _run("r2", "interrupted")]
    waiting = shapes.interrupt_of(runs[-1], ["Find", "Sum up"])
    state = shapes.state("t1", runs, waiting)
    thread = shapes.thread(ThreadRecord(id="t1", created_at=T0), runs, waiting)
    assert state["next"] == ["approve"]
    assert state["interrupts"] == [
        {"value": {"kind": "plan", "steps": ["Find", "Sum up"]}, "id": "r2:plan"}
    ]
    assert state["tasks"][0]["interrupts"] == state["interrupts"]
    assert state["parent_checkpoint"] == shapes.checkpoint("t1", "r1")
    assert thread["interrupts"] == {"r2": [waiting]}
    assert thread["status"] == "interrupted"


def test_history_is_one_state_per_run_newest_first() -> None:
    runs = [_run(f"r{i}", "done", answer=f"A{i}") for i in (1, 2, 3)]
    history = shapes.history("t1", runs, None, limit=10)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == ["r3", "r2", "r1"]
    assert [len(h["values"]["messages"]) for h in history] == [6, 4, 2]
    older = shapes.history("t1", runs, None, limit=1, before="r3")
    assert [h["checkpoint"]["checkpoint_id"] for h in older] == ["r2"]


def test_an_events_parts_share_its_id_on_the_last_one() -> None:
    frames = stream.step(["updates", "custom"], 7, "plan", {"type": "plan", "steps": ["a"]})
    parts = _decoded(frames)
    assert [(p.event, p.id) for p in parts] == [("updates", None), ("custom", "7")]
    assert parts[0].data == {"plan": {"type": "plan", "steps": ["a"]}}


def test_an_event_no_mode_shows_still_moves_the_resume_point() -> None:
    decoder = SSEDecoder()
    for line in b"".join(stream.step(["values"], 4, "tool_call", {})).split(b"\n"):
        decoder.decode(line)
    assert decoder.last_event_id == "4"


def test_a_failed_run_ends_with_an_error_part_and_a_done_one_with_end() -> None:
    values: dict[str, Any] = {"messages": []}
    failed = _decoded(
        stream.ended(["values"], 9, "error", {"code": "model_error", "message": "m"}, values, None)
    )
    answer = shapes.answer_message(_run("r1", "done", answer="A"))
    done = _decoded(stream.ended(["messages-tuple"], 9, "done", {"run_id": "r1"}, values, answer))
    assert [p.event for p in failed] == ["values", "error"]
    assert failed[-1].data == {"error": "model_error", "message": "m"}
    assert [p.event for p in done] == ["messages", "end"]
    assert done[0].data[0]["id"] == "r1:answer"
