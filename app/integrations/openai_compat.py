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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.params import RunParams
from app.http.schemas import MAX_TASK_CHARS

PRESETS: dict[str, dict[str, Any]] = {
    "plantree": {},
    "plantree-fast": {
        "max_paths": 2,
        "max_candidates": 2,
        "max_depth": 3,
        "max_llm_calls": 40,
        "deadline_s": 180.0,
    },
}
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


def invalid_fields(error: ValidationError) -> list[dict[str, Any]]:
    """Validation problems in the run API's `fields` shape."""
    return [
        {"loc": list(e.get("loc", [])), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in error.errors()
    ]


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
