"""ad_gsstsig without the optional gssapi package (the appliance image ships without it): a
clear KERBEROS failure on the row, never an ImportError out of the delivery."""

from __future__ import annotations

import sys
import uuid

import pytest

from ipamd.dns import ad_gsstsig
from ipamd.dns.adapter import DnsFailure, Server


def test_missing_gssapi_is_a_clear_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)  # makes `import gssapi` raise ImportError
    server = Server(id=uuid.uuid4(), name="ad", adapter="ad_gsstsig", address="127.0.0.1",
                    port=53, tsig_key_name=None, tsig_algorithm="gss-tsig", api_url=None,
                    pdns_server_id="localhost", secret_ref=None, krb_realm="EXAMPLE.TEST",
                    krb_principal="ipamd", keytab_path="/nonexistent", krb_service_host="dc1")
    with pytest.raises(DnsFailure) as caught:
        ad_gsstsig._context(server)
    assert caught.value.answer == "KERBEROS" and "gssapi" in str(caught.value)
