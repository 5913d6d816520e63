"""bind_tsig: RFC 2136 UPDATE signed with TSIG (RFC 8945), sent with dnspython over UDP, again
over TCP when the answer is truncated. Conflicts follow RFC 4703 with DHCID records (RFC 4701):
a name is added only where none exists, or replaced where its DHCID is this client's; a
release removes only what this client's DHCID proves it owns.
"""

from __future__ import annotations

import base64
import binascii

import dns.asyncquery
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.tsig
import dns.update

from ipamd.dns.adapter import Answer, DnsFailure, Server
from ipamd.dns.change import Change, LeaseChange, StaticChange
from ipamd.outbox.secrets import SecretError, resolve

ALGORITHMS = {
    "hmac-sha256": dns.tsig.HMAC_SHA256, "hmac-sha384": dns.tsig.HMAC_SHA384,
    "hmac-sha512": dns.tsig.HMAC_SHA512, "hmac-sha224": dns.tsig.HMAC_SHA224,
    "hmac-sha1": dns.tsig.HMAC_SHA1,
}
# The TSIG error a server answered with (dnspython raises these while checking its reply).
_TSIG_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (dns.tsig.PeerBadSignature, "BADSIG"), (dns.tsig.PeerBadKey, "BADKEY"),
    (dns.tsig.PeerBadTime, "BADTIME"), (dns.tsig.PeerBadTruncation, "BADTRUNC"),
)


def _name(text: str) -> dns.name.Name:
    return dns.name.from_text(text)


def tsig_key(server: Server) -> dns.tsig.Key:
    """The key, its secret read now from secret_ref (a rotation needs no restart)."""
    try:
        secret = resolve(server.secret_ref or "")
        raw = base64.b64decode(secret, validate=True)
    except SecretError as error:
        raise DnsFailure("SECRET", str(error)) from None
    except (binascii.Error, ValueError):
        raise DnsFailure("SECRET", "the secret is not base64 (a TSIG secret as in the "
                         "server's key statement)") from None
    return dns.tsig.Key(_name(server.tsig_key_name or ""), raw,
                        ALGORITHMS.get(server.tsig_algorithm, dns.tsig.HMAC_SHA256))


async def send(server: Server, msg: dns.message.Message, timeout: float) -> dns.rcode.Rcode:
    """The server's rcode for ``msg``; every other outcome is a DnsFailure naming it."""
    where = f"{server.address}:{server.port}"
    try:
        response, _tcp = await dns.asyncquery.udp_with_fallback(
            msg, server.address or "", timeout=timeout, port=server.port
        )
    except dns.tsig.PeerError as error:
        answer = next((n for t, n in _TSIG_ERRORS if isinstance(error, t)), "TSIG")
        raise DnsFailure(answer, f"{where} refused the TSIG signature ({error})") from None
    except dns.exception.Timeout:
        raise DnsFailure("TIMEOUT", f"no answer from {where} within {timeout:g}s") from None
    except OSError as error:
        raise DnsFailure("UNREACHABLE", f"{where}: {error.strerror or error}") from None
    except dns.exception.DNSException as error:
        # A malformed or unverifiable reply is the server's fault, never a crash here.
        raise DnsFailure("MALFORMED", f"{where} sent an unusable reply: {error}") from None
    except ValueError as error:
        raise DnsFailure("MALFORMED", f"{where} sent an unusable reply: {error}") from None
    return response.rcode()


def _fail(rcode: dns.rcode.Rcode, what: str) -> DnsFailure:
    return DnsFailure(dns.rcode.to_text(rcode), what)


