"""Start-up refusals an operator can act on: each names the key, none is a traceback."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest
from cryptography import x509

from ipamd.cli import _refusal
from ipamd.config import ConfigError, parse
from ipamd.db.cluster import ClusterError
from ipamd.tls import ensure_self_signed, load_pair


@pytest.mark.parametrize(("given", "missing"), [("tls_cert", "tls_key"), ("tls_key", "tls_cert")])
def test_half_a_tls_pair_is_refused(given: str, missing: str) -> None:
    with pytest.raises(ConfigError, match=f"api.*{missing} is empty"):
        parse({"api": {given: "/etc/ipamd/tls.pem"}})


def test_a_configured_pair_must_exist_and_match(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"cert\.pem does not exist"):
        load_pair(tmp_path / "cert.pem", tmp_path / "key.pem")
    cert, key = ensure_self_signed(tmp_path / "a")
    load_pair(cert, key)  # a real pair loads
    other_cert, _ = ensure_self_signed(tmp_path / "b")
    with pytest.raises(ValueError, match="not a usable certificate and key"):
        load_pair(other_cert, key)  # a key that does not belong to the certificate
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(ValueError, match="not a usable"):
        load_pair(garbage, key)


def test_self_signed_names_the_hosts_addresses(tmp_path: Path) -> None:
    address = ipaddress.IPv4Address("10.77.44.5")
    cert_path, key_path = ensure_self_signed(tmp_path / "tls", [address])
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert address in names.get_values_for_type(x509.IPAddress)
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert os.stat(key_path).st_mode & 0o777 == 0o600


def test_refusals_are_found_inside_exception_groups() -> None:
    refusal = ConfigError("dhcp.listen '10.77.99.1:67': cannot open")
    nested = BaseExceptionGroup("nursery", [BaseExceptionGroup("inner", [refusal])])
    assert _refusal(nested) is refusal
    cluster = ClusterError("initdb failed")
    assert _refusal(cluster) is cluster
    assert _refusal(BaseExceptionGroup("other", [RuntimeError("bug")])) is None
