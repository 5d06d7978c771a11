"""How one model call decodes: greedily, or sampled with a seed of its own.

A run's answer must be a function of its question, parameters and seed, never of timing. The
engine decides each call's decoding from what the call *is* (the run's seed, the role, the node,
the attempt), never from the order in which calls reach the model, and puts it in the call's
`RunnableConfig` metadata under `DECODING_KEY`. Metadata is inherited by every run inside the
call (the executor's agent loop, a structured-output chain), so it reaches the chat model's
`_agenerate` through its run manager, where the call policy (`calls.policy`) turns it into the
provider's own per-call options: `temperature`, and `seed` where the provider takes one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

DECODING_KEY = "plantree_decoding"
"""The metadata key of a call's decoding (a `Decoding.as_metadata()` mapping)."""

SEED_BITS = 31
"""Seeds are non-negative 31-bit integers: every provider and llama.cpp take one that size."""


@dataclass(frozen=True, slots=True)
class Decoding:
    """`greedy`: temperature 0 (the model's most likely tokens); otherwise `temperature`, or
    the model's own where that is None. `seed` makes a sampled reply repeatable where the
    provider honours it."""

    greedy: bool
    seed: int
    temperature: float | None = None

    def as_metadata(self) -> dict[str, Any]:
        found: dict[str, Any] = {"greedy": self.greedy, "seed": self.seed}
        if self.temperature is not None:
            found["temperature"] = self.temperature
        return found

    def options(self, *, seeded: bool) -> dict[str, Any]:
        """The per-call keyword options a chat model's `_agenerate` takes for this decoding:
        `temperature` 0 when greedy (else the decoding's own, if it has one), and the seed
        when the model takes one (`seeded`)."""
        options: dict[str, Any] = {}
        if self.greedy:
            options["temperature"] = 0.0
        elif self.temperature is not None:
            options["temperature"] = self.temperature
        if seeded:
            options["seed"] = self.seed
        return options


def derive_seed(run_seed: int, *parts: object) -> int:
    """A seed for one call from the run's seed and what identifies the call (role, node id,
    attempt, …): the same parts always give the same seed, in any process, and distinct parts
    give unrelated seeds (SHA-256, not Python's salted `hash`)."""
    text = "\x1f".join([str(run_seed), *(str(part) for part in parts)])
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % (1 << SEED_BITS)


def decoding_of(metadata: Mapping[str, Any] | None) -> Decoding | None:
    """The decoding a call's metadata carries, or None (the model's own settings apply)."""
    raw = (metadata or {}).get(DECODING_KEY)
    if not isinstance(raw, Mapping):
        return None
    try:
        temperature = raw.get("temperature")
        return Decoding(
            greedy=bool(raw["greedy"]),
            seed=int(raw["seed"]),
            temperature=None if temperature is None else float(temperature),
        )
    except (KeyError, TypeError, ValueError):
        return None


def for_attempt(config: RunnableConfig, attempt: int) -> RunnableConfig:
    """`config` for the `attempt`-th try of one call (from 1): the first keeps its decoding; a
    retry samples, with a seed of its own derived from the first's (a greedy reply that failed
    would mostly fail again the same way), so a corrective retry is repeatable too."""
    decoding = decoding_of(config.get("metadata"))
    if decoding is None or attempt <= 1:
        return config
    again = Decoding(False, derive_seed(decoding.seed, "attempt", attempt), decoding.temperature)
    metadata = {**(config.get("metadata") or {}), DECODING_KEY: again.as_metadata()}
    return RunnableConfig(**{**config, "metadata": metadata})
