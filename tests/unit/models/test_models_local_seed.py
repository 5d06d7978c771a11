"""The seed a local call samples with (`calls.local_runner.sampling_seed`): always explicit,
within llama.cpp's 32 bits and never the value that makes llama.cpp pick one at random."""

from __future__ import annotations

import pytest

from calls.local_runner import sampling_seed

RANDOM = 0xFFFFFFFF  # llama.cpp's LLAMA_DEFAULT_SEED


@pytest.mark.parametrize(
    ("seed", "expected"),
    [(0, 0), (41, 41), (RANDOM - 1, RANDOM - 1), (RANDOM, 0), (RANDOM + 5, 5), (-1, RANDOM - 1)],
)
def test_a_given_seed_is_kept_within_llama_cpps_range(seed: int, expected: int) -> None:
    assert sampling_seed(seed) == expected


def test_no_seed_draws_a_fresh_one_each_call() -> None:
    drawn = {sampling_seed(None) for _ in range(8)}

    assert len(drawn) > 1
    assert all(0 <= seed < RANDOM for seed in drawn)
