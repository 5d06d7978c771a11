"""Standard Webhooks signatures: HMAC-SHA256 over `id.timestamp.body`, in the `webhook-id`,
`webhook-timestamp` and `webhook-signature` headers (https://www.standardwebhooks.com/).

Pure: no I/O. A receiver verifies with any Standard Webhooks library given the same secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"


def secret_key(secret: str) -> bytes:
    """The HMAC key of a secret: a `whsec_` secret is base64 after its prefix (as Standard
    Webhooks libraries read it); any other text is used as its UTF-8 bytes. Raises ValueError
    for a `whsec_` secret that is not base64, or an empty key."""
    if secret.startswith(SECRET_PREFIX):
        try:
            key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
        except binascii.Error as e:
            raise ValueError("a whsec_ webhook secret is base64 after its prefix") from e
    else:
        key = secret.encode()
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def signature(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def signed_headers(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers of one signed delivery of `body`."""
    return {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, webhook_id, timestamp, body),
    }
