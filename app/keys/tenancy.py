"""Who is calling: the configured keys, each under a name, and the caller a key identifies.

A run belongs to the name of the key that started it (the key itself is never stored, logged
or exported). A caller sees only its own runs; the admin key sees every run; with no key
configured there is a single user, who sees every run and whose runs belong to nobody.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass

ADMIN = "admin"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Caller:
    """The key behind a request: its name (None for the single user) and whether it is the
    admin key."""

    name: str | None
    admin: bool = False

    @property
    def tenant(self) -> str | None:
        """What the runs this caller starts are stored under."""
        return self.name

    @property
    def sees_all(self) -> bool:
        return self.admin or self.name is None

    @property
    def limited(self) -> bool:
        """Whether the per-key limits apply (a named key that is not the admin key)."""
        return self.name is not None and not self.admin

    @property
    def label(self) -> str:
        """The caller in logs and metric labels."""
        return self.name or "local"

    def may_see(self, tenant: str | None) -> bool:
        return self.sees_all or tenant == self.name


SINGLE_USER = Caller(None)


class KeyRing:
    """The keys a service accepts, by name."""

    def __init__(self, named: dict[str, bytes], admin: bytes | None) -> None:
        self._named = named
        self._admin = admin

    @classmethod
    def parse(cls, entries: Sequence[str], admin: str | None = None) -> KeyRing:
        """Keys from `name:key` or bare `key` entries (a bare key is named `key<position>`);
        raises ValueError on an empty key, a bad or repeated name, or a repeated key."""
        named: dict[str, bytes] = {}
        for position, entry in enumerate(entries, start=1):
            name, sep, key = entry.partition(":")
            if not sep:
                name, key = f"key{position}", entry
            name, key = name.strip(), key.strip()
            if not key:
                raise ValueError(f"API key entry {position} has no key")
            if not _NAME.match(name) or name == ADMIN:
                raise ValueError(
                    f"API key entry {position}: a name is 1-64 letters, digits, '_', '.' or '-'"
                    f" and not {ADMIN!r}"
                )
            if name in named:
                raise ValueError(f"API key name {name!r} is used twice")
            named[name] = key.encode()
        secrets = list(named.values()) + ([admin.encode()] if admin else [])
        if len(set(secrets)) != len(secrets):
            raise ValueError("the same API key is configured twice")
        return cls(named, admin.encode() if admin else None)

    @property
    def enabled(self) -> bool:
        """Whether requests need a key at all."""
        return bool(self._named) or self._admin is not None

    @property
    def names(self) -> list[str]:
        return list(self._named)

    def identify(self, offered: str | None) -> Caller | None:
        """The caller `offered` identifies, or None. Compares with every key in constant time
        per key, whichever matches."""
        if not offered:
            return None
        given = offered.encode()
        found: Caller | None = None
        for name, key in self._named.items():
            if hmac.compare_digest(given, key):
                found = Caller(name)
        if self._admin is not None and hmac.compare_digest(given, self._admin):
            found = Caller(ADMIN, admin=True)
        return found
