"""The one interface every DDNS adapter implements, and what it answers.

An adapter applies one change (dns/change.py) to one server and returns an Answer; a
failure is raised as DnsFailure with the server's answer (REFUSED, NOTAUTH, BADSIG, a
timeout...) which the Work view shows. It never touches the outbox row itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from ipamd.dns.change import Change


@dataclass(frozen=True)
class Server:
    id: uuid.UUID
    name: str
    adapter: str
    address: str | None
    port: int
    tsig_key_name: str | None
    tsig_algorithm: str
    api_url: str | None
    pdns_server_id: str
    secret_ref: str | None
    krb_realm: str | None = None
    krb_principal: str | None = None
    keytab_path: str | None = None
    krb_service_host: str | None = None

    @classmethod
    def of(cls, row: Any) -> Server:
        return cls(**{f: row[f] for f in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Answer:
    summary: str  # what was done, e.g. "NOERROR: A + DHCID added; PTR replaced"


class DnsFailure(Exception):
    """The change did not happen. ``answer`` is the server's (e.g. BADSIG); ``final``: no
    retry can help (e.g. the name belongs to another client, RFC 4703)."""

    def __init__(self, answer: str, detail: str, *, final: bool = False) -> None:
        super().__init__(f"{answer}: {detail}")
        self.answer = answer
        self.final = final


class Adapter(Protocol):
    async def apply(self, server: Server, change: Change, timeout: float) -> Answer: ...
