"""A small MIT Kerberos realm for the GSS-TSIG tests: a KDC (krb5-kdc) on a loopback port,
a DNS service principal for BIND and a client principal for ipamd, each in a 0600 keytab.
Everything lives in the test's directory; KRB5_CONFIG points there (set by the caller)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.bind import Bind, free_port
from tests.support.daemons import terminate

REALM = "IPAMD.TEST"
KDC = shutil.which("krb5kdc") or "/usr/sbin/krb5kdc"
KDB5_UTIL = shutil.which("kdb5_util") or "/usr/sbin/kdb5_util"
KADMIN_LOCAL = shutil.which("kadmin.local") or "/usr/sbin/kadmin.local"
START_TIMEOUT = 10.0


def need_kerberos() -> None:
    if not all(Path(p).exists() for p in (KDC, KDB5_UTIL, KADMIN_LOCAL)):
        pytest.skip("krb5-kdc and krb5-admin-server are not installed (make system-test)")
    try:
        import gssapi  # noqa: F401
    except ImportError:
        pytest.skip("the gssapi package is not installed")


@dataclass
class Realm:
    root: Path
    dns_host: str  # the DNS server's host name: its service principal is DNS/<host>
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.root / "krb5.conf"),
                "KRB5_KDC_PROFILE": str(self.root / "kdc.conf")}

    def keytab(self, name: str) -> Path:
        return self.root / f"{name}.keytab"

    @contextlib.contextmanager
    def exported(self) -> Iterator[None]:
        """This realm's KRB5_CONFIG (and KDC profile) in os.environ, as the in-process
        appliance's gssapi reads it; the previous values are back afterwards."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def dns_server(self, root: Path, zones: list[str]) -> Bind:
        """A BIND 9 (not started) with tkey-gssapi-keytab: DNS/<dns_host>'s keytab, and
        updates of ``zones`` granted to the principal ``ipamd`` of this realm."""
        return Bind(root, zones, gss_keytab=self.keytab("bind"), gss_principal=f"ipamd@{REALM}",
                    env=self.env)

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        (self.root / "krb5.conf").write_text(f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{self.port}
    }}
[domain_realm]
    {self.dns_host} = {REALM}
""")
        (self.root / "kdc.conf").write_text(f"""[kdcdefaults]
    kdc_ports = {self.port}
    kdc_tcp_ports = {self.port}
[realms]
    {REALM} = {{
        database_name = {self.root}/principal
        key_stash_file = {self.root}/stash
        acl_file = {self.root}/kadm5.acl
        kdc_listen = 127.0.0.1:{self.port}
        kdc_tcp_listen = 127.0.0.1:{self.port}
        supported_enctypes = aes256-cts-hmac-sha1-96:normal
    }}
[logging]
    kdc = FILE:{self.root}/kdc.log
""")
        env = {**os.environ, **self.env}
        subprocess.run([KDB5_UTIL, "create", "-s", "-r", REALM, "-P", "master-pw-for-tests"],
                       env=env, check=True, capture_output=True, timeout=60)
        for principal, tab in ((f"DNS/{self.dns_host}", "bind"), ("ipamd", "ipamd")):
            for query in (f"addprinc -randkey {principal}",
                          f"ktadd -k {self.keytab(tab)} {principal}"):
                subprocess.run([KADMIN_LOCAL, "-r", REALM, "-q", query], env=env, check=True,
                               capture_output=True, timeout=60)
            os.chmod(self.keytab(tab), 0o600)
        self.proc = subprocess.Popen([KDC, "-n", "-r", REALM], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError("krb5kdc did not listen in time")

    def stop(self) -> None:
        terminate(self.proc)
        self.proc = None
