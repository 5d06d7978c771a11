"""A call's decoding: seeds derived from what the call is, never from when it runs."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from calls.decoding import DECODING_KEY, Decoding, decoding_of, derive_seed, for_attempt


def test_a_seed_is_a_function_of_its_parts_alone() -> None:
    first = derive_seed(7, "replanner", "n1.2", "")
    again = derive_seed(7, "replanner", "n1.2", "")

    assert first == again
    assert 0 <= first < 2**31
    # Another run seed, role or node gives another seed.
    others = {
        derive_seed(8, "replanner", "n1.2", ""),
        derive_seed(7, "executor", "n1.2", ""),
        derive_seed(7, "replanner", "n1.3", ""),
    }
    assert len({first, *others}) == 4


def test_a_known_seed_is_the_same_in_every_process() -> None:
    # SHA-256 of "0\x1fexecutor\x1fn1\x1f", its first 8 bytes mod 2**31: no salted `hash`.
    assert derive_seed(0, "executor", "n1", "") == 928197594


def test_greedy_decoding_asks_for_temperature_zero_and_the_seed_only_where_taken() -> None:
    greedy = Decoding(greedy=True, seed=5)
    sampled = Decoding(greedy=False, seed=5)

    assert greedy.options(seeded=True) == {"temperature": 0.0, "seed": 5}
    assert greedy.options(seeded=False) == {"temperature": 0.0}
    assert sampled.options(seeded=True) == {"seed": 5}
    assert sampled.options(seeded=False) == {}


def test_a_sampled_call_may_carry_a_temperature_of_its_own() -> None:
    warm = Decoding(greedy=False, seed=5, temperature=0.7)
    config = RunnableConfig(metadata={DECODING_KEY: warm.as_metadata()})

    assert warm.options(seeded=True) == {"temperature": 0.7, "seed": 5}
    assert Decoding(greedy=True, seed=5, temperature=0.7).options(seeded=False) == {
        "temperature": 0.0
    }
    assert decoding_of(config.get("metadata")) == warm
    assert "temperature" not in Decoding(False, 5).as_metadata()
    # A retry of it samples at the same temperature, with a seed of its own.
    assert decoding_of(for_attempt(config, 2).get("metadata")) == Decoding(
        False, derive_seed(5, "attempt", 2), 0.7
    )


def test_a_retry_samples_with_a_seed_of_its_own() -> None:
    config = RunnableConfig(metadata={DECODING_KEY: Decoding(True, 11).as_metadata(), "x": 1})

    assert for_attempt(config, 1) is config
    retried = decoding_of(for_attempt(config, 2).get("metadata"))

    assert retried == Decoding(False, derive_seed(11, "attempt", 2))
    assert for_attempt(config, 2)["metadata"]["x"] == 1


def test_metadata_without_a_decoding_leaves_the_model_s_own_settings() -> None:
    assert decoding_of(None) is None
    assert decoding_of({"run_id": "r"}) is None
    assert decoding_of({DECODING_KEY: {"greedy": True}}) is None
