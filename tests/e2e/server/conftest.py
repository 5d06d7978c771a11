"""Fixtures of the server-process tests."""

from tests.integration.app.conftest import fresh_postgres_url

__all__ = ["fresh_postgres_url"]
