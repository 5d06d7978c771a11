"""Fixtures for benchmark runs against the Gemini simulator."""

from tests.support.gemini_fixture import gemini_sim

__all__ = ["gemini_sim"]
