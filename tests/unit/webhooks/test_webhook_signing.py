"""Standard Webhooks signatures, checked against an HMAC computed here from the spec."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from app.keys.signing import secret_key, signed_headers


def test_the_signature_is_v1_and_the_base64_hmac_of_id_timestamp_body() -> None:
    key = b"0123456789abcdef"
    body = b'{"type":"run.ended"}'

    headers = signed_headers(key, "msg_1", 1_700_000_000, body)

    expected = hmac.new(key, b"msg_1.1700000000." + body, hashlib.sha256).digest()
    assert headers["webhook-signature"] == "v1," + base64.b64encode(expected).decode()
    assert headers["webhook-id"] == "msg_1"
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["content-type"] == "application/json"


def test_a_whsec_secret_is_base64_after_its_prefix_and_other_text_is_used_as_is() -> None:
    raw = b"\x00\x01secret-bytes"
    assert secret_key("whsec_" + base64.b64encode(raw).decode()) == raw
    assert secret_key("plain text") == b"plain text"


@pytest.mark.parametrize("secret", ["whsec_not*base64", "whsec_", ""])
def test_a_bad_secret_is_refused(secret: str) -> None:
    with pytest.raises(ValueError, match="secret"):
        secret_key(secret)