class BindTsig:
    """The bind_tsig adapter (also any RFC 2136 server with TSIG: Knot, PowerDNS dnsupdate)."""

    async def apply(self, server: Server, change: Change, timeout: float) -> Answer:
        return await self.apply_with_key(server, change, timeout, tsig_key(server))

    async def apply_with_key(self, server: Server, change: Change, timeout: float,
                             key: dns.tsig.Key) -> Answer:
        """The same updates signed with another key (ad_gsstsig's negotiated one)."""
        if isinstance(change, StaticChange):
            return await self._static(server, key, change, timeout)
        if change.op == "add":
            return await self._add(server, key, change, timeout)
        return await self._remove(server, key, change, timeout)

    @staticmethod
    def _update(zone: str, key: dns.tsig.Key) -> dns.update.UpdateMessage:
        msg = dns.update.UpdateMessage(_name(zone))
        msg.use_tsig(key)
        return msg


    async def _add(self, server: Server, key: dns.tsig.Key, c: LeaseChange,
                   timeout: float) -> Answer:
        name = _name(c.name)
        rtype = dns.rdatatype.from_text(c.rtype)  # A, or AAAA for a DHCPv6 lease
        a = dns.rdata.from_text(dns.rdataclass.IN, rtype, c.ip)
        # RFC 4703 §5.3.1: add only if the name is free...
        first = self._update(c.zone, key)
        first.absent(name)
        first.add(name, c.ttl, a)
        first.add(name, c.ttl, c.dhcid)
        rcode = await send(server, first, timeout)
        if rcode == dns.rcode.NOERROR:
            done = f"{c.rtype} + DHCID added"
        elif rcode == dns.rcode.YXDOMAIN:
            # ...else replace the address only where the DHCID is this client's (§5.3.2).
            second = self._update(c.zone, key)
            second.present(name, c.dhcid)
            second.delete(name, rtype)
            second.add(name, c.ttl, a)
            rcode = await send(server, second, timeout)
            if rcode == dns.rcode.NXRRSET:
                raise DnsFailure("YXDOMAIN", f"{c.name} belongs to another client (its DHCID "
                                 "differs): left as it is (RFC 4703)", final=True)
            if rcode != dns.rcode.NOERROR:
                raise _fail(rcode, f"replacing the {c.rtype} record of {c.name}")
            done = f"{c.rtype} replaced (DHCID matched)"
        else:
            raise _fail(rcode, f"adding {c.name}")
        return Answer(f"NOERROR: {done}; {await self._ptr_add(server, key, c, timeout)}")

    async def _ptr_add(self, server: Server, key: dns.tsig.Key, c: LeaseChange,
                       timeout: float) -> str:
        if not c.reverse_zone:
            return "no reverse zone"
        rev = _name(c.reverse_name)
        msg = self._update(c.reverse_zone, key)
        msg.delete(rev, dns.rdatatype.PTR)
        msg.add(rev, c.ttl, dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.PTR,
                                                c.name + "."))
        rcode = await send(server, msg, timeout)
        if rcode != dns.rcode.NOERROR:
            raise _fail(rcode, f"setting the PTR of {c.ip} (the {c.rtype} record is in place)")
        return "PTR set"

    async def _remove(self, server: Server, key: dns.tsig.Key, c: LeaseChange,
                      timeout: float) -> Answer:
        name = _name(c.name)
        msg = self._update(c.zone, key)
        msg.present(name, c.dhcid)  # only what this client owns (RFC 4703 §5.5)
        msg.delete(name, dns.rdata.from_text(dns.rdataclass.IN,
                                             dns.rdatatype.from_text(c.rtype), c.ip))
        rcode = await send(server, msg, timeout)
        if rcode == dns.rcode.NOERROR:
            forward = await self._dhcid_remove(server, key, c, timeout)
        elif rcode in (dns.rcode.NXRRSET, dns.rcode.NXDOMAIN):
            forward = "name not this client's (or gone): left alone"
        else:
            raise _fail(rcode, f"removing {c.name}")
        if not c.reverse_zone:
            return Answer(f"NOERROR: {forward}")
        rev = _name(c.reverse_name)
        ptr = self._update(c.reverse_zone, key)
        ptr.present(rev, dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.PTR,
                                             c.name + "."))
        ptr.delete(rev, dns.rdatatype.PTR)
        rcode = await send(server, ptr, timeout)
        if rcode not in (dns.rcode.NOERROR, dns.rcode.NXRRSET, dns.rcode.NXDOMAIN):
            raise _fail(rcode, f"removing the PTR of {c.ip}")
        return Answer(f"NOERROR: {forward}; PTR removed")

    async def _dhcid_remove(self, server: Server, key: dns.tsig.Key, c: LeaseChange,
                            timeout: float) -> str:
        """RFC 4703 §5.5's second update: the DHCID goes with the name's last address
        record only (a dual-stack client's A and AAAA share one DHCID, RFC 4701 §3.3)."""
        name = _name(c.name)
        msg = self._update(c.zone, key)
        msg.present(name, c.dhcid)
        msg.absent(name, dns.rdatatype.A)
        msg.absent(name, dns.rdatatype.AAAA)
        msg.delete(name, dns.rdatatype.DHCID)
        rcode = await send(server, msg, timeout)
        if rcode == dns.rcode.NOERROR:
            return f"{c.rtype} + DHCID removed"
        if rcode in (dns.rcode.YXRRSET, dns.rcode.NXRRSET, dns.rcode.NXDOMAIN):
            return f"{c.rtype} removed; DHCID kept (the name holds the client's other addresses)"
        raise _fail(rcode, f"removing the DHCID of {c.name} (its {c.rtype} is removed)")

    async def _static(self, server: Server, key: dns.tsig.Key, c: StaticChange,
                      timeout: float) -> Answer:
        msg = self._update(c.zone, key)
        for record, adding in ((c.remove, False), (c.add, True)):
            if record is None:
                continue
            rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(record.type),
                                        record.value)
            if adding:
                msg.add(_name(record.name), record.ttl, rdata)
            else:
                msg.delete(_name(record.name), rdata)
        rcode = await send(server, msg, timeout)
        if rcode != dns.rcode.NOERROR:
            raise _fail(rcode, f"changing the static records of {c.zone}")
        parts = [f"{r.type} {r.name} {'added' if add else 'removed'}"
                 for r, add in ((c.remove, False), (c.add, True)) if r is not None]
        return Answer("NOERROR: " + "; ".join(parts))
