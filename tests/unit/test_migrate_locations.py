"""Where `lats migrate` reads and writes: locations and the identities that tell two apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.store.migrate import LocationError, locations, parse_location


def test_a_postgres_identity_names_the_database_but_never_the_password() -> None:
    at = parse_location("postgresql://lats:s3cret@db:6543/runs?sslmode=require")

    assert at.identity == "postgresql://lats@db:6543/runs"


def test_a_data_directory_is_the_same_store_however_it_is_spelled(tmp_path: Path) -> None:
    with pytest.raises(LocationError, match="the same store"):
        locations(str(tmp_path / "data"), str(tmp_path / "x" / ".." / "data"))


@pytest.mark.parametrize("text", ["mysql://db/x", "", "postgresql://db/x?bad"])
def test_what_names_no_store_is_refused(text: str) -> None:
    with pytest.raises(LocationError):
        parse_location(text)
