import base64
import hashlib
import hmac

from ipamd.outbox import signing


def test_service_signature_is_hmac_sha256_hex_of_the_raw_body():
    # RFC 4231 test case 2.
    assert signing.service_signature(b"Jefe", b"what do ya want for nothing?") == (
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )


def test_headers_single_secret():
    body = b'{"a":1}'
    h = signing.headers([b"k1"], delivery_id="d-1", topic="ipam.audit", timestamp=1700000000,
                        body=body)
    assert h["Content-Type"] == "application/json"
    assert h["X-Service-Topic"] == "ipam.audit"
    assert h["X-Service-Delivery"] == h["webhook-id"] == "d-1"
    assert h["X-Service-Signature"] == "sha256=" + hmac.new(b"k1", body, hashlib.sha256).hexdigest()
    expected = base64.b64encode(
        hmac.new(b"k1", b"d-1.1700000000." + body, hashlib.sha256).digest()
    ).decode()
    assert h["webhook-signature"] == "v1," + expected
    assert h["webhook-timestamp"] == "1700000000"


def test_rotation_signs_with_the_current_secret_only():
    # X-Service-Signature is one sha256=<hex> (docs/webhooks.md); the overlap is the receiver's job.
    body = b"{}"
    h = signing.headers([b"new", b"old"], delivery_id="d", topic="t", timestamp=1, body=body)
    assert h["X-Service-Signature"] == signing.service_signature(b"new", body)
    assert "," not in h["X-Service-Signature"]
    # The Standard Webhooks header may carry both, as its format allows.
    assert len(h["webhook-signature"].split()) == 2
    # A receiver in the middle of a rotation knows both secrets and accepts.
    assert signing.verify_service_signature(h["X-Service-Signature"], [b"old", b"new"], body)
    assert not signing.verify_service_signature(h["X-Service-Signature"], [b"old"], body)
    assert not signing.verify_service_signature(h["X-Service-Signature"], [b"new"], body + b" ")
    two_values = h["X-Service-Signature"] + ", " + signing.service_signature(b"old", body)
    assert not signing.verify_service_signature(two_values, [b"old", b"new"], body)


def test_whsec_secrets_are_base64_keys_for_standard_webhooks():
    raw = b"0123456789abcdef0123456789abcdef"
    secret = b"whsec_" + base64.b64encode(raw)
    h = signing.headers([secret], delivery_id="m", topic="t", timestamp=5, body=b"x")
    expected = base64.b64encode(hmac.new(raw, b"m.5.x", hashlib.sha256).digest()).decode()
    assert h["webhook-signature"] == "v1," + expected


def test_the_example_in_docs_webhooks_md():
    body = (b'{"ip": "10.77.0.10", "fqdn": null, "mac": "02:00:00:00:00:01", "state": "active", '
            b'"hostname": "pc-1", "lease_id": "0192f3a4-7b00-7000-8000-000000000001", '
            b'"subnet_id": "0192f3a4-7a00-7000-8000-0000000000aa"}')
    h = signing.headers([b"example-secret"], delivery_id="0192f3a4-7c1e-7b52-9d0a-5f3c2e1b8a90",
                        topic="lease.granted", timestamp=1763769600, body=body)
    assert h["X-Service-Signature"] == (
        "sha256=7975905c8a245f458f99c5c9ad5fec95fd916045711136ccea83109d75d44e1d")
    assert h["webhook-signature"] == "v1,IRILtwc/po+ECxEm4+/u3t3Txko7Arr2Ha5RTlf0GdQ="
