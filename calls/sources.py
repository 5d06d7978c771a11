"""A run's source filter for search results: the domains it may see or must not see.

The engine sets `SOURCE_FILTER` for each executor job (a context variable, like the result
cache switch); a search tool reads it where it turns results into the model's text, so a
result outside the filter is never shown. Hosts match a domain and its subdomains.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlsplit


def _normalised(domains: Iterable[str]) -> tuple[str, ...]:
    cleaned = {domain.strip().lower().strip(".") for domain in domains}
    return tuple(sorted(domain for domain in cleaned if domain))


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


@dataclass(frozen=True, slots=True)
class SourceFilter:
    """Domains a result's host must be within (`include`, empty: any) and must not be within
    (`exclude`, which wins)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> SourceFilter | None:
        """The filter for these domain lists; None when both are empty (nothing filtered)."""
        made = cls(_normalised(include), _normalised(exclude))
        return made if made.include or made.exclude else None

    def allows(self, url: str) -> bool:
        """Whether a result at `url` may be shown: its host within an included domain (when
        any is given) and within no excluded one. A URL without a host is never shown."""
        try:
            host = (urlsplit(url).hostname or "").lower().rstrip(".")
        except ValueError:  # a malformed port or bracket
            return False
        if not host:
            return False
        if any(_within(host, domain) for domain in self.exclude):
            return False
        return not self.include or any(_within(host, domain) for domain in self.include)

    def key(self) -> str:
        """A stable text of the filter, for cache keys: filtered results are cached apart."""
        return "include=" + ",".join(self.include) + ";exclude=" + ",".join(self.exclude)


SOURCE_FILTER: ContextVar[SourceFilter | None] = ContextVar("source_filter", default=None)
"""The source filter of the run whose job is calling tools (None: every source)."""
