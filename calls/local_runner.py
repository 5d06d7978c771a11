"""The llama.cpp runner of the offline models: loads a GGUF (`calls.local_catalog` finds it)
once per file and settings in the process, and runs one completion at a time, abortable when
nobody waits for it any more, reusing KV entries across calls that share a prompt prefix
(`calls.local_kv`) only where that leaves the reply exactly as a fresh evaluation gives it, and
recording the log-probability the model gave each token it wrote (`calls.local_confidence`)."""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calls.local_catalog import LocalModelUnavailable
from calls.local_confidence import TOKEN_CONFIDENCE, TokenLogprobs
from calls.local_kv import (
    PrefixStates,
    PromptLedger,
    PromptShare,
    Saved,
    common_prefix,
    exact_reuse,
    reusable,
)

logger = logging.getLogger(__name__)

_TEMPLATE_TOKENS = 8  # chat-template tokens around each message
# Prompts are evaluated in batches of this many tokens from position 0, and KV entries are
# reused only up to a multiple of it (`calls.local_kv.exact_reuse`), so a reused prefix gives
# up half a block on average. Measured (docs/models.md): the 1.5B Qwen evaluates prompts 3 %
# slower in batches of 64 than of 128; on the same engine calls exact reuse evaluated 3-4 %
# more prompt tokens than unrestricted reuse in blocks of 64, 8-9 % in 128, 16-20 % in 256.
BLOCK = 64
# llama.cpp's LLAMA_DEFAULT_SEED, which asks it to pick a seed at random.
_RANDOM_SEED = 0xFFFFFFFF


def sampling_seed(seed: int | None) -> int:
    """The seed a call samples with: `seed` brought into llama.cpp's 32 bits, short of the one
    value that would make it pick a random seed; a fresh random one for None. Always explicit:
    llama-cpp-python, given none, derives the next seed from the last call's."""
    if seed is None:
        return secrets.randbelow(_RANDOM_SEED)
    return seed % _RANDOM_SEED


class Aborted(Exception):
    """A generation was stopped because nobody waits for it any more."""


