"""The bookkeeping of KV reuse (`calls.local_kv`): exact reuse stops on a block boundary short
of the prompt's last token; the longest shared prefix wins, a state covered by a longer one is
not kept twice, and the byte budget holds; the ledger says how much of a prompt earlier calls
held, so reuse schemes can be compared on one sequence of calls."""

from __future__ import annotations

import pytest

from calls.local_kv import (
    PrefixStates,
    PromptLedger,
    PromptShare,
    common_prefix,
    evaluated,
    exact_reuse,
    reusable,
)


def _state(size: int) -> bytearray:
    return bytearray(size)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((), (1, 2), 0),
        ((1, 2, 3), (1, 2, 3), 3),
        ((1, 2, 3), (1, 2), 2),
        ((1, 2, 3, 4, 5, 6, 7), (1, 2, 3, 4, 9, 6, 7), 4),
        ((5,), (6,), 0),
        (tuple(range(1000)), (*range(777), -1), 777),
    ],
)
def test_common_prefix(a: tuple[int, ...], b: tuple[int, ...], expected: int) -> None:
    assert common_prefix(a, b) == expected
    assert common_prefix(b, a) == expected


def test_the_state_sharing_the_longest_prefix_is_found() -> None:
    states = PrefixStates(1000)
    states.put((1, 2, 3, 4), _state(10))
    states.put((1, 2, 7, 8, 9), _state(10))
    states.put((5, 6), _state(10))

    found = states.best((1, 2, 3, 9))

    assert found is not None
    assert found[0] == 3
    assert found[1].tokens == (1, 2, 3, 4)
    assert states.best((9, 9)) is None


def test_a_state_covered_by_a_longer_one_is_dropped() -> None:
    states = PrefixStates(1000)
    states.put((1, 2, 3), _state(10))

    states.put((1, 2, 3, 4, 5), _state(20))
    states.put((1, 2), _state(5))  # covered by the kept one: not kept

    assert len(states) == 1
    assert states.size_bytes == 20


def test_the_least_recently_used_state_goes_first_past_the_budget() -> None:
    states = PrefixStates(30)
    states.put((1,), _state(10))
    states.put((2,), _state(10))
    states.put((3,), _state(10))
    states.best((1, 5))  # (1,) is used: (2,) is now the oldest

    states.put((4,), _state(10))

    assert [states.best((t,)) is not None for t in (1, 2, 3, 4)] == [True, False, True, True]
    assert states.size_bytes == 30


def test_a_state_larger_than_the_budget_is_not_kept() -> None:
    states = PrefixStates(10)

    states.put((1, 2), _state(11))

    assert len(states) == 0


@pytest.mark.parametrize(
    ("shared", "prompt_len", "expected"),
    [
        (0, 10, 0),
        (3, 10, 0),  # less than a block: nothing
        (7, 10, 4),  # floored to the block boundary
        (8, 10, 8),
        (9, 10, 8),
        (10, 10, 8),  # all of it held: still from the block holding the last token
        (8, 8, 4),  # ... a whole block when the prompt ends on a boundary
        (8, 9, 8),
        (50, 10, 8),  # a held sequence longer than the prompt
        (1, 1, 0),
        (0, 0, 0),
    ],
)
def test_exact_reuse_ends_on_a_block_boundary_before_the_last_token(
    shared: int, prompt_len: int, expected: int
) -> None:
    assert exact_reuse(shared, prompt_len, block=4) == expected


@pytest.mark.parametrize(("prompt_len", "expected"), [(0, 0), (3, 0), (4, 4), (11, 8), (12, 12)])
def test_only_an_evaluated_prompts_full_blocks_are_reusable(prompt_len: int, expected: int) -> None:
    assert reusable(prompt_len, block=4) == expected


def test_a_share_counts_what_each_scheme_evaluates() -> None:
    # 20 prompt tokens; the previous call held 13 of them (11 in its prompt, then its reply),
    # some earlier call 17 (15 in its prompt).
    share = PromptShare(tokens=20, last_held=13, last_prompt=11, any_held=17, any_prompt=15)

    assert share.evaluated(None, saved=False) == 7  # llama-cpp-python's own: all it held
    assert share.evaluated(None, saved=True) == 3
    assert share.evaluated(4, saved=False) == 12  # the prompt part, floored to 8
    assert share.evaluated(4, saved=True) == 8  # floored to 12
    assert share.evaluated(8, saved=True) == 12
    assert PromptShare(tokens=5).evaluated(4, saved=True) == 5
    # A prompt held whole still has its last token evaluated.
    assert PromptShare(tokens=6, last_held=6, any_held=6).evaluated(None, saved=False) == 1
    assert evaluated([share, PromptShare(tokens=5)], 4, saved=False) == 17


def test_the_ledger_says_what_the_last_and_any_earlier_call_held() -> None:
    ledger = PromptLedger(keep=2)

    first = ledger.share((1, 2, 3, 4))  # nothing held before
    ledger.record((1, 2, 3, 4), (1, 2, 3, 4, 50, 51))  # its prompt, then its reply
    # Shares its prompt and the start of its reply with the first call.
    reply_follows = ledger.share((1, 2, 3, 4, 50, 9))
    ledger.record((1, 2, 3, 4, 50, 9), (1, 2, 3, 4, 50, 9, 60))
    ledger.record((7, 8), (7, 8, 9))
    # The last call shares nothing; the first one was forgotten past `keep`.
    later = ledger.share((1, 2, 3, 4, 50, 9, 60, 61))

    assert first == PromptShare(tokens=4)
    assert reply_follows == PromptShare(
        tokens=6, last_held=5, last_prompt=4, any_held=5, any_prompt=4
    )
    assert later == PromptShare(tokens=8, any_held=7, any_prompt=6)


def test_a_call_the_ledger_uses_is_forgotten_last() -> None:
    ledger = PromptLedger(keep=2)
    ledger.record((1, 2, 3, 4), (1, 2, 3, 4))
    ledger.record((5, 6, 7, 8), (5, 6, 7, 8))

    ledger.share((1, 2, 3, 9))  # uses the older one: now the newest
    ledger.record((10, 11), (10, 11))  # the one forgotten is (5, 6, 7, 8)

    assert ledger.share((1, 2, 3, 4, 5)).any_prompt == 4
    assert ledger.share((5, 6, 7, 8, 9)).any_prompt == 0
