"""The exact McNemar test on counts computed by hand."""

from __future__ import annotations

import pytest

from bench.stats import mcnemar_exact


def test_the_p_value_is_twice_the_binomial_tail_of_the_smaller_count() -> None:
    # 7 discordant questions, 1 against 6: P(X <= 1) = (C(7,0) + C(7,1)) / 2^7 = 8/128.
    assert mcnemar_exact(1, 6) == pytest.approx(2 * 8 / 128)
    # 5 against none: 2 * 1/32.
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    # 10 against 2: 2 * (1 + 12 + 66) / 4096.
    assert mcnemar_exact(10, 2) == pytest.approx(158 / 4096)


def test_the_test_is_symmetric_in_its_two_counts() -> None:
    assert mcnemar_exact(6, 1) == mcnemar_exact(1, 6)


def test_an_even_split_or_no_discordant_question_gives_one() -> None:
    # 3 against 3: twice the tail (42/64) is over 1, and a p-value is at most 1.
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)
