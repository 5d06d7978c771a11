"""Optional API keys: `Authorization: Bearer <key>` or `X-API-Key: <key>`."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request

from app.errors import Unauthorized


async def require_key(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> None:
    """Refuse the request unless it carries a configured key (no-op when none is configured)."""
    keys = request.app.state.settings.api_keys
    if not keys:
        return
    offered = x_api_key
    if offered is None and authorization and authorization.lower().startswith("bearer "):
        offered = authorization[7:].strip()
    if offered and any(
        hmac.compare_digest(offered.encode(), key.get_secret_value().encode()) for key in keys
    ):
        return
    raise Unauthorized("a valid API key is required (Authorization: Bearer … or X-API-Key)")


Authorized = Annotated[None, Depends(require_key)]
