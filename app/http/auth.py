"""API keys: `Authorization: Bearer <key>` or `X-API-Key: <key>`, each naming a caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.access.limits import KeyLimits
from app.http.errors import Unauthorized
from app.keys.tenancy import SINGLE_USER, Caller, KeyRing


def offered_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request carries, if any."""
    if x_api_key is not None:
        return x_api_key
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


async def require_key(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> Caller:
    """The caller behind the request (the single user when no key is configured); refuses
    a request without a configured key, or beyond its key's request rate."""
    ring: KeyRing = request.app.state.keys
    if not ring.enabled:
        return SINGLE_USER
    caller = ring.identify(offered_key(authorization, x_api_key))
    if caller is None:
        raise Unauthorized("a valid API key is required (Authorization: Bearer … or X-API-Key)")
    request.state.caller = caller
    limits: KeyLimits = request.app.state.limits
    await limits.request(caller)
    return caller


Authorized = Annotated[Caller, Depends(require_key)]
