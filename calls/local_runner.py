"""The llama.cpp runner of the offline models: loads a GGUF (`calls.local_catalog` finds it)
once per file and settings in the process, and runs one completion at a time, abortable when
nobody waits for it any more, reusing saved KV states across calls that share a prompt prefix
(`calls.local_kv`)."""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calls.local_catalog import LocalModelUnavailable
from calls.local_kv import PrefixFloor, PrefixStates, common_prefix

logger = logging.getLogger(__name__)

_TEMPLATE_TOKENS = 8  # chat-template tokens around each message
# Restoring a saved state copies its bytes into the KV cache (milliseconds); below this many
# more reused tokens, evaluating them costs about as much.
_MIN_RESTORE_GAIN = 16


class Aborted(Exception):
    """A generation was stopped because nobody waits for it any more."""


@dataclass
class LocalStats:
    """What one engine has done: for logs and for measuring speed.

    `prompt_tokens` counts every prompt token of every call; `prompt_evaluated` only those
    llama.cpp computed (the rest were reused from the KV cache, the last call's or a saved
    state), from llama.cpp's own counters, which count a one-token remainder as generation;
    `prompt_floor` the least any prefix reuse could have evaluated (`PrefixFloor`).
    """

    calls: int = 0
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prompt_seconds: float = 0.0
    restores: int = 0  # calls that started from a saved state
    prompt_floor: int = 0  # what no prefix reuse could have spared (`PrefixFloor`)

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0

    @property
    def prompt_reused(self) -> int:
        return self.prompt_tokens - self.prompt_evaluated

    def __add__(self, other: LocalStats) -> LocalStats:
        return LocalStats(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )

    def __sub__(self, other: LocalStats) -> LocalStats:
        return LocalStats(
            **{
                f.name: getattr(self, f.name) - getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )


class LlamaRunner:
    """One llama.cpp instance per model file and settings in the process, used in turn.

    With `kv_cache_bytes`, the state after each call is kept (`PrefixStates`) and a later
    call whose prompt shares a longer prefix with a kept state than with what the context
    holds starts from that state. llama-cpp-python's own `LlamaRAMCache` is not used: every
    state it saves also copies up to 512 rows of logits (n_batch by vocabulary floats: 311 MB
    for Qwen's 152k-token vocabulary) that its byte budget does not count.
    """

    def __init__(
        self, path: Path, n_ctx: int, n_threads: int | None, kv_cache_bytes: int = 0
    ) -> None:
        try:
            import llama_cpp
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
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
        self.threads = threads
        self.lock = threading.Lock()
        self._llama_cpp = llama_cpp
        self._ctx = self.llama._ctx.ctx
        # llama.cpp asks this between compute steps; True makes llama_decode give up, which
        # stops a generation whose caller went away (a timeout or a cancelled run) within
        # milliseconds. A Python exception raised in a logits processor would not: it runs in
        # a C callback that swallows it.
        self._current: threading.Event | None = None
        self._abort_hook = llama_cpp.ggml_abort_callback(self._should_abort)
        llama_cpp.llama_set_abort_callback(self._ctx, self._abort_hook, None)
        # The prompt's tokens, to look a saved state up before the call: rendered by a
        # formatter built as llama-cpp-python builds the one it uses for the GGUF's own chat
        # template. Were they ever to differ, a lookup would only miss: llama.cpp still
        # matches the real prompt against the restored tokens and evaluates the rest.
        template = self.llama.metadata.get("tokenizer.chat_template")
        self._formatter: Any = None
        if template and self.llama.chat_format == "chat_template.default":
            eos, bos = self.llama.token_eos(), self.llama.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=self._token_text(eos),
                bos_token=self._token_text(bos),
                stop_token_ids=[eos],
            )
        self.states = PrefixStates(kv_cache_bytes) if kv_cache_bytes > 0 else None
        self.floor = PrefixFloor()
        self.stats = LocalStats()
        logger.info("local model %s loaded in %.2fs", path.name, time.monotonic() - started)

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llama.detokenize([token], special=True).decode("utf-8", errors="ignore")

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

    def prompt_tokens(self, messages: list[dict[str, str]]) -> tuple[int, ...] | None:
        """The tokens of the chat prompt for `messages` (None without the GGUF's template)."""
        if self._formatter is None:
            return None
        rendered = self._formatter(messages=messages)
        return tuple(
            self.llama.tokenize(
                rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
            )
        )

    def _held(self) -> tuple[int, ...]:
        return tuple(self.llama.input_ids[: self.llama.n_tokens].tolist())

    def _restore(self, prompt: tuple[int, ...]) -> bool:
        """Start from the kept state that shares most of `prompt`, if it beats the context."""
        assert self.states is not None
        found = self.states.best(prompt)
        if found is None or found[0] < common_prefix(self._held(), prompt) + _MIN_RESTORE_GAIN:
            return False
        length, saved = found
        buffer = (ctypes.c_uint8 * len(saved.state)).from_buffer(saved.state)
        if self._llama_cpp.llama_state_set_data(self._ctx, buffer, len(saved.state)) == 0:
            logger.warning("local model: a saved KV state could not be restored")
            self.llama.n_tokens = 0  # whatever the cache holds now, evaluate it all again
            return False
        self.llama.input_ids[: len(saved.tokens)] = saved.tokens
        # At least the prompt's last token is evaluated again: its logits were not saved.
        # llama.cpp drops the cached entries past this point before it evaluates the rest.
        self.llama.n_tokens = min(length, len(prompt) - 1)
        return True

    def _save(self) -> None:
        assert self.states is not None
        size = int(self._llama_cpp.llama_state_get_size(self._ctx))
        state = bytearray(size)
        buffer = (ctypes.c_uint8 * size).from_buffer(state)
        written = int(self._llama_cpp.llama_state_get_data(self._ctx, buffer, size))
        del buffer  # a bytearray cannot shrink while a ctypes view exports it
        if written < size:
            del state[written:]
        self.states.put(self._held(), state)

    def complete(self, request: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        """Run one chat completion (blocking; call from a worker thread). Setting `abort`
        stops it with `Aborted`. The reply's usage carries `prompt_tokens_evaluated`."""
        with self.lock:
            if abort.is_set():
                raise Aborted
            messages = self.fit(request.pop("messages"), request["max_tokens"])
            started = time.monotonic()
            prompt = self.prompt_tokens(messages)
            floor = self.floor.floor(prompt) if prompt is not None else None
            restored = (
                self.states is not None
                and prompt is not None
                and len(prompt) > 1
                and self._restore(prompt)
            )
            before = self._llama_cpp.llama_perf_context(self._ctx)
            self._current = abort
            try:
                result: dict[str, Any] = self.llama.create_chat_completion(  # type: ignore[assignment]
                    messages=messages,  # type: ignore[arg-type]
                    **request,
                )
            except RuntimeError as e:
                if abort.is_set():
                    raise Aborted from e
                raise
            finally:
                self._current = None
            after = self._llama_cpp.llama_perf_context(self._ctx)
            if self.states is not None:
                self._save()
            self.floor.held(self._held())
            elapsed = time.monotonic() - started
            usage = result.setdefault("usage", {})
            evaluated = after.n_p_eval - _floor_free(before.n_p_eval)
            usage["prompt_tokens_evaluated"] = evaluated
            self.stats += LocalStats(
                calls=1,
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                prompt_evaluated=evaluated,
                completion_tokens=int(usage.get("completion_tokens", 0)),
                seconds=elapsed,
                prompt_seconds=(after.t_p_eval_ms - before.t_p_eval_ms) / 1000,
                restores=int(restored),
                prompt_floor=int(usage.get("prompt_tokens", 0)) if floor is None else floor,
            )
            logger.debug(
                "local completion: %s prompt tokens (%d evaluated%s) + %s output in %.2fs",
                usage.get("prompt_tokens"),
                evaluated,
                ", from a saved state" if restored else "",
                usage.get("completion_tokens"),
                elapsed,
            )
            return result


def _floor_free(n_p_eval: int) -> int:
    """llama.cpp reports its prompt-token counter as at least 1; it counts only batches of two
    or more tokens (a one-token batch counts as generation), so a 1 is really 0."""
    return 0 if n_p_eval == 1 else n_p_eval


_engines: dict[tuple[str, int, int | None, int], LlamaRunner] = {}
_engines_lock = threading.Lock()


def runner(path: Path, n_ctx: int, n_threads: int | None, kv_cache_bytes: int = 0) -> LlamaRunner:
    key = (str(path), n_ctx, n_threads, kv_cache_bytes)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = LlamaRunner(path, n_ctx, n_threads, kv_cache_bytes)
        return _engines[key]


def local_stats() -> LocalStats:
    """Totals over every local engine of the process."""
    total = LocalStats()
    with _engines_lock:
        for engine in _engines.values():
            total += engine.stats
    return total
