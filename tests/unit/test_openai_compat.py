"""Chat requests to run parameters and tasks; events to progress lines."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.http.schemas import MAX_TASK_CHARS
from app.observability.progress import Progress, with_sources
from app.openai_api.shapes import ChatRequest, UnknownModel, model_params


def _request(**fields: Any) -> ChatRequest:
    fields.setdefault("messages", [{"role": "user", "content": "q"}])
    return ChatRequest.model_validate({"model": "plantree", **fields})


def test_body_fields_win_over_the_model_suffix_and_the_preset() -> None:
    params = _request(model="plantree-fast:max_paths=3,max_depth=4", max_paths=5).run_params()

    assert (params.max_paths, params.max_depth, params.max_candidates) == (5, 4, 2)


def test_the_plantree_object_wins_over_top_level_fields() -> None:
    params = _request(max_paths=5, plantree={"max_paths": 6, "max_tokens": 5000}).run_params()

    assert (params.max_paths, params.max_tokens) == (6, 5000)


def test_openai_sampling_fields_are_not_run_parameters() -> None:
    params = _request(temperature=0.2, max_tokens=10, user="u").run_params()

    assert params.max_tokens == 2_000_000


def test_out_of_bounds_parameters_raise_the_run_api_validation_error() -> None:
    with pytest.raises(ValidationError):
        _request(model="plantree:max_paths=0").run_params()


def test_unknown_models_and_malformed_suffixes_are_refused() -> None:
    with pytest.raises(UnknownModel):
        model_params("gpt-4o")
    with pytest.raises(UnknownModel):
        model_params("plantree:max_paths")


def test_the_task_is_the_last_user_message_with_recent_turns_as_context() -> None:
    request = _request(
        messages=[
            {"role": "user", "content": "old " * 600},
            {"role": "assistant", "content": [{"type": "text", "text": "reply"}]},
            {"role": "user", "content": "the question"},
        ]
    )

    task = request.task()

    assert task.startswith("the question\n\nEarlier conversation (context):\n")
    assert task.endswith("user: " + " ".join(["old"] * 600) + "\nassistant: reply")
    assert len(task) <= MAX_TASK_CHARS


def test_context_that_does_not_fit_is_dropped_oldest_first() -> None:
    request = _request(
        messages=[
            {"role": "user", "content": "x" * 3100},
            {"role": "assistant", "content": "recent"},
            {"role": "user", "content": "q" * 900},
        ]
    )

    task = request.task()

    assert task.endswith("assistant: recent")
    assert "x" * 100 not in task


def test_a_too_long_question_is_refused() -> None:
    with pytest.raises(ValueError, match="over 4000"):
        _request(messages=[{"role": "user", "content": "x" * 4001}]).task()


def test_progress_counts_steps_and_paths_and_names_steps() -> None:
    progress = Progress()
    lines = [
        progress.update("run_started", {"params": {"max_paths": 2}}),
        progress.update("plan", {"steps": ["A", "B"], "root": {"node_id": "n1", "step": "A"}}),
        progress.update("node_started", {"node_id": "n1"}),
        progress.update("node_finished", {"node_id": "n1", "status": "done", "tool_calls": 2}),
        progress.update("candidates", {"parent_id": "n1", "complete": True, "nodes": []}),
        progress.update("path_completed", {"node_id": "n1"}),
        progress.update("tool_call", {"node_id": "n1"}),
    ]

    assert lines == [
        "planning…",
        "plan: 2 steps",
        "n1 ▸ A",
        "n1 done, 2 tool calls · 1 steps run, 0/2 paths complete",
        None,
        "path complete at n1 · 1 steps run, 1/2 paths complete",
        None,
    ]
    assert progress.stage == "searching"


def test_sources_follow_the_answer_as_a_numbered_list() -> None:
    text = with_sources("Answer.", [{"title": "T", "url": "https://e.org"}])

    assert text == "Answer.\n\nSources:\n1. [T](https://e.org)"


def test_verified_citations_become_url_and_file_citation_annotations() -> None:
    from app.openai_api.shapes import citation_annotations

    text = "Paris is the capital.[1] The Seine flows through it.[2] It grew.[3]"
    web = {"id": "w", "title": "France", "url": "https://en.wikipedia.org/wiki/France"}
    local = {"id": "doc", "title": "Notes", "url": "corpus://notes"}
    page = {"id": "p", "title": "Report, p. 4", "url": "/collections/c1/documents/d7#page=4"}
    citations = [
        {"marker": 1, "source": web, "quote": "q", "verified": True},
        {"marker": 2, "source": local, "quote": "q", "verified": True},
        {"marker": 3, "source": page, "quote": "q", "verified": True},
    ]

    url, file = citation_annotations(text, citations)  # type: ignore[arg-type]

    found = url["url_citation"]
    assert url["type"] == "url_citation"
    assert text[found["start_index"] : found["end_index"]] == "[1]"
    assert (found["url"], found["title"]) == (web["url"], "France")
    # A collection's document: OpenAI's file search shape, the marker's position as index.
    assert file == {
        "type": "file_citation",
        "file_id": "d7",
        "filename": "Report, p. 4",
        "index": text.index("[3]"),
    }
