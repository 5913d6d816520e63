"""Signature headers of a delivery (docs/webhooks.md) and the Standard Webhooks headers.

X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>, one value, made with the
current secret, also during a rotation: one value, and the rotation's overlap is the
receiver's job (it accepts the old and the new secret while the switch happens; docs/webhooks.md,
"Rotating the secret").

webhook-id / webhook-timestamp / webhook-signature follow the Standard Webhooks scheme:
v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>; during a rotation it carries the
current and the previous secret's, space-separated, as that format allows. The key is the
secret's bytes, or for a `whsec_<base64>` secret the decoded bytes, so the standardwebhooks
libraries verify with the secret as it is.
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
        SIGNATURE_HEADER: service_signature(secrets[0], body),
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            standard_signature(s, delivery_id, timestamp, body) for s in secrets
        ),
    }


def verify_service_signature(header: str, secrets: Sequence[bytes], body: bytes) -> bool:
    """Receiver side (docs and tests): the one `sha256=<hex>` value against every secret the
    receiver knows (old and new during a rotation), compared in constant time."""
    offered = header.strip().encode()
    ok = False
    for secret in secrets:
        # No early exit: the time taken does not depend on which secret matched.
        ok |= hmac.compare_digest(service_signature(secret, body).encode(), offered)
    return ok
