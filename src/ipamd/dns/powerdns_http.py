"""powerdns_http: the PowerDNS Authoritative HTTP API — PATCH of whole rrsets, with the
X-API-Key read from secret_ref — through the outbox's HTTP client and its SSRF guard.

The API has no update prerequisites, so the RFC 4703 rules are checked by reading the
name's rrsets first (GET) and then replacing them: the DHCID decides whether the name is
this client's. That read-then-write is not atomic as an RFC 2136 prerequisite is; two
changes to one name are rare (one lease per name) and the next renewal repairs a lost race.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import trio

from ipamd.dns.adapter import Answer, DnsFailure, Server
from ipamd.dns.change import Change, LeaseChange, Record, StaticChange
from ipamd.outbox.client import Client, HttpError
from ipamd.outbox.secrets import SecretError, resolve
from ipamd.outbox.urlguard import ResolveError, UrlRefused, check_url

MAX_ZONE_BYTES = 8 * 1024 * 1024  # a zone read (GET) is capped; beyond it the row retries
MAX_REPLY_BYTES = 64 * 1024


def _fq(name: str) -> str:
    return name.rstrip(".") + "."


class PowerDnsHttp:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def apply(self, server: Server, change: Change, timeout: float) -> Answer:
        try:
            key = resolve(server.secret_ref or "").decode("ascii")
        except (SecretError, UnicodeDecodeError) as error:
            raise DnsFailure("SECRET", str(error)) from None
        api = _Api(self.client, server, key)
        result: Answer | None = None
        with trio.move_on_after(timeout * 3):  # a read and up to two writes
            if isinstance(change, StaticChange):
                result = await self._static(api, change)
            elif change.op == "add":
                result = await self._add(api, change)
            else:
                result = await self._remove(api, change)
        if result is None:
            raise DnsFailure("TIMEOUT", f"{server.api_url} did not answer in time")
        return result

    async def _add(self, api: _Api, c: LeaseChange) -> Answer:
        sets = await api.rrsets(c.zone, c.name)
        ours = base64.b64encode(c.dhcid.data).decode()
        dhcid = [r["content"] for r in sets.get("DHCID", [])]
        if sets and dhcid != [ours]:
            raise DnsFailure("YXDOMAIN", f"{c.name} belongs to another client (no DHCID of "
                             "this client): left as it is (RFC 4703)", final=True)
        changes = [_replace(c.name, c.rtype, c.ttl, [c.ip])]
        if not sets:
            changes.append(_replace(c.name, "DHCID", c.ttl, [ours]))
        await api.patch(c.zone, changes)
        done = f"{c.rtype} replaced (DHCID matched)" if sets else f"{c.rtype} + DHCID added"
        if c.reverse_zone:
            await api.patch(c.reverse_zone,
                            [_replace(c.reverse_name, "PTR", c.ttl, [_fq(c.name)])])
            return Answer(f"HTTP 204: {done}; PTR set")
        return Answer(f"HTTP 204: {done}")

    async def _remove(self, api: _Api, c: LeaseChange) -> Answer:
        sets = await api.rrsets(c.zone, c.name)
        ours = base64.b64encode(c.dhcid.data).decode()
        if [r["content"] for r in sets.get("DHCID", [])] == [ours]:
            rest = [r["content"] for r in sets.get(c.rtype, []) if r["content"] != c.ip]
            ttl = c.ttl
            changes = [_replace(c.name, c.rtype, ttl, rest) if rest else _delete(c.name, c.rtype)]
            # RFC 4703 §5.5: the DHCID goes with the name's last address record (a dual-stack
            # client's A and AAAA share it, RFC 4701 §3.3).
            other = "AAAA" if c.rtype == "A" else "A"
            if rest or sets.get(other):
                forward = f"{c.rtype} removed; DHCID kept (the name holds the client's other " \
                          "addresses)"
            else:
                changes.append(_delete(c.name, "DHCID"))
                forward = f"{c.rtype} + DHCID removed"
            await api.patch(c.zone, changes)
        else:
            forward = "name not this client's (or gone): left alone"
        if c.reverse_zone:
            ptr = await api.rrsets(c.reverse_zone, c.reverse_name)
            if [r["content"] for r in ptr.get("PTR", [])] == [_fq(c.name)]:
                await api.patch(c.reverse_zone, [_delete(c.reverse_name, "PTR")])
                return Answer(f"HTTP 204: {forward}; PTR removed")
        return Answer(f"HTTP 204: {forward}")

    async def _static(self, api: _Api, c: StaticChange) -> Answer:
        names = {r.name for r in (c.remove, c.add) if r is not None}
        current: dict[tuple[str, str], list[str]] = {}
        for name in names:
            for rtype, records in (await api.rrsets(c.zone, name)).items():
                current[(name, rtype)] = [r["content"] for r in records]
        changes: dict[tuple[str, str], tuple[list[str], int]] = {}

        def edit(record: Record, fn: Callable[[list[str]], list[str]]) -> None:
            key = (record.name, record.type)
            values = changes.get(key, (current.get(key, []), record.ttl))[0]
            changes[key] = (fn(values), record.ttl)

        removed, added = c.remove, c.add
        if removed is not None:
            edit(removed, lambda vs: [v for v in vs if v != removed.value])
        if added is not None:
            edit(added, lambda vs: [*vs, added.value] if added.value not in vs else vs)
        await api.patch(c.zone, [
            _replace(name, rtype, ttl, values) if values else _delete(name, rtype)
            for (name, rtype), (values, ttl) in changes.items()])
        parts = [f"{r.type} {r.name} {'added' if add else 'removed'}"
                 for r, add in ((c.remove, False), (c.add, True)) if r is not None]
        return Answer("HTTP 204: " + "; ".join(parts))


def _replace(name: str, rtype: str, ttl: int, contents: list[str]) -> dict[str, Any]:
    return {"name": _fq(name), "type": rtype, "ttl": ttl, "changetype": "REPLACE",
            "records": [{"content": v, "disabled": False} for v in contents]}


def _delete(name: str, rtype: str) -> dict[str, Any]:
    return {"name": _fq(name), "type": rtype, "changetype": "DELETE"}


class _Api:
    def __init__(self, client: Client, server: Server, key: str) -> None:
        self.client = client
        self.server = server
        self.headers = {"X-API-Key": key, "Content-Type": "application/json",
                        "User-Agent": "ipamd-ddns"}

    def _zone_url(self, zone: str, query: str = "") -> str:
        base = (self.server.api_url or "").rstrip("/")
        return (f"{base}/servers/{quote(self.server.pdns_server_id, safe='')}/zones/"
                f"{quote(_fq(zone), safe='.')}{query}")

    async def _call(self, method: str, url: str, body: bytes, cap: int) -> bytes:
        try:
            target = check_url(url)  # the rules may have tightened since the server was saved
            response = await self.client.request(method, target, self.headers, body, cap)
        except (UrlRefused, ResolveError) as error:
            raise DnsFailure("REFUSED_URL", str(error)) from None
        except HttpError as error:
            raise DnsFailure("UNREACHABLE", str(error)[:500]) from None
        if response.truncated:
            raise DnsFailure("TOO_LARGE", f"the reply of {url} is over {cap} bytes")
        if not 200 <= response.status < 300:
            raise DnsFailure(f"HTTP {response.status}", _error_text(response.body))
        return response.body

    async def rrsets(self, zone: str, name: str) -> dict[str, list[dict[str, Any]]]:
        """{type: records} of one name (the API filters from 4.8; older ones send all)."""
        body = await self._call("GET", self._zone_url(zone, f"?rrset_name={quote(_fq(name))}"),
                                b"", MAX_ZONE_BYTES)
        try:
            data = json.loads(body)
            found: dict[str, list[dict[str, Any]]] = {}
            for rrset in data.get("rrsets", []):
                if str(rrset["name"]).lower() == _fq(name).lower():
                    found[str(rrset["type"])] = [
                        {"content": str(r["content"])} for r in rrset.get("records", [])]
            return found
        except (ValueError, TypeError, KeyError, AttributeError):
            raise DnsFailure("MALFORMED", "the zone read is not the API's JSON") from None

    async def patch(self, zone: str, rrsets: list[dict[str, Any]]) -> None:
        body = json.dumps({"rrsets": rrsets}).encode()
        await self._call("PATCH", self._zone_url(zone), body, MAX_REPLY_BYTES)


def _error_text(body: bytes) -> str:
    text = body[:2000].decode("utf-8", "replace")
    try:
        message = json.loads(text).get("error")
        if isinstance(message, str):
            return message[:500]
    except (ValueError, AttributeError):
        pass
    return text.replace("\x00", "")[:500] or "(no body)"