@dataclass
class LocalStats:
    """What one engine has done: for logs and for measuring speed.

    `prompt_tokens` counts every prompt token of every call; `prompt_evaluated` only those
    llama.cpp computed (the rest were taken over from the context or a saved state). Two
    measures of the same calls under the unrestricted reuse llama-cpp-python does by itself
    (`calls.local_kv.PromptShare`), which takes over reply tokens and prefixes of any length
    and so can change a reply: `prompt_unrestricted`, what it evaluates from the last call's
    context alone, and `prompt_floor`, what it would with every earlier call's state at hand,
    the least any prefix reuse could evaluate.
    """

    calls: int = 0
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prompt_seconds: float = 0.0
    restores: int = 0  # calls that started from a saved state
    prompt_unrestricted: int = 0
    prompt_floor: int = 0

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

    A reply depends only on its prompt, seed and sampling settings, not on the calls before
    it. Prompts are evaluated in batches of `BLOCK` tokens aligned to position 0, and a call
    takes over the KV entries of an earlier prompt's full blocks only (`exact_reuse`), which a
    fresh evaluation would compute in the very same batches: after each call the context is
    cut back to its prompt's full blocks, and with `kv_cache_bytes` that state is kept
    (`PrefixStates`) for a later call whose prompt shares more with it than with what the
    context holds. llama-cpp-python's own `LlamaRAMCache` is not used: every state it saves
    also copies up to 512 rows of logits (n_batch by vocabulary floats: 311 MB for Qwen's
    152k-token vocabulary) that its byte budget does not count, and it restores whatever it
    holds, reply tokens included.
    """

    def __init__(
        self,
        path: Path,
        n_ctx: int,
        n_threads: int | None,
        kv_cache_bytes: int = 0,
        *,
        confidence: bool = True,
    ) -> None:
        try:
            import llama_cpp
            from llama_cpp import Llama, LogitsProcessorList
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
            # llama-cpp-python's `eval` cuts a prompt into batches of n_batch counted from
            # where evaluation starts, and llama.cpp splits those into n_ubatch: both one block.
            n_batch=BLOCK,
            n_ubatch=BLOCK,
            verbose=False,
            seed=0,
        )
        self.n_ctx = n_ctx
        self.block = self.llama.n_batch
        # Each reply's token log-probabilities (`calls.local_confidence`), recorded by a
        # logits processor that leaves the logits as they are.
        self.confidence = confidence
        self._processors = LogitsProcessorList
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
        # The prompt's tokens, to decide what to reuse before the call: rendered by a
        # formatter built as llama-cpp-python builds the one it uses for the GGUF's own chat
        # template. Without it nothing is reused; were the two ever to differ, llama.cpp could
        # take over a prefix cut off a block boundary, so the runner stops reusing (`_settle`).
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
        self._reuse = self._formatter is not None
        # The prompt tokens whose KV entries the context holds for a later call: always the
        # first `llama.n_tokens` of `llama.input_ids` between calls.
        self._held: tuple[int, ...] = ()
        self.states = PrefixStates(kv_cache_bytes) if kv_cache_bytes > 0 else None
        self.ledger = PromptLedger()
        # Each call's `PromptShare`, the latest last: what other reuse schemes would have
        # evaluated on the same calls (bench/local_prefix.py compares them).
        self.shares: deque[PromptShare] = deque(maxlen=1024)
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

    def _prepare(self, prompt: tuple[int, ...] | None) -> tuple[int, bool]:
        """Leave the context holding only what `prompt` may take over: (tokens, whether from
        a saved state). llama-cpp-python's `generate` matches the prompt against the first
        `n_tokens` of `input_ids` and evaluates the rest, so it cannot take over more."""
        if prompt is None or not self._reuse:
            self._forget()
            return 0, False
        reuse = exact_reuse(common_prefix(self._held, prompt), len(prompt), self.block)
        found = self.states.best(prompt) if self.states is not None else None
        restored = False
        if found is not None and exact_reuse(found[0], len(prompt), self.block) > reuse:
            if not self._restore(found[1]):
                return 0, False
            reuse, restored = exact_reuse(found[0], len(prompt), self.block), True
        self.llama.n_tokens = reuse
        return reuse, restored

    def _restore(self, saved: Saved) -> bool:
        buffer = (ctypes.c_uint8 * len(saved.state)).from_buffer(saved.state)
        if self._llama_cpp.llama_state_set_data(self._ctx, buffer, len(saved.state)) == 0:
            logger.warning("local model: a saved KV state could not be restored")
            self._forget()  # whatever the cache holds now, evaluate it all again
            return False
        self.llama.input_ids[: len(saved.tokens)] = saved.tokens
        self._held = saved.tokens
        return True

    def _forget(self) -> None:
        """Reuse nothing in the next call: llama-cpp-python then clears the cache itself."""
        self.llama.n_tokens = 0
        self._held = ()

    def _settle(self, prompt: tuple[int, ...] | None, evaluated: tuple[int, ...]) -> None:
        """After a call that evaluated the prompt `evaluated`: keep only its full blocks in
        the context (its reply and its last, partial block were not computed as a longer
        prompt's fresh evaluation computes them), and save that state."""
        if prompt is not None and prompt != evaluated and self._reuse:
            logger.warning(
                "local model: llama.cpp's prompt differs from the one rendered to plan KV "
                "reuse; reuse is off for this model from now on"
            )
            self._reuse = False
        keep = reusable(len(evaluated), self.block) if self._reuse else 0
        if keep == 0 or not self.llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            self._forget()
            return
        self.llama.n_tokens = keep
        self._held = evaluated[:keep]
        if self.states is not None:
            self._save()

    def _save(self) -> None:
        assert self.states is not None
        size = int(self._llama_cpp.llama_state_get_size(self._ctx))
        state = bytearray(size)
        buffer = (ctypes.c_uint8 * size).from_buffer(state)
        written = int(self._llama_cpp.llama_state_get_data(self._ctx, buffer, size))
        del buffer  # a bytearray cannot shrink while a ctypes view exports it
        if written < size:
            del state[written:]
        self.states.put(self._held, state)

    def complete(self, request: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        """Run one chat completion (blocking; call from a worker thread). Setting `abort`
        stops it with `Aborted`. The reply's usage carries `prompt_tokens_evaluated`, and with
        `confidence` the reply its `token_confidence` (`calls.local_confidence`) when a token
        was counted.

        The reply depends on the request alone. llama-cpp-python builds each call's sampler
        afresh from the request: its penalties count this reply's tokens only, its grammar
        starts over, and its random draws come from the call's seed (`sampling_seed`); with
        temperature 0 it is greedy."""
        with self.lock:
            if abort.is_set():
                raise Aborted
            messages = self.fit(request.pop("messages"), request["max_tokens"])
            request["seed"] = sampling_seed(request.get("seed"))
            started = time.monotonic()
            prompt = self.prompt_tokens(messages)
            reused, restored = self._prepare(prompt)
            recorder = TokenLogprobs(self.llama.n_vocab()) if self.confidence else None
            before = self._llama_cpp.llama_perf_context(self._ctx)
            self._current = abort
            try:
                result: dict[str, Any] = self.llama.create_chat_completion(  # type: ignore[assignment]
                    messages=messages,  # type: ignore[arg-type]
                    logits_processor=None if recorder is None else self._processors([recorder]),
                    **request,
                )
            except BaseException as e:
                self._forget()  # a call cut short leaves the cache in no known state
                if isinstance(e, RuntimeError) and abort.is_set():
                    raise Aborted from e
                raise
            finally:
                self._current = None
            after = self._llama_cpp.llama_perf_context(self._ctx)
            usage = result.setdefault("usage", {})
            n_prompt = int(usage.get("prompt_tokens", 0))
            # The prompt llama.cpp evaluated, and what the context held after the reply (all
            # of it but the last token), before `_settle` cuts it back.
            evaluated_prompt = tuple(self.llama.input_ids[:n_prompt].tolist())
            held = tuple(self.llama.input_ids[: self.llama.n_tokens].tolist())
            # llama-cpp-python took over the part of the first `reused` tokens this prompt
            # shares, and evaluates the last token again in any case.
            taken = common_prefix(prompt[:reused] if prompt else (), evaluated_prompt)
            evaluated = n_prompt - min(taken, max(0, n_prompt - 1))
            self._settle(prompt, evaluated_prompt)
            share = self.ledger.share(evaluated_prompt)
            self.ledger.record(evaluated_prompt, held)
            self.shares.append(share)
            elapsed = time.monotonic() - started
            usage["prompt_tokens_evaluated"] = evaluated
            confidence = recorder.summary() if recorder is not None else None
            if confidence is not None:
                result[TOKEN_CONFIDENCE] = confidence.as_metadata()
            self.stats += LocalStats(
                calls=1,
                prompt_tokens=n_prompt,
                prompt_evaluated=evaluated,
                completion_tokens=int(usage.get("completion_tokens", 0)),
                seconds=elapsed,
                prompt_seconds=(after.t_p_eval_ms - before.t_p_eval_ms) / 1000,
                restores=int(restored),
                prompt_unrestricted=share.evaluated(None, saved=False),
                prompt_floor=share.evaluated(None, saved=True),
            )
            logger.debug(
                "local completion: %d prompt tokens (%d evaluated%s) + %s output in %.2fs",
                n_prompt,
                evaluated,
                ", from a saved state" if restored else "",
                usage.get("completion_tokens"),
                elapsed,
            )
            return result


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
