"""Plans and engine environments built from plain rows, for tests without a database."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ipamd.config import DhcpConfig
from ipamd.dhcp.context import Endpoint, Env, Exchange
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.leasecache import LeaseCache
from ipamd.dhcp.plan import Plan, build
from ipamd.dhcp.relays import TrustedRelays
from tests.unit.dhcp.packets import ip, roundtrip

SERVER = "10.77.0.254"
RELAY = "10.77.1.1"
SUBNET = uuid.UUID("0192f000-0000-7000-8000-000000000001")
TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")


def subnet_row(
    cidr: str = "10.77.1.0/24", *, id: uuid.UUID = SUBNET, gateway: str | None = "10.77.1.1",
    lease_time: int = 3600, dhcp_enabled: bool = True, next_server: str | None = None,
    boot_file: str | None = None, ddns_adapter: str = "none",
    ntp: Sequence[str] = (), ddns_zone: str | None = None,
) -> dict[str, Any]:
    network, _, length = cidr.partition("/")
    return {
        "id": id, "tenant_id": TENANT, "network": ip(network), "prefixlen": int(length),
        "gateway": ip(gateway) if gateway else None, "lease_time_seconds": lease_time,
        "dhcp_enabled": dhcp_enabled, "next_server": next_server, "boot_file": boot_file,
        "ddns_adapter": ddns_adapter, "ntp_servers": [ip(a) for a in ntp],
        "ddns_zone": ddns_zone, "ddns_server_id": uuid.uuid4() if ddns_zone else None,
    }


def pool_row(start: str, end: str, *, subnet: uuid.UUID = SUBNET,
             class_id: uuid.UUID | None = None) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "subnet_id": subnet, "start_ip": ip(start), "end_ip": ip(end),
            "class_id": class_id}


def make_plan(
    subnets: list[dict[str, Any]] | None = None,
    pools: list[dict[str, Any]] | None = None,
    *,
    excludes: Sequence[tuple[str, str]] = (),
    reservations: Sequence[dict[str, Any]] = (),
    assignments: Sequence[str] = (),
    options: Sequence[dict[str, Any]] = (),
    classes: Sequence[dict[str, Any]] = (),
    trusted: Sequence[str] = (),
) -> Plan:
    return build({
        "subnets": subnets if subnets is not None else [subnet_row()],
        "pools": pools if pools is not None else [pool_row("10.77.1.100", "10.77.1.109")],
        "excludes": [{"subnet_id": SUBNET, "start_ip": ip(a), "end_ip": ip(b)}
                     for a, b in excludes],
        "reservations": [{"id": uuid.uuid4(), "subnet_id": SUBNET, "mac": None, "duid": None,
                          "client_id": None, "hostname": None, **r,
                          "ip": ip(r["ip"])} for r in reservations],
        "assignments": [{"subnet_id": SUBNET, "ip": ip(a)} for a in assignments],
        "options": [{"subnet_id": SUBNET, "vendor_class": None, **o} for o in options],
        "classes": list(classes),
        "trusted_relays": list(trusted),
        "version": 1,
    })


def make_env(plan: Plan | None = None, **config: Any) -> Env:
    values: dict[str, Any] = {"trusted_relays": [RELAY], "server_id": SERVER}
    values.update(config)
    cfg = DhcpConfig(**values)
    return Env(
        config=cfg, plan=plan or make_plan(), cache=LeaseCache(), picker=AddressPicker(),
        trusted=TrustedRelays(cfg.trusted_relays), counters=DhcpCounters(),
        server_id=ip(cfg.server_id) if cfg.server_id else 0,
        server_ids=frozenset({ip(cfg.server_id)}) if cfg.server_id else frozenset(),
    )


ENDPOINT = Endpoint(sock=None, local_ip=ip(SERVER), port=67)


def tx_for(msg: Any, *, src: str = RELAY, endpoint: Endpoint = ENDPOINT) -> Exchange:
    """The transaction the server builds for ``msg`` arriving from ``src``."""
    parsed = roundtrip(msg)
    return Exchange(parsed, parsed.message_type or 0, ip(src), 67, endpoint)
