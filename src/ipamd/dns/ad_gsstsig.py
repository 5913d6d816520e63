"""ad_gsstsig: RFC 2136 UPDATE signed with GSS-TSIG (RFC 3645), as Active Directory DNS and
BIND with tkey-gssapi-keytab require. A security context is set up with the server by a TKEY
exchange over TCP (Kerberos, credentials from a keytab of mode 0600), then the UPDATEs are
the bind_tsig ones (same RFC 4703 rules) signed with it.

The gssapi calls may talk to the KDC (blocking C library calls): they run in a thread.
"""

from __future__ import annotations

import logging
import os
import stat
import time
import uuid
from typing import Any

import dns.asyncquery
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TKEY
import dns.tsig
import trio

from ipamd.dns.adapter import Answer, DnsFailure, Server
from ipamd.dns.bind_tsig import BindTsig
from ipamd.dns.change import Change

TKEY_MODE_GSSAPI = 3  # RFC 2930 §2.5
log = logging.getLogger("ipamd.dns")


def _keytab(path: str) -> str:
    """The keytab, refused unless a regular file readable by its owner only (0600). The
    message names no path (viewers read it: core/secret_locations); the log does."""
    try:
        info = os.stat(path)
    except OSError as error:
        log.warning("keytab %s cannot be read: %s", path, error.strerror)
        raise DnsFailure("SECRET", f"the keytab cannot be read: {error.strerror} "
                         "(see the server log)") from None
    if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) & 0o077:
        log.warning("keytab %s is not a regular file of mode 0600", path)
        raise DnsFailure("SECRET", "the keytab must be a regular file of mode 0600 "
                         "(see the server log)")
    return path


def _context(server: Server) -> Any:
    try:
        import gssapi  # the optional dependency, only for this adapter
        from gssapi.raw.misc import GSSError
    except ImportError:  # e.g. the appliance image, which ships without it
        raise DnsFailure("KERBEROS", "the gssapi package is not installed on this appliance: "
                         "ad_gsstsig cannot sign updates") from None

    principal = server.krb_principal or ""
    if "@" not in principal and server.krb_realm:
        principal = f"{principal}@{server.krb_realm}"
    try:
        creds = gssapi.Credentials(
            name=gssapi.Name(principal, gssapi.NameType.kerberos_principal), usage="initiate",
            store={"client_keytab": _keytab(server.keytab_path or ""),
                   "ccache": f"MEMORY:ipamd-{server.id}"},
        )
        target = gssapi.Name(f"DNS@{server.krb_service_host}",
                             gssapi.NameType.hostbased_service)
        return gssapi.SecurityContext(name=target, creds=creds, usage="initiate")
    except GSSError as error:
        raise DnsFailure("KERBEROS", str(error)[:500]) from None


def _step(context: Any, token: bytes | None) -> bytes | None:
    from gssapi.raw.misc import GSSError

    try:
        reply: bytes | None = context.step(token)
        return reply
    except GSSError as error:
        raise DnsFailure("KERBEROS", str(error)[:500]) from None


def _tkey_query(keyname: dns.name.Name, token: bytes) -> dns.message.Message:
    now = int(time.time())
    tkey = dns.rdtypes.ANY.TKEY.TKEY(  # type: ignore[no-untyped-call]  # dnspython: unannotated
        dns.rdataclass.ANY, dns.rdatatype.TKEY, dns.tsig.GSS_TSIG, now, now + 3600,
        TKEY_MODE_GSSAPI, dns.rcode.NOERROR, token)
    query = dns.message.make_query(keyname, dns.rdatatype.TKEY, dns.rdataclass.ANY)
    query.find_rrset(query.additional, keyname, dns.rdataclass.ANY, dns.rdatatype.TKEY,
                     create=True).add(tkey)
    return query


async def negotiate(server: Server, timeout: float) -> dns.tsig.Key:
    """A GSS-TSIG key agreed with the server by TKEY (RFC 3645 §3)."""
    context = await trio.to_thread.run_sync(_context, server)
    keyname = dns.name.from_text(f"ipamd-{uuid.uuid4().hex}.{server.krb_service_host}")
    key = dns.tsig.Key(keyname, context, dns.tsig.GSS_TSIG)
    token = await trio.to_thread.run_sync(_step, context, None)
    where = f"{server.address}:{server.port}"
    query = _tkey_query(keyname, token or b"")
    # The adapter steps the context with the server's TKEY token while the reply is parsed,
    # so the reply's own GSS-TSIG signature can be checked (RFC 3645 §3.1.3).
    query.keyring = dns.tsig.GSSTSigAdapter(  # type: ignore[no-untyped-call]  # unannotated
        {keyname: key})
    try:
        response = await dns.asyncquery.tcp(query, server.address or "", timeout=timeout,
                                            port=server.port)
    except dns.exception.Timeout:
        raise DnsFailure("TIMEOUT", f"no TKEY answer from {where}") from None
    except OSError as error:
        raise DnsFailure("UNREACHABLE", f"{where}: {error.strerror or error}") from None
    except dns.tsig.PeerError as error:
        raise DnsFailure("BADSIG", f"{where}: {error}") from None
    except (dns.exception.DNSException, ValueError) as error:
        raise DnsFailure("MALFORMED", f"{where} sent an unusable TKEY reply: {error}") from None
    if response.rcode() != dns.rcode.NOERROR:
        raise DnsFailure(dns.rcode.to_text(response.rcode()), f"TKEY refused by {where}")
    answer = next((rr for rr in response.answer if rr.rdtype == dns.rdatatype.TKEY), None)
    if answer is None or answer[0].error != dns.rcode.NOERROR:
        why = "no TKEY record" if answer is None else dns.rcode.to_text(answer[0].error)
        raise DnsFailure("BADKEY", f"{where} did not agree a GSS-TSIG key ({why})")
    if not context.complete:  # Kerberos completes in one round trip
        raise DnsFailure("BADKEY", f"GSS-TSIG negotiation with {where} did not complete")
    return key


class AdGssTsig:
    """The ad_gsstsig adapter: bind_tsig's UPDATEs, signed with a negotiated GSS-TSIG key."""

    def __init__(self) -> None:
        self.updates = BindTsig()

    async def apply(self, server: Server, change: Change, timeout: float) -> Answer:
        key = await negotiate(server, timeout)
        return await self.updates.apply_with_key(server, change, timeout, key)
