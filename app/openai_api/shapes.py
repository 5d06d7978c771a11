"""OpenAI chat-completions requests translated to runs, and runs to completion bodies. Pure.

- The last user message is the task; earlier turns (system prompt included) are its context,
  kept newest first within the task's length limit.
- Run parameters: a preset picked by the model name (`plantree`, `plantree-fast`), then
  `key=value` pairs after a colon in the model name (`plantree-fast:max_paths=3,strategy=dfs`),
  then run parameters given as extra body fields (or in a `plantree` object), which win.
  OpenAI's own sampling fields (`temperature`, `max_tokens`, …) mean nothing to a search and
  are ignored; a run's token budget is `plantree.max_tokens`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.grounding.verify import Citation
from agents.params import RunParams
from agents.result import RunAnswer
from app.http.presets import PRESETS
from app.http.schemas import MAX_TASK_CHARS
from app.observability.progress import with_sources
from app.store.base import RunRecord
from tools.documents.search_tool import document_place

# Fields an OpenAI client may send that are not run parameters (and `max_tokens`, which means
# reply length there, not a token budget).
OPENAI_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "n",
        "stop",
        "max_tokens",
        "max_completion_tokens",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "seed",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "metadata",
        "store",
        "service_tier",
        "modalities",
        "plantree",
    }
)


class UnknownModel(ValueError):
    """The model name names no preset."""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The body of `POST /v1/chat/completions`; unknown fields are kept for run parameters."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="`plantree` or `plantree-fast`, optionally `:key=value,…`.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    plantree: dict[str, Any] | None = Field(
        default=None, description="Run parameters (they win over the model name's)."
    )

    def run_params(self) -> RunParams:
        """Preset, then model-name pairs, then body fields. Raises `UnknownModel` or pydantic's
        `ValidationError` (bounds as in the run API)."""
        values = dict(model_params(self.model))
        extra = self.model_extra or {}
        values.update({k: v for k, v in extra.items() if k not in OPENAI_FIELDS})
        values.update(self.plantree or {})
        return RunParams.model_validate(values)

    def task(self) -> str:
        """The last user message, with earlier turns as context; raises `ValueError` when no
        user message has text or the question alone is too long."""
        users = [i for i, m in enumerate(self.messages) if m.role == "user" and m.text.strip()]
        if not users:
            raise ValueError("the conversation has no user message")
        last = users[-1]
        question = self.messages[last].text.strip()
        if len(question) > MAX_TASK_CHARS:
            raise ValueError(f"the last user message is over {MAX_TASK_CHARS} characters")
        earlier = [m for m in self.messages[:last] if m.text.strip()]
        return with_context(question, earlier)


def model_params(model: str) -> dict[str, Any]:
    """The run parameters a model name stands for (preset plus `:key=value` pairs)."""
    name, _, suffix = model.partition(":")
    if name not in PRESETS:
        raise UnknownModel(f"unknown model {name!r}; use one of {', '.join(PRESETS)}")
    values: dict[str, Any] = dict(PRESETS[name])
    for pair in filter(None, (p.strip() for p in suffix.split(","))):
        key, eq, value = pair.partition("=")
        if not eq:
            raise UnknownModel(f"model suffix {pair!r} is not key=value")
        values[key.strip()] = value.strip()  # RunParams coerces "3" to 3 and "true" to True
    return values


def with_context(question: str, earlier: list[ChatMessage]) -> str:
    """The question, then as many of the latest earlier turns as fit the task limit."""
    if not earlier:
        return question
    header = "\n\nEarlier conversation (context):\n"
    room = MAX_TASK_CHARS - len(question) - len(header)
    lines: list[str] = []
    for message in reversed(earlier):
        line = f"{message.role}: {' '.join(message.text.split())}"
        if len(line) + 1 > room:
            break
        lines.insert(0, line)
        room -= len(line) + 1
    return question + header + "\n".join(lines) if lines else question


def models_list() -> dict[str, Any]:
    return {"object": "list", "data": [model_card(name) for name in PRESETS]}


def model_card(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "plantree"}


def usage(metrics: dict[str, Any]) -> dict[str, int]:
    """The run's tokens (every model call of the search) in OpenAI's usage shape."""
    prompt = int(metrics.get("input_tokens", 0))
    completion = int(metrics.get("output_tokens", 0))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def chunk(
    run_id: str, model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One `chat.completion.chunk`; `id` is the run id on every chunk."""
    return {
        "id": run_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def citation_annotations(text: str, citations: Sequence[Citation]) -> list[dict[str, Any]]:
    """OpenAI's annotations of the verified citations, each on the first occurrence of its
    marker `[n]` in `text`: a `url_citation` (its span, `end_index` exclusive) for a source
    with a web URL, a `file_citation` (the document's id, its title and page as the file
    name, the marker's position as `index`, as OpenAI's file search gives them) for a
    passage of a collection's document; none for other sources."""
    annotations: list[dict[str, Any]] = []
    for citation in citations:
        marker = f"[{citation['marker']}]"
        start = text.find(marker)
        url, title = citation["source"]["url"], citation["source"]["title"]
        place = document_place(url)
        if start < 0:
            continue
        if place is not None:
            annotations.append(
                {
                    "type": "file_citation",
                    "file_id": place.document_id,
                    "filename": title,
                    "index": start,
                }
            )
        elif url.startswith(("http://", "https://")):
            span = {"start_index": start, "end_index": start + len(marker)}
            annotations.append(
                {"type": "url_citation", "url_citation": {"url": url, "title": title, **span}}
            )
    return annotations


def outcome(record: RunRecord) -> tuple[str, dict[str, Any]]:
    """The assistant's text for a finished run (its answer with its sources, or what ended
    it), and the `plantree` object."""
    result = record.result or RunAnswer()
    if record.status == "done" and result.answer is not None:
        text = with_sources(result.answer, result.sources)
    elif record.status == "cancelled":
        text = "The search was cancelled."
    else:
        text = f"The search failed: {result.error['message'] if result.error else 'no answer'}"
    info = {
        "run_id": record.id,
        "status": record.status,
        "stop_reason": result.stop_reason,
        "partial": result.partial,
        "sources": result.sources,
        "citations": result.citations,
        "groundedness": result.groundedness,
        "unsupported": result.unsupported,
        "rejected": result.rejected,
        "metrics": result.metrics,
        "run": f"/runs/{record.id}",
    }
    return text, info


def completion(record: RunRecord, model: str) -> dict[str, Any]:
    """A finished run as one `chat.completion`, its citations as the message's annotations."""
    text, info = outcome(record)
    return {
        "id": record.id,
        "object": "chat.completion",
        "created": int(record.created_at.timestamp()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text,
                    "annotations": citation_annotations(text, info["citations"]),
                },
                "finish_reason": "stop",
            }
        ],
        "usage": usage(info["metrics"]),
        "plantree": info,
    }
