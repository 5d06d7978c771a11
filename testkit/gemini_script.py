"""What a Gemini simulator script speaks: the request it is given (`SimRequest`, with helpers
over the Gemini JSON body) and the replies it may answer with (text, JSON, function calls,
faults, malformed bodies, dropped connections, delays, slow streams). Plain data; the server
that serves them is `testkit.gemini_sim`, the engine-aware scripts `testkit.gemini_roles`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# -- requests ----------------------------------------------------------------------------------


@dataclass
class SimRequest:
    """One request as the simulator received it, with helpers over the Gemini JSON body."""

    seq: int
    model: str
    stream: bool
    api_key: str | None
    body: dict[str, Any]
    status: int | None = None  # the HTTP status the simulator answered with
    usage: dict[str, int] | None = None  # the usageMetadata it reported
    at: float = 0.0  # arrival, monotonic seconds

    @property
    def system(self) -> str:
        """The system instruction's text ('' when none was sent)."""
        instruction = self.body.get("systemInstruction") or {}
        return "\n".join(p.get("text", "") for p in instruction.get("parts", []) if "text" in p)

    @property
    def contents(self) -> list[dict[str, Any]]:
        return list(self.body.get("contents", []))

    @property
    def prompt(self) -> str:
        """Every text part of the conversation, in order."""
        return "\n".join(
            part["text"] for c in self.contents for part in c.get("parts", []) if "text" in part
        )

    @property
    def function_declarations(self) -> list[dict[str, Any]]:
        """The tool declarations sent, flattened over the `tools` entries."""
        return [
            decl
            for tool in self.body.get("tools", [])
            for decl in tool.get("functionDeclarations", [])
        ]

    @property
    def tool_names(self) -> list[str]:
        return [str(d["name"]) for d in self.function_declarations]

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        """`functionResponse` parts: tool results the client sent back."""
        return [
            part["functionResponse"]
            for c in self.contents
            for part in c.get("parts", [])
            if "functionResponse" in part
        ]

    @property
    def generation_config(self) -> dict[str, Any]:
        return dict(self.body.get("generationConfig") or {})

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """The structured-output schema sent (`responseJsonSchema`, else `responseSchema`)."""
        config = self.generation_config
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        return dict(schema) if isinstance(schema, dict) else None


# -- replies -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """A text reply; `thoughts_tokens` are reported in `usageMetadata.thoughtsTokenCount`."""

    text: str
    thoughts_tokens: int = 0


@dataclass(frozen=True)
class Json:
    """A JSON reply (what structured output gets), sent as the text part."""

    value: Any
    thoughts_tokens: int = 0


@dataclass(frozen=True)
class Call:
    """A function call."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fault:
    """An HTTP error with Google's error body."""

    status: int
    message: str = "injected fault"


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not valid JSON."""

    body: str = '{"candidates": [{"content": '


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering (the client sees a dropped connection)."""


@dataclass(frozen=True)
class Delayed:
    """`reply` after `seconds` of silence (latency, or a reply slower than the client waits)."""

    reply: Reply
    seconds: float


@dataclass(frozen=True)
class Slow:
    """`reply` streamed in pieces, `chunk_delay_s` apart (whole after the total delay when the
    request is not a streaming one)."""

    reply: Reply
    chunk_delay_s: float
    chunks: int = 4


Reply = (
    str
    | dict[str, Any]
    | Text
    | Json
    | Call
    | list[Call]
    | Fault
    | Malformed
    | Disconnect
    | Delayed
    | Slow
)
Script = Callable[[SimRequest], Reply]
