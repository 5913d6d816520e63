"""The public listener's certificate: from the TOML file, or self-signed on first boot."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import socket
import ssl
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# The protocol-version options are deprecated (and warn): the versions are minimum_version's.
_VERSION_OPTIONS = (ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3 | ssl.OP_NO_TLSv1 | ssl.OP_NO_TLSv1_1
                    | ssl.OP_NO_TLSv1_2 | ssl.OP_NO_TLSv1_3)
# Python's own server defaults (ssl.create_default_context: no TLS compression, the server's
# cipher order, OpenSSL's bug workarounds), and no renegotiation: a TLS 1.2 renegotiation is
# a second handshake's CPU on the client's say, and nothing here needs it.
SERVER_OPTIONS = ((ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).options
                   & ~_VERSION_OPTIONS) | ssl.OP_NO_RENEGOTIATION)


def harden_server_context(context: ssl.SSLContext) -> ssl.SSLContext:
    """Add SERVER_OPTIONS and a TLS 1.2 floor to a server context (hypercorn's replaces
    Python's options with its own one, OP_NO_COMPRESSION)."""
    context.options |= SERVER_OPTIONS
    context.minimum_version = max(context.minimum_version, ssl.TLSVersion.TLSv1_2)
    return context


def load_pair(cert: Path, key: Path) -> None:
    """Raise OSError/ValueError naming the file when a configured pair cannot serve TLS."""
    for path in (cert, key):
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except ssl.SSLError as error:
        raise ValueError(f"{cert} and {key} are not a usable certificate and key: "
                         f"{error.reason or error}") from None


def ensure_self_signed(
    directory: Path, addresses: Iterable[ipaddress.IPv4Address | ipaddress.IPv6Address] = ()
) -> tuple[Path, Path]:
    """Return (cert, key) under ``directory``, generating them once (key mode 0600).

    The names are the host name, localhost, loopback and ``addresses`` (the host's own, so a
    client that pins the certificate can reach the box by IP). Delete the directory to make a
    new pair after the addresses change.
    """
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=825))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName(host),
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                    *(x509.IPAddress(address) for address in addresses),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
