"""Which KV entries a llama.cpp call may take over from earlier calls, and the saved states
that hold them, within a byte budget.

The engine's calls share long prompt prefixes (system prompt, task, the path so far; children
share their parent's), but llama.cpp keeps only the last call's tokens, so any other call in
between — a sibling branch, another role — makes the next one evaluate its whole prompt again.
The runner saves its state after each call here and, before a call, restores the saved state
sharing the most with the prompt when that beats what the context holds.

Reuse is exact: a reply is the same as if the prompt had been evaluated whole. The KV entry of
a token depends on the shape of the batch it was computed in (ggml's matrix products add in
another order for another batch size), so only entries computed as a fresh evaluation computes
them are taken over: those of prompt tokens (never of a reply, computed one token at a time),
evaluated in blocks aligned to absolute positions, up to a block boundary (`exact_reuse`).
Pure bookkeeping: a state is opaque bytes, and this module knows nothing of llama.cpp.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading tokens `a` and `b` share. A binary search over slice comparisons (done
    in C): prompts run to thousands of tokens and are compared with every kept state."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while high - low > 1:  # a[:low] == b[:low] and a[:high] != b[:high]
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


def exact_reuse(shared: int, prompt_len: int, block: int) -> int:
    """How many leading tokens of a prompt of `prompt_len` tokens may be taken from a KV cache
    holding `shared` of them, as evaluated prompt tokens in `block`-sized batches from position
    0: the shared part floored to a block boundary, so that the rest is evaluated in the same
    batches as a fresh evaluation would use, leaving at least the last token, whose logits
    the reply starts from."""
    return max(0, min(shared, prompt_len - 1)) // block * block


def reusable(prompt_len: int, block: int) -> int:
    """How many leading tokens of an evaluated prompt a later call may take over: its full
    blocks (the last, partial one was a shorter batch than a longer prompt would use)."""
    return prompt_len // block * block


@dataclass(frozen=True)
class PromptShare:
    """How much of one prompt the calls before it held: what each reuse scheme would have
    spared, to be compared on the same sequence of calls. `*_held` counts the earlier call's
    prompt and reply (what llama.cpp's context holds after it), `*_prompt` its prompt only;
    `last_*` the previous call's, `any_*` the best of the earlier calls kept (`PromptLedger`)."""

    tokens: int
    last_held: int = 0
    last_prompt: int = 0
    any_held: int = 0
    any_prompt: int = 0

    def evaluated(self, block: int | None, *, saved: bool) -> int:
        """The tokens evaluated with exact reuse in blocks of `block` (None: unrestricted
        reuse of anything held, as llama-cpp-python does by itself), from the previous call
        only or, `saved`, from any earlier call's saved state."""
        if block is None:
            shared = self.any_held if saved else self.last_held
            return self.tokens - max(0, min(shared, self.tokens - 1))
        shared = self.any_prompt if saved else self.last_prompt
        return self.tokens - exact_reuse(shared, self.tokens, block)


def evaluated(shares: Iterable[PromptShare], block: int | None, *, saved: bool) -> int:
    """Prompt tokens a sequence of calls evaluates under one reuse scheme (`PromptShare`)."""
    return sum(share.evaluated(block, saved=saved) for share in shares)


@dataclass(frozen=True)
class Saved:
    """One saved state and the tokens in its KV cache, in order."""

    tokens: tuple[int, ...]
    state: bytearray


class PrefixStates:
    """States by the tokens a later call may take over from them (`reusable`), least
    recently used dropped first past `budget_bytes`.

    A state whose tokens are a prefix of another's is dropped: the longer one serves every
    prompt the shorter one could (the entries of a block depend only on the tokens up to its
    end, and every state computed them alike).
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._saved: OrderedDict[tuple[int, ...], Saved] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._saved)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def best(self, prompt: Sequence[int]) -> tuple[int, Saved] | None:
        """The saved state sharing the longest prefix with `prompt`, and that length; `None`
        when none shares a token. A hit counts as a use for the eviction order."""
        wanted = tuple(prompt)
        found: tuple[int, Saved] | None = None
        for saved in self._saved.values():
            length = common_prefix(saved.tokens, wanted)
            if length and (found is None or length > found[0]):
                found = (length, saved)
        if found is not None:
            self._saved.move_to_end(found[1].tokens)
        return found

    def put(self, tokens: Sequence[int], state: bytearray) -> None:
        """Keep `state` (holding `tokens`), unless a kept one already covers it or it alone
        is over the budget."""
        key = tuple(tokens)
        if not key or len(state) > self.budget_bytes:
            return
        for kept in list(self._saved):
            if len(kept) >= len(key) and kept[: len(key)] == key:
                self._saved.move_to_end(kept)
                return  # a longer state covers this one
            if kept == key[: len(kept)]:
                self._drop(kept)
        self._saved[key] = Saved(key, state)
        self._bytes += len(state)
        while self._bytes > self.budget_bytes:
            self._drop(next(iter(self._saved)))

    def clear(self) -> None:
        self._saved.clear()
        self._bytes = 0

    def _drop(self, key: tuple[int, ...]) -> None:
        self._bytes -= len(self._saved.pop(key).state)


class PromptLedger:
    """The last `keep` calls' prompts and what their context held after them, to say for each
    new prompt how much of it earlier calls held (`PromptShare`), whatever states were kept:
    the measure reuse schemes are compared by on one sequence of calls. The earlier call a
    prompt shares most with counts as used again (it is forgotten last, as a saved state in
    use is dropped last)."""

    def __init__(self, keep: int = 64) -> None:
        self._calls: deque[tuple[tuple[int, ...], tuple[int, ...]]] = deque(maxlen=keep)
        self._last: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())

    def share(self, prompt: Sequence[int]) -> PromptShare:
        """How much of `prompt` the calls recorded so far held."""
        wanted = tuple(prompt)
        any_held = any_prompt = 0
        best = None
        for call in self._calls:
            held = common_prefix(call[1], wanted)
            any_prompt = max(any_prompt, common_prefix(call[0], wanted))
            if held > any_held:
                any_held, best = held, call
        if best is not None:
            self._calls.remove(best)
            self._calls.append(best)
        return PromptShare(
            tokens=len(wanted),
            last_held=common_prefix(self._last[1], wanted),
            last_prompt=common_prefix(self._last[0], wanted),
            any_held=any_held,
            any_prompt=any_prompt,
        )

    def record(self, prompt: Sequence[int], held: Sequence[int]) -> None:
        """A call ended: its prompt, and what the context then held (the prompt and the
        reply's tokens, all but the last one evaluated)."""
        self._last = (tuple(prompt), tuple(held))
        self._calls.append(self._last)
