"""The tool tests' fixtures live in tests/support/tool_fixtures.py (shared by both tiers)."""

from tests.support.tool_fixtures import *  # noqa: F403
