"""GET /history (who held an address or identity when) and GET /subnets/{id}/history (the map).

This module turns query strings into a ``history.Lookup`` (identity notations, times in a
zone) and renders answers in the caller's zone, as JSON or CSV. Notations accepted and
shown are documented in docs/history.md.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import ipaddress
import re
import uuid
import zoneinfo
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field
from quart import Response

from ipamd.api import paging
from ipamd.api.errors import bad_request
from ipamd.api.instant import in_range
from ipamd.api.router import RequestContext, Router
from ipamd.api.schemas import Page
from ipamd.core import identifiers, jsonutil, validate
from ipamd.ipam import address_map, history

router = Router("history")

CSV_TYPE = "text/csv; charset=utf-8; header=present"
CSV_COLUMNS = ("ip", "mac", "client_id", "duid", "hostname", "circuit_id", "remote_id",
               "giaddr", "subnet_id", "lease_id", "from", "to", "state", "iaid", "ia_type",
               "prefix_length")
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/Zulu", "Zulu", "UCT", "Etc/UCT", "Universal",
              "Etc/Universal"}

_TIME_HELP = ("an RFC 3339 time such as 2025-01-07T14:00:00Z or 2025-01-07T14:00:00+01:00, "
              "or a local time such as 2025-01-07T14:00 read in tz")
_HEX_HELP = identifiers.HEX_HELP


class HistoryQuery(paging.PageQuery):
    ip: str | None = Field(default=None, description="IPv4 or IPv6 address")
    mac: str | None = Field(
        default=None, description="aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aabb.ccdd.eeff or 12 hex"
    )
    hostname: str | None = Field(
        default=None, description="option 12 host name or option 81 FQDN, any case"
    )
    client_id: str | None = Field(default=None, description=f"option 61, {_HEX_HELP}")
    duid: str | None = Field(default=None,
                             description=f"DHCPv6 client (or RFC 4361) DUID, {_HEX_HELP}")
    circuit: str | None = Field(default=None, description=f"option 82 circuit-id, {_HEX_HELP}")
    remote: str | None = Field(default=None, description=f"option 82 remote-id, {_HEX_HELP}")
    giaddr: str | None = Field(
        default=None, description="relay address; only with circuit or remote"
    )
    at: str | None = Field(default=None, description=f"a moment: {_TIME_HELP}")
    from_: str | None = Field(default=None, alias="from", description="range start")
    to: str | None = Field(default=None, description="range end")
    tz: str | None = Field(
        default=None, description="IANA zone for times without offset and for the answer"
    )
    format: Literal["json", "csv"] = Field(default="json", description="json or csv")


class MapQuery(paging.PageQuery):
    """limit and cursor page an IPv6 map's addresses; an IPv4 map is always whole."""

    at: str | None = Field(default=None, description=f"the moment (default now): {_TIME_HELP}")
    tz: str | None = Field(
        default=None, description="IANA zone for times without offset and for the answer"
    )


class Interval(BaseModel):
    ip: str
    mac: str | None
    client_id: str | None = Field(description="lowercase colon-separated hex")
    duid: str | None = Field(description="lowercase colon-separated hex")
    hostname: str | None
    circuit_id: str | None = Field(description="lowercase colon-separated hex")
    remote_id: str | None = Field(description="lowercase colon-separated hex")
    giaddr: str | None
    subnet_id: uuid.UUID
    lease_id: uuid.UUID
    from_: str = Field(alias="from", description="RFC 3339, in tz")
    to: str | None = Field(description="null while the lease (or a decline's probation) holds")
    state: str = Field(description="active, released, expired or declined")
    iaid: int | None = Field(default=None, description="DHCPv6: the IA's IAID; else null")
    ia_type: str | None = Field(default=None, description="DHCPv6: na (an address) or pd (a "
                                                          "delegated prefix); else null")
    prefix_length: int | None = Field(
        default=None, description="DHCPv6: 128 for an address, the delegated prefix's length "
                                  "(ip is its first address); else null")


class MapRange(BaseModel):
    start: str
    end: str
    state: str = Field(description="free, pool or excluded")


class MapAddresses(BaseModel):
    columns: list[str] = Field(description="ip, mac, hostname, state")
    rows: list[list[str | None]] = Field(
        description="one per address whose state overrides its range (leased, declined, "
                    "reserved, assigned): IPv4 all, in no particular order; IPv6 one page "
                    "(limit, cursor) in address order"
    )


class AddressMapOut(BaseModel):
    subnet_id: uuid.UUID
    cidr: str
    at: str = Field(description="the moment, RFC 3339 in tz")
    tz: str
    size: int | str = Field(description="addresses in the subnet; an exact decimal string "
                                        "for IPv6")
    counts: dict[str, int | str] = Field(
        description="addresses per state; on IPv6 free, pool and excluded are decimal strings")
    ranges: list[MapRange] = Field(description="the whole subnet, run-length by plan state")
    addresses: MapAddresses
    next_cursor: str | None = Field(
        description="IPv6: the cursor of the next page of addresses; null when none (always "
                    "null for IPv4)")


# --- parsing -----------------------------------------------------------------------------

def parse_zone(name: str | None) -> zoneinfo.ZoneInfo | None:
    """None means UTC (times shown with Z)."""
    if name is None:
        return None
    text = name.strip()
    try:
        if not text or text.startswith(("/", ".")) or ".." in text:
            raise ValueError(text)
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise bad_request(
            f"tz: unknown time zone {name!r} (use an IANA name such as Europe/Paris)"
        ) from None


_SPACED_OFFSET = re.compile(r" (\d{2}:?\d{2})$")


def parse_time(name: str, text: str, zone: zoneinfo.ZoneInfo | None) -> dt.datetime:
    """RFC 3339 with an offset, or a local time read in ``zone`` (UTC when none)."""
    value = text.strip()
    # An unencoded '+' in a query string arrives as a space: 14:00:00 01:00 meant +01:00.
    value = _SPACED_OFFSET.sub(r"+\1", value) if "T" in value else value
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise bad_request(f"{name}: {text!r} is not a time; use {_TIME_HELP}") from None
    if parsed.tzinfo is None:
        # An ambiguous local time (DST fall-back) is read as its first occurrence.
        parsed = parsed.replace(tzinfo=zone or dt.UTC)
    try:
        moment = in_range(parsed)
        if zone is not None:
            moment.astimezone(zone)  # the answer shows it in tz: that must exist too
    except (ValueError, OverflowError):  # 0001-01-01T00:00+01:00 is before the first UTC time
        raise bad_request(
            f"{name}: {text!r} is out of range (must fall between 0001-01-01 and 9999-12-31 "
            "in UTC and in tz)"
        ) from None
    return moment


def parse_mac(text: str) -> str:
    try:
        return identifiers.lookup_mac(text)
    except ValueError as error:
        raise bad_request(f"mac: {error}") from None


def parse_hex(name: str, text: str) -> bytes:
    try:
        return identifiers.lookup_hex(text)
    except ValueError as error:
        raise bad_request(f"{name}: {error}") from None


def parse_ipv4(name: str, text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        raise bad_request(f"{name}: {text!r} is not an IPv4 address") from None


def parse_hostname(text: str) -> str:
    value = text.strip().rstrip(".").lower()
    if not value or len(value) > 253 or "\x00" in value:
        raise bad_request("hostname: must be 1 to 253 characters, without NUL")
    return value


def parse_ip(name: str, text: str) -> str:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        raise bad_request(f"{name}: {text!r} is not an IPv4 or IPv6 address") from None
    if getattr(address, "scope_id", None):
        raise bad_request(f"{name}: {text!r} has a zone index (%...); give the address alone")
    return str(address)


def identity_value(kind: str, text: str) -> Any:
    if kind == "ip":
        return parse_ip("ip", text)
    if kind == "mac":
        return parse_mac(text)
    if kind == "hostname":
        return parse_hostname(text)
    if kind == "duid":
        return parse_hex("duid", text).hex()  # stored as plain lowercase hex
    return parse_hex(kind, text)  # client_id, circuit, remote: bytea


def build_lookup(q: HistoryQuery, zone: zoneinfo.ZoneInfo | None) -> history.Lookup:
    given = [name for name in history.IDENTITIES if getattr(q, name) is not None]
    if len(given) != 1:
        listed = ", ".join(history.IDENTITIES)
        if not given:
            raise bad_request(f"exactly one identity parameter is required: one of {listed}")
        raise bad_request(
            f"exactly one identity parameter is allowed, got {' and '.join(given)} "
            f"(one of {listed})"
        )
    kind = given[0]
    giaddr = None
    if q.giaddr is not None:
        if kind not in ("circuit", "remote"):
            raise bad_request("giaddr is only used together with circuit or remote")
        giaddr = parse_ipv4("giaddr", q.giaddr)
    if q.at is not None and (q.from_ is not None or q.to is not None):
        raise bad_request("at (a moment) cannot be combined with from/to (a range)")
    start: dt.datetime | None
    end: dt.datetime | None
    if q.at is not None:
        start = end = parse_time("at", q.at, zone)
    else:
        start = None if q.from_ is None else parse_time("from", q.from_, zone)
        end = None if q.to is None else parse_time("to", q.to, zone)
        if start is not None and end is not None and start > end:
            raise bad_request("from must not be after to")
    return history.Lookup(kind=kind, value=identity_value(kind, getattr(q, kind)),
                          giaddr=giaddr, start=start, end=end)


# --- rendering ---------------------------------------------------------------------------

def stamp(value: dt.datetime | None, zone: zoneinfo.ZoneInfo | None) -> str | None:
    """RFC 3339 in the caller's zone; UTC as Z like the rest of the API."""
    if value is None:
        return None
    if zone is None or zone.key in _UTC_NAMES:
        return jsonutil.timestamp(value)
    return value.astimezone(zone).isoformat()


def interval_out(row: Any, zone: zoneinfo.ZoneInfo | None) -> dict[str, Any]:
    return {
        "ip": row["ip"],
        "mac": row["mac"],
        "client_id": identifiers.hex_or_none(row["client_id"]),
        "duid": identifiers.duid_text(row["duid"]),
        "hostname": row["hostname"],
        "circuit_id": identifiers.hex_or_none(row["circuit_id"]),
        "remote_id": identifiers.hex_or_none(row["remote_id"]),
        "giaddr": row["giaddr"],
        "subnet_id": str(row["subnet_id"]),
        "lease_id": str(row["lease_id"]),
        "from": stamp(row["from_at"], zone),
        "to": stamp(row["to_at"], zone),
        "state": row["state"],
        "iaid": row["iaid"],
        "ia_type": row["ia_type"],
        "prefix_length": row["prefix_length"],
    }


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # Host names come from clients: never let a spreadsheet read one as a formula.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_rows(items: Sequence[dict[str, Any]], header: bool) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    if header:
        writer.writerow(CSV_COLUMNS)
    for item in items:
        writer.writerow([_cell(item[column]) for column in CSV_COLUMNS])
    return out.getvalue()


def _csv_response(body: Any, next_cursor: str | None) -> Response:
    response = Response(body, status=200, content_type=CSV_TYPE)
    response.headers["Content-Disposition"] = 'attachment; filename="history.csv"'
    if next_cursor is not None:
        response.headers["X-Next-Cursor"] = next_cursor
    return response


async def _csv(ctx: RequestContext, q: HistoryQuery, lookup: history.Lookup,
               zone: zoneinfo.ZoneInfo | None) -> Response:
    after = _after(q)
    if q.limit is not None:
        # An explicit limit pages CSV like JSON; the cursor travels in X-Next-Cursor.
        limit = paging.limit_of(q, ctx.state.config.limits)
        rows = await ctx.run(history.intervals_page, lookup, after, limit)
        result = paging.page(rows, limit, key=_key, render=lambda r: interval_out(r, zone))
        return _csv_response(csv_rows(result["items"], True), result["next_cursor"])
    # No limit: the whole answer, streamed a page at a time.
    chunk = ctx.state.config.limits.page_max
    rows = await ctx.run(history.intervals_page, lookup, after, chunk)

    async def stream() -> AsyncIterator[bytes]:
        batch, header = rows, True
        while True:
            shown = batch[:chunk]
            yield csv_rows([interval_out(r, zone) for r in shown], header).encode()
            if len(batch) <= chunk:
                return
            header = False
            batch = await ctx.run(history.intervals_page, lookup, _key(shown[-1]), chunk)

    return _csv_response(stream(), None)


def _key(row: Any) -> tuple[dt.datetime, int]:
    return row["from_at"], row["id"]


def _after(q: HistoryQuery) -> tuple[dt.datetime, int] | None:
    values = paging.after(q, [dt.datetime, int])
    return None if values is None else (values[0], values[1])


RANGE_STATES_COUNTED = ("free", "pool", "excluded")  # the counts a /64 makes too large


def map_json(amap: address_map.AddressMap, zone: zoneinfo.ZoneInfo | None) -> str:
    """The map as JSON text; the per-address entries arrive pre-rendered and are spliced in.

    IPv6 sizes are exact decimal strings (docs/api-ipam.md, "IPv6")."""
    net = amap.network
    v6 = net.version == 6
    counts: dict[str, int | str] = {
        state: str(n) if v6 and state in RANGE_STATES_COUNTED else n
        for state, n in amap.counts.items()
    }
    cursor = None if amap.next_after is None else paging.encode_cursor([amap.next_after])
    head = jsonutil.dumps({
        "subnet_id": str(amap.subnet_id),
        "cidr": str(net),
        "at": stamp(amap.at, zone),
        "tz": "UTC" if zone is None else zone.key,
        "size": str(net.num_addresses) if v6 else net.num_addresses,
        "counts": counts,
        "ranges": [
            {"start": str(validate.address_in_family(net, start)),
             "end": str(validate.address_in_family(net, end)), "state": state}
            for start, end, state in amap.ranges
        ],
        "next_cursor": cursor,
        "addresses": {"columns": list(address_map.ADDRESS_COLUMNS), "rows": []},
    })
    # head ends with ...,"rows":[]}} — put the rows between the brackets.
    return head[:-3] + amap.addresses + head[-3:]


def _map_after(q: MapQuery) -> ipaddress.IPv6Address | None:
    values = paging.after(q, [str])
    if values is None:
        return None
    try:
        return ipaddress.IPv6Address(values[0])
    except ValueError:
        raise bad_request("invalid cursor (take it from next_cursor)") from None


# --- routes ------------------------------------------------------------------------------

@router.route(
    "GET", "/history", role="viewer",
    summary="Occupancy intervals of one identity, in time order (JSON or CSV)",
    query=HistoryQuery, response=Page[Interval], errors=(400, 401, 403),
    content_types=("application/json", "text/csv"),
)
async def get_history(ctx: RequestContext) -> Any:
    q = ctx.query_as(HistoryQuery)
    zone = parse_zone(q.tz)
    lookup = build_lookup(q, zone)
    if q.format == "csv":
        return await _csv(ctx, q, lookup, zone)
    limit = paging.limit_of(q, ctx.state.config.limits)
    rows = await ctx.run(history.intervals_page, lookup, _after(q), limit)
    return paging.page(rows, limit, key=_key, render=lambda r: interval_out(r, zone))


@router.route(
    "GET", "/subnets/{subnet_id}/history", role="viewer",
    summary='The subnet\'s address map "As of" a moment',
    query=MapQuery, response=AddressMapOut, errors=(400, 401, 403, 404),
)
async def get_subnet_history(ctx: RequestContext, subnet_id: uuid.UUID) -> Response:
    q = ctx.query_as(MapQuery)
    zone = parse_zone(q.tz)
    at = dt.datetime.now(dt.UTC) if q.at is None else parse_time("at", q.at, zone)
    amap = await ctx.run(address_map.address_map, subnet_id, at, _map_after(q),
                         paging.limit_of(q, ctx.state.config.limits))
    return Response(map_json(amap, zone), status=200, content_type="application/json")
