"""The offline models as a LangChain chat model: the bundled SmolLM2-135M-Instruct, or a
fetched Qwen2.5-Coder, run by llama-cpp-python (`calls.local_runner`), with grammar-constrained
JSON for structured output and tool calls (`calls.local_grammar`).

`with_structured_output` turns the schema into a llama.cpp grammar, and `bind_tools` makes the
model choose `{"action": <tool>, "action_input": <arguments>}` or `{"action": "final_answer",
...}`, with tool results shown to it as text. Native tool calling is not used: llama-cpp-python
hands a Qwen tool call back as text in the reply, and SmolLM2 has none. A 135M model answers
weakly; the point is that every stage of the engine runs for real, offline, without a key.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import logging
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

from calls.local_catalog import GGUF_NAME, LocalModelUnavailable, default_model_path, model_file
from calls.local_confidence import TOKEN_CONFIDENCE
from calls.local_grammar import (
    CHARS_PER_TOKEN,
    FINAL_ANSWER,
    MAX_ITEM_CHARS,
    PARTIAL_ANSWER,
    bounded,
    chat_messages,
)
from calls.local_runner import LlamaRunner, local_stats, runner

logger = logging.getLogger(__name__)

# The names tests and the factory use, from the modules they now live in.
_bounded = bounded
_chat = chat_messages

__all__ = [
    "FINAL_ANSWER",
    "GGUF_NAME",
    "LocalChatModel",
    "LocalModelUnavailable",
    "default_model_path",
    "local_stats",
    "model_file",
]


class LocalChatModel(BaseChatModel):
    """SmolLM2, Qwen2.5-Coder (or another small GGUF chat model) through llama-cpp-python."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: Path = Field(description="The GGUF file.")
    temperature: float = Field(default=0.2, ge=0, le=2)
    n_ctx: int = Field(default=4096, ge=512, description="Context window in tokens.")
    max_tokens: int = Field(default=256, ge=16, description="Most tokens in one reply.")
    n_threads: int | None = Field(
        default=None, ge=1, description="CPU threads (None: half the cores)."
    )
    seed: int | None = Field(default=None, description="Sampling seed (None: varies).")
    kv_cache_mb: int = Field(
        default=0,
        ge=0,
        description="Memory for KV states kept to reuse across calls sharing a prompt prefix "
        "(0: only the last call's state is reused).",
    )
    tool_first: bool = Field(
        default=True,
        description="With tools bound and no tool result yet, the first reply must call a "
        "tool: a 135M model seldom chooses one by itself, and the executor's step needs facts.",
    )
    instructions_last: bool = Field(
        default=False,
        description="Send one fixed system message and put each call's own instructions (the "
        "role's system text, the tool list) at the end of the user's turn. Every prompt then "
        "begins with the task and the path so far, so the KV state of an earlier call on the "
        "path serves a later one of any role (`chat_messages`); Qwen follows instructions "
        "placed there. Off: the role's system text and the tool list open the prompt, where "
        "SmolLM2 reads them best.",
    )
    max_tool_rounds: int = Field(
        default=1,
        ge=0,
        description="Tool results a conversation may gather before a final answer is forced; "
        "a small model otherwise tends to call tools until the call limit stops it.",
    )

    def model_post_init(self, context: Any, /) -> None:
        if not self.model_path.is_file():
            raise LocalModelUnavailable(f"no model file at {self.model_path}")
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelUnavailable(
                "llama-cpp-python is not installed; `make install` installs the 'local' extra"
            )

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path.name,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
        }

    # binding --------------------------------------------------------------------------------

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        """Tools as OpenAI-style declarations; the model picks one (or answers) in JSON."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: str = "json_schema",
        **kwargs: Any,
    ) -> Runnable[Any, dict[str, Any] | BaseModel]:
        """Replies constrained by a grammar built from `schema` (any `method` gives this)."""
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        if is_model:
            json_schema: dict[str, Any] = schema.model_json_schema()  # type: ignore[union-attr]
        elif isinstance(schema, dict) and ("properties" in schema or "type" in schema):
            json_schema = schema
        else:
            json_schema = convert_to_json_schema(schema)
        llm = self.bind(
            response_format={"type": "json_object", "schema": json_schema},
            ls_structured_output_format={"kwargs": {"method": method}, "schema": json_schema},
        )
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()
        )
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(
            parsed=lambda x: parser.invoke(x["raw"]), parsing_error=lambda _: None
        ).with_fallbacks(
            [RunnablePassthrough.assign(parsed=lambda _: None)], exception_key="parsing_error"
        )
        return {"raw": llm} | parsed

    # requests -------------------------------------------------------------------------------

    def _request(
        self,
        messages: Sequence[BaseMessage],
        stop: list[str] | None,
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """(llama.cpp request, whether the reply is a tool choice). A call's `temperature`
        and `seed` win over the model's (0: greedy; no seed at all: a random one)."""
        temperature = self.temperature if temperature is None else temperature
        if not 0 <= temperature <= 2:
            raise ValueError(f"temperature {temperature} is outside 0..2")
        request: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            "temperature": float(temperature),
            # llama.cpp's usual default; the Python binding's 1.0 lets SmolLM2 loop on a phrase.
            "repeat_penalty": 1.1,
            "stop": stop or [],
            "seed": self.seed if seed is None else seed,
        }
        answer_chars = self.max_tokens * CHARS_PER_TOKEN
        if tools and tool_choice != "none":
            rounds = sum(1 for m in messages if isinstance(m, ToolMessage))
            schema, listing, instruction = self._tool_schema(
                tools, tool_choice, rounds, answer_chars
            )
            if self.instructions_last:
                tail = instruction if schema is None else f"{listing}\n\n{instruction}"
                request["messages"] = chat_messages(messages, tail, instructions_last=True)
            else:
                note = instruction if schema is None else f"{listing}\n\n{instruction}"
                request["messages"] = chat_messages(messages, note)
            if schema is None:  # only an answer is allowed: plain text reads best
                return request, False
            request["response_format"] = {"type": "json_object", "schema": schema}
            return request, True
        request["messages"] = chat_messages(messages, instructions_last=self.instructions_last)
        if response_format is not None:
            schema = bounded(copy.deepcopy(response_format.get("schema", {})), answer_chars // 4)
            request["response_format"] = {"type": "json_object", "schema": schema}
        return request, False

    def _tool_schema(
        self, tools: list[dict[str, Any]], tool_choice: str | None, rounds: int, answer_chars: int
    ) -> tuple[dict[str, Any] | None, str, str]:
        """(grammar schema, tool listing, instruction) for a tool-choice reply; no schema when
        the reply can only be the answer, which SmolLM2 writes better as plain text than
        inside JSON. The listing is the same in every round, so it can sit in a prefix."""
        functions = [t["function"] for t in tools if t.get("type") == "function"]
        if tool_choice not in (None, "auto", "any", "required"):
            functions = [f for f in functions if f["name"] == tool_choice] or functions
        lines = [
            f"- {f['name']}: {f.get('description', '').strip()} Arguments: "
            f"{json.dumps((f.get('parameters') or {}).get('properties', {}))}"
            for f in functions
        ]
        listing = "You can call one tool at a time:\n" + "\n".join(lines)
        may_answer = tool_choice in (None, "auto") or not functions
        if rounds >= self.max_tool_rounds and may_answer:
            functions = []  # enough tool results: answer now
        elif rounds == 0 and self.tool_first and functions:
            may_answer = False
        if not functions:
            seen = "The tool results are above. Write what they tell" if rounds else "Write"
            return None, listing, f"{seen} about the step in two or three plain sentences."
        options: list[dict[str, Any]] = [
            {
                "type": "object",
                "properties": {
                    "action": {"const": f["name"]},
                    "action_input": bounded(
                        f.get("parameters") or {"type": "object"}, MAX_ITEM_CHARS
                    ),
                },
                "required": ["action", "action_input"],
            }
            for f in functions
        ]
        # Plain words, no JSON template: the grammar already fixes the shape, and SmolLM2
        # copies a placeholder such as "<your findings>" verbatim.
        instruction = (
            'To call a tool, set "action" to its name and "action_input" to its arguments.'
        )
        if may_answer:
            options.append(
                {
                    "type": "object",
                    "properties": {
                        "action": {"const": FINAL_ANSWER},
                        "action_input": {"type": "string", "maxLength": answer_chars},
                    },
                    "required": ["action", "action_input"],
                }
            )
            instruction += (
                f' To answer, set "action" to "{FINAL_ANSWER}" and "action_input" to your '
                "answer in plain sentences."
            )
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        return schema, listing, instruction

    # generation -----------------------------------------------------------------------------

    def _result(self, completion: dict[str, Any], tool_mode: bool) -> ChatResult:
        text = str(completion["choices"][0]["message"].get("content") or "").strip()
        logger.debug("local reply: %.300s", text)
        usage = completion.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        output_tokens = int(usage.get("completion_tokens", 0))
        # Prompt tokens llama.cpp did not compute again are reported as read from a cache,
        # as providers report their prompt caches.
        evaluated = int(usage.get("prompt_tokens_evaluated", prompt_tokens))
        metadata = UsageMetadata(
            input_tokens=prompt_tokens,
            output_tokens=output_tokens,
            total_tokens=prompt_tokens + output_tokens,
            input_token_details={"cache_read": max(0, prompt_tokens - evaluated)},
        )
        # The model's own token log-probabilities (`calls.local_confidence`), for the reply's
        # readers (a path's answer records their mean).
        confidence = completion.get(TOKEN_CONFIDENCE)
        extra: dict[str, Any] = {TOKEN_CONFIDENCE: dict(confidence)} if confidence else {}
        message = AIMessage(content=text, usage_metadata=metadata, response_metadata=extra)
        if tool_mode:
            message = self._tool_message(text, metadata)
            message.response_metadata.update(extra)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _tool_message(self, text: str, metadata: UsageMetadata) -> AIMessage:
        try:
            choice = json.loads(text)
            action = str(choice["action"])
            argument = choice.get("action_input")
        except (ValueError, KeyError, TypeError):
            # Cut off by the token limit: what was written is the best answer there is.
            logger.warning("local model tool choice was not complete JSON; taken as the answer")
            partial = PARTIAL_ANSWER.search(text)
            answer = partial.group(1).replace("\\n", "\n").strip() if partial else text
            return AIMessage(content=answer, usage_metadata=metadata)
        if action == FINAL_ANSWER:
            answer = argument if isinstance(argument, str) else json.dumps(argument)
            return AIMessage(content=answer, usage_metadata=metadata)
        args = argument if isinstance(argument, dict) else {"input": argument}
        call = ToolCall(name=action, args=args, id=f"call_{uuid.uuid4().hex[:12]}")
        return AIMessage(content="", tool_calls=[call], usage_metadata=metadata)

    def _engine(self) -> LlamaRunner:
        return runner(self.model_path, self.n_ctx, self.n_threads, self.kv_cache_mb << 20)

    def load(self) -> LlamaRunner:
        """The llama.cpp runner of this model, loading the file now if no call has yet."""
        return self._engine()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, tool_mode = self._request(messages, stop, **_known(kwargs))
        completion = self._engine().complete(request, threading.Event())
        return self._result(completion, tool_mode)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, tool_mode = self._request(messages, stop, **_known(kwargs))
        engine = await asyncio.to_thread(self._engine)  # the first call loads the file
        abort = threading.Event()
        try:
            completion = await asyncio.to_thread(engine.complete, request, abort)
        except asyncio.CancelledError:
            abort.set()  # the worker thread stops at its next token instead of finishing
            raise
        return self._result(completion, tool_mode)


_CALL_OPTIONS = ("tools", "tool_choice", "response_format", "temperature", "seed")


def _known(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call options this model understands; others (provider-specific) are ignored."""
    return {k: kwargs[k] for k in _CALL_OPTIONS if k in kwargs}
