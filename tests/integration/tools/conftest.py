"""The tool tests' fixtures live in tests/support/tool_fixtures.py (shared by both tiers)."""

from collections.abc import Iterator

import pytest
import responses

from tests.support.tool_fixtures import *  # noqa: F403


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    """HTTP answered by the test (`responses`): nothing reaches the network."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock
