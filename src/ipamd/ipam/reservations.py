"""Reservations: a fixed address for a DHCP client known by MAC or DUID (docs/api-ipam.md,
"Reservations": rules 1-4)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import identifiers, validate
from ipamd.core.errors import conflict, invalid
from ipamd.ipam import children, license, occupancy, options
from ipamd.ipam.dberrors import guarded

COLUMNS = (
    "r.id, r.subnet_id, s.tenant_id, r.ip, r.mac::text AS mac, r.duid, r.client_id, r.hostname, "
    "r.next_server, r.boot_file, r.created_at, r.updated_at"
)
FROM = "reservations r JOIN subnets s ON s.id = r.subnet_id"
UPDATABLE = ("ip", "mac", "duid", "client_id", "hostname", "next_server", "boot_file")


def public(row: asyncpg.Record) -> dict[str, Any]:
    client_id = row["client_id"]
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "tenant_id": row["tenant_id"],
        "ip": str(row["ip"]),
        "mac": row["mac"],
        "duid": row["duid"],
        "client_id": None if client_id is None else identifiers.colon_hex(bytes(client_id)),
        "hostname": row["hostname"],
        "next_server": row["next_server"],
        "boot_file": row["boot_file"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


KIND = children.Kind("reservation", "reservations", "r", COLUMNS, FROM, UPDATABLE, public)


def _same_client(held: tuple[str | None, str | None], mac: str | None,
                 duid: str | None) -> bool:
    """Whether a lease's (mac, duid) is this reservation's client (DUIDs in any hex form)."""
    held_mac, held_duid = held
    if mac is not None and held_mac == mac:
        return True
    if duid is None or held_duid is None:
        return False
    return held_duid.replace(":", "").lower() == duid.replace(":", "")


def _v6_identity(r: dict[str, Any]) -> None:
    """A DHCPv6 client is known by its DUID (RFC 8415 §11). A MAC alone would need the
    relay to send the client link-layer address (RFC 6939, option 79), which common relays
    do not (dhcrelay -6 sends only option 9): a mac may come with a duid, never instead."""
    if r["duid"] is None:
        raise invalid("duid", "a reservation on an IPv6 subnet needs a duid: DHCPv6 clients "
                      "are identified by their DUID; a mac alone cannot be matched (RFC 6939 "
                      "client link-layer addresses are not sent by common relays)")
    if r["client_id"] is not None:
        raise invalid("client_id", "client_id is the DHCPv4 client identifier (option 61); "
                      "on an IPv6 subnet the client is identified by its duid")
    for name in ("next_server", "boot_file"):
        if r.get(name) is not None:
            raise invalid(name, f"{name} is a DHCPv4 PXE field (siaddr, file); a DHCPv6 "
                          "client's boot file is option 59 on the subnet")


def _stored(fields: dict[str, Any]) -> dict[str, Any]:
    """next_server as the column stores it (text: an address)."""
    if fields.get("next_server") is None:
        return fields
    return {**fields, "next_server": str(fields["next_server"])}


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, r: dict[str, Any], own: uuid.UUID | None
) -> None:
    """Every rule of the resulting reservation, against the subnet and its other objects."""
    if r["mac"] is None and r["duid"] is None:
        raise invalid("mac", "a reservation needs a mac or a duid")
    if subnet["cidr"].version == 6:
        _v6_identity(r)
    ip: validate.IPAddress = r["ip"]
    children.host_rules(subnet, ip)
    for occupant in await occupancy.occupants(conn, subnet["id"], ip, skip_reservation=own):
        if occupant.kind == "pool":
            continue  # a reservation inside a pool is fine: the server skips it for others
        if occupant.kind == "lease":
            held = await occupancy.lease_identity(conn, subnet["id"], ip)
            if held is not None and _same_client(held, r["mac"], r["duid"]):
                continue  # the client that holds the lease is the one being reserved
        raise conflict(f"ip: {ip} is taken by {occupant.describe()}")
    for column, value in (("mac", r["mac"]), ("duid", r["duid"]), ("client_id", r["client_id"])):
        if value is None:
            continue
        other = await conn.fetchrow(
            f"""SELECT id, ip FROM reservations
                WHERE subnet_id = $1 AND {column} = $2 AND id IS DISTINCT FROM $3""",
            subnet["id"], value, own,
        )
        if other is not None:
            shown = identifiers.colon_hex(value) if isinstance(value, bytes) else value
            raise conflict(
                f"{column}: {shown} already has the reservation {other['id']} "
                f"({other['ip']}) in this subnet"
            )


@guarded
async def create(
    conn: asyncpg.Connection,
    actor: str,
    grant: license.Entitlement,
    subnet_id: uuid.UUID,
    fields: dict[str, Any],
) -> dict[str, Any]:
    await license.lock(conn)
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    r = _stored({name: fields.get(name) for name in UPDATABLE})
    if r["ip"] is None:
        if r["mac"] is None and r["duid"] is None:
            raise invalid("mac", "a reservation needs a mac or a duid")
        r["ip"] = await children.lowest_free(conn, subnet)
    await _check(conn, subnet, r, None)
    await license.check_room(conn, grant)
    new_id = await conn.fetchval(
        """INSERT INTO reservations (subnet_id, ip, mac, duid, client_id, hostname, next_server,
                                     boot_file)
           VALUES ($1, $2, $3::macaddr, $4, $5, $6, $7, $8) RETURNING id""",
        subnet_id, r["ip"], r["mac"], r["duid"], r["client_id"], r["hostname"],
        r["next_server"], r["boot_file"],
    )
    return await children.created(conn, actor, KIND, new_id)


async def get(conn: asyncpg.Connection, reservation_id: uuid.UUID) -> dict[str, Any]:
    return await children.get(conn, KIND, reservation_id)


@dataclass(frozen=True)
class Filters:
    ip: validate.IPAddress | None = None
    mac: str | None = None
    duid: str | None = None
    hostname: str | None = None


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, f: Filters, after: uuid.UUID | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    """None when the subnet does not exist (404), else the page."""
    if not await children.subnet_exists(conn, subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE r.subnet_id = $1 AND ($2::uuid IS NULL OR r.id > $2)
              AND ($3::inet IS NULL OR r.ip = $3)
              AND ($4::macaddr IS NULL OR r.mac = $4::macaddr)
              AND ($5::text IS NULL OR r.duid = $5)
              AND ($6::text IS NULL OR lower(r.hostname) = lower($6))
            ORDER BY r.id LIMIT $7""",
        subnet_id, after, f.ip, f.mac, f.duid, f.hostname, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, reservation_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    subnet, current = await children.lock_for_change(conn, KIND, reservation_id)
    before = public(current)
    if not changes:
        return before
    r = {
        "ip": current["ip"], "mac": current["mac"], "duid": current["duid"],
        "client_id": None if current["client_id"] is None else bytes(current["client_id"]),
        "hostname": current["hostname"], "next_server": current["next_server"],
        "boot_file": current["boot_file"], **_stored(changes),
    }
    await _check(conn, subnet, r, reservation_id)
    changes = _stored(changes)
    return await children.write_change(conn, actor, KIND, reservation_id, before, changes)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, reservation_id: uuid.UUID) -> None:
    await children.fetch(conn, KIND, reservation_id, lock=True)  # 404 before its options
    await options.delete_owned(conn, actor, "reservation_id", reservation_id)
    await children.delete(conn, actor, KIND, reservation_id)
