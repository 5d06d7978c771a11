"""A run's source filter: which result hosts it shows (`calls/sources.py`)."""

from __future__ import annotations

import pytest

from calls.sources import SourceFilter


def test_no_domains_is_no_filter() -> None:
    assert SourceFilter.of([], []) is None


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://blocked.org/a", False),
        ("https://news.blocked.org/a", False),
        ("https://BLOCKED.org./a", False),
        ("https://notblocked.org/a", True),
        ("https://example.com/a", True),
        ("not a url", False),
    ],
)
def test_an_excluded_domain_hides_itself_and_its_subdomains(url: str, shown: bool) -> None:
    sources = SourceFilter.of(exclude=["Blocked.org"])
    assert sources is not None
    assert sources.allows(url) is shown


def test_included_domains_show_only_themselves_and_exclusion_wins() -> None:
    sources = SourceFilter.of(include=["arxiv.org", "example.com"], exclude=["bad.example.com"])
    assert sources is not None

    assert sources.allows("https://export.arxiv.org/abs/1")
    assert sources.allows("http://example.com/")
    assert not sources.allows("https://bad.example.com/x")
    assert not sources.allows("https://wikipedia.org/")


def test_the_key_is_the_same_for_the_same_domains_in_any_order_or_case() -> None:
    one = SourceFilter.of(include=["b.org", "A.org"])
    two = SourceFilter.of(include=["a.org", "b.org"])
    assert one is not None
    assert two is not None
    assert one.key() == two.key()
