"""The service's own errors: refusals and conflicts of the run service (admission, per-key
limits, leases, keys), apart from the core's `calls.errors.LatsError` hierarchy. Only
`app/http/errors.py` turns them into HTTP statuses."""

from __future__ import annotations

from calls.errors import CodedError


class ServiceError(CodedError, code="service"):
    """Base of every error the service raises on purpose.

    `code` is a stable machine-readable name; `str(error)` is a message safe to show a user.
    """
