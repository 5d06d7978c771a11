"""Saved llama.cpp states keyed by the tokens they hold, within a byte budget.

The engine's calls share long prompt prefixes (system prompt, task, the path so far; children
share their parent's), but llama.cpp keeps only the last call's tokens, so any other call in
between — a sibling branch, another role — makes the next one evaluate its whole prompt again.
The runner saves its state after each call here and, before a call, restores the saved state
with the longest common prefix when that beats what the context holds. Pure bookkeeping: a
state is opaque bytes, and this module knows nothing of llama.cpp.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
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


@dataclass(frozen=True)
class Saved:
    """One saved state and the tokens in its KV cache, in order."""

    tokens: tuple[int, ...]
    state: bytearray


class PrefixStates:
    """States by token sequence, least recently used dropped first past `budget_bytes`.

    A state whose tokens are a prefix of another's is dropped: the longer one serves every
    prompt the shorter one could (a token's KV entries depend only on the tokens before it).
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


class PrefixFloor:
    """What no prefix reuse could spare: for each prompt, the tokens past the longest prefix
    it shares with what an earlier call held (its prompt and its reply, the last `keep`
    calls'), whatever states were kept. The measure a cache's `prompt_evaluated` is held
    against; counted like llama.cpp's counter (the last token is always computed again, and a
    lone token counts as generation, so as 0)."""

    def __init__(self, keep: int = 64) -> None:
        self._held: deque[tuple[int, ...]] = deque(maxlen=keep)

    def floor(self, prompt: Sequence[int]) -> int:
        """The tokens of `prompt` that any reuse of the earlier calls' states would still
        evaluate. The sequence it shares most with counts as used again (it is forgotten last,
        as a saved state in use is dropped last)."""
        wanted = tuple(prompt)
        if not wanted:
            return 0
        shared, best = 0, None
        for held in self._held:
            length = common_prefix(held, wanted)
            if length > shared:
                shared, best = length, held
        if best is not None:
            self._held.remove(best)
            self._held.append(best)
        left = len(wanted) - min(shared, len(wanted) - 1)
        return 0 if left == 1 else left

    def held(self, tokens: Sequence[int]) -> None:
        """A call ended holding `tokens` (its prompt, then its reply)."""
        self._held.append(tuple(tokens))
