"""The `gemini_sim` fixture: start Gemini REST simulators for a test and point the SDK at them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.gemini_sim import GeminiSimulator, Script, SimulatorMaker


@pytest.fixture
def gemini_sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatorMaker]:
    """Start a simulator (same arguments as `GeminiSimulator`) and point the google-genai SDK
    at it; every one started is stopped after the test. Build models after starting it: the
    SDK reads `GOOGLE_GEMINI_BASE_URL` when a client is created."""
    started: list[GeminiSimulator] = []

    def start(script: Script, **kwargs: Any) -> GeminiSimulator:
        sim = GeminiSimulator(script, **kwargs).start()
        started.append(sim)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", sim.base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "simulated-key")
        return sim

    yield start
    for sim in started:
        sim.stop()
