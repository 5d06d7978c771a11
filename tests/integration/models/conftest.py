"""Fixtures for model-layer tests against the Gemini simulator."""

from tests.support.gemini_fixture import gemini_sim

__all__ = ["gemini_sim"]
