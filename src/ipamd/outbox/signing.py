"""Signature headers of a delivery (spec §6) and the Standard Webhooks headers.

X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>. During a rotation the
header carries two comma-separated values, the current secret's first; a receiver accepts
the request if any value matches a secret it knows.

webhook-id / webhook-timestamp / webhook-signature follow the Standard Webhooks scheme:
v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>, space-separated when there are
two. The key is the secret's bytes, or for a `whsec_<base64>` secret the decoded bytes, so
the standardwebhooks libraries verify with the secret as it is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

SIGNATURE_HEADER = "X-Service-Signature"
WHSEC_PREFIX = b"whsec_"


def service_signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def standard_key(secret: bytes) -> bytes:
    if secret.startswith(WHSEC_PREFIX):
        try:
            return base64.b64decode(secret[len(WHSEC_PREFIX):], validate=True)
        except (binascii.Error, ValueError):
            return secret
    return secret


def standard_signature(secret: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(
    secrets: Sequence[bytes], *, delivery_id: str, topic: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """Every header of a delivery request; `secrets` is current first, then previous."""
    return {
        "Content-Type": "application/json",
        "X-Service-Topic": topic,
        "X-Service-Delivery": delivery_id,
        SIGNATURE_HEADER: ", ".join(service_signature(s, body) for s in secrets),
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            standard_signature(s, delivery_id, timestamp, body) for s in secrets
        ),
    }


def verify_service_signature(header: str, secrets: Sequence[bytes], body: bytes) -> bool:
    """Receiver side (docs and tests): constant-time comparison against every value."""
    offered = [item.strip() for item in header.split(",") if item.strip()]
    ok = False
    for secret in secrets:
        expected = service_signature(secret, body).encode()
        for value in offered:
            # No early exit: the time taken does not depend on which value matched.
            ok |= hmac.compare_digest(expected, value.encode())
    return ok
