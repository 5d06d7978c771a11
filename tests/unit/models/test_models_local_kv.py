"""The bookkeeping of saved llama.cpp states (`calls.local_kv`): the longest shared prefix
wins, a state covered by a longer one is not kept twice, and the byte budget holds; the floor
no reuse could go below counts a prompt's tokens past what any earlier call held."""

from __future__ import annotations

import pytest

from calls.local_kv import PrefixFloor, PrefixStates, common_prefix


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


def test_the_floor_counts_what_no_earlier_call_held() -> None:
    floor = PrefixFloor(keep=2)

    first = floor.floor((1, 2, 3, 4))  # nothing held before: all of it
    floor.held((1, 2, 3, 4, 50, 51))  # its prompt and its reply
    # Shares 4 with the first call: the rest, 2 tokens.
    sibling = floor.floor((1, 2, 3, 4, 8, 9))
    floor.held((1, 2, 3, 4, 8, 9, 60))
    # A prompt wholly held already: only its last token, which counts as generation.
    again = floor.floor((1, 2, 3, 4, 8, 9))
    # Sharing more with the older call, its reply included, than with the newer: the longest.
    older = floor.floor((1, 2, 3, 4, 50, 51, 7, 8))
    # Past `keep`, the sequence used longest ago is forgotten: the second call's.
    floor.held((7,))
    forgotten = floor.floor((1, 2, 3, 4, 8, 9))

    assert (first, sibling, again, older) == (4, 2, 0, 2)
    assert forgotten == 2  # shares only 4 with the first call's, kept
    assert floor.floor(()) == 0


def test_a_sequence_the_floor_uses_is_forgotten_last() -> None:
    floor = PrefixFloor(keep=2)
    floor.held((1, 2, 3, 4))
    floor.held((5, 6, 7, 8))

    floor.floor((1, 2, 3, 9))  # uses the older one: now the newest
    floor.held((10, 11))  # the one forgotten is (5, 6, 7, 8)

    assert floor.floor((1, 2, 3, 4, 5)) == 0  # shares 4 of 5: a lone token is left
    assert floor.floor((5, 6, 7, 8, 9)) == 5
