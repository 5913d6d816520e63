"""GET /history over leases the real DHCP server granted through a relay: every identity,
moments and ranges, zones both ways, CSV, paging, an address that moved, ends, errors."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zoneinfo

import pytest
import trio

from tests.integration.dhcp.harness import RELAY_IP
from tests.integration.history.dhcp_clients import Client

PARIS = zoneinfo.ZoneInfo("Europe/Paris")
KOLKATA = zoneinfo.ZoneInfo("Asia/Kolkata")
US = dt.timedelta(microseconds=1)


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def items(client, **params) -> list[dict]:
    reply = await client.get("/history", params=params)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert set(body) == {"items", "next_cursor"}
    return body["items"]


async def test_every_identity_finds_the_interval(viewer, net):
    # Option 61 in RFC 4361 form (type 255, IAID, DUID): the server keeps the DUID too.
    printer = Client(mac="02:00:0a:4d:14:01", hostname="Printer-3",
                     client_id=bytes.fromhex("ff00000001000100012b3c4d5e"),
                     circuit_id=b"eth0/1", remote_id=bytes.fromhex("0a0b0c"))
    ip = await net.dhcp.grant(printer)
    await net.dhcp.grant(Client(mac="02:00:0a:4d:14:02", hostname="other",
                                circuit_id=b"eth0/2", remote_id=b"sw9"))
    asks = {
        "ip": ip,
        "mac": "02-00-0A-4D-14-01",
        "hostname": "PRINTER-3",
        "client_id": "ff:00:00:00:01:00:01:00:01:2b:3c:4d:5e",
        "duid": "00-01-00-01-2B-3C-4D-5E",
        "circuit": "65:74:68:30:2f:31",
        "remote": "0a0b0c",
    }
    for name, value in asks.items():
        found = await items(viewer, **{name: value})
        assert [(i["ip"], i["mac"]) for i in found] == [(ip, printer.mac)], name
    [found] = found
    assert set(found) == {"ip", "mac", "client_id", "duid", "hostname", "circuit_id",
                          "remote_id", "giaddr", "subnet_id", "lease_id", "from", "to", "state",
                          "iaid", "ia_type", "prefix_length"}
    # A DHCPv4 interval has no DHCPv6 IA.
    assert (found["iaid"], found["ia_type"], found["prefix_length"]) == (None, None, None)
    assert found["client_id"] == "ff:00:00:00:01:00:01:00:01:2b:3c:4d:5e"
    assert found["duid"] == "00:01:00:01:2b:3c:4d:5e"
    assert (found["circuit_id"], found["remote_id"]) == ("65:74:68:30:2f:31", "0a:0b:0c")
    assert (found["giaddr"], found["subnet_id"]) == (RELAY_IP, net.subnet_id)
    assert (found["to"], found["state"], found["hostname"]) == (None, "active", "Printer-3")
    # giaddr narrows circuit and remote ids (they are unique per relay only).
    assert len(await items(viewer, circuit="657468302f31", giaddr=RELAY_IP)) == 1
    assert await items(viewer, remote="0a0b0c", giaddr="127.77.99.1") == []
    assert await items(viewer, mac="02:00:0a:4d:14:99") == []


@pytest.mark.parametrize("pools", [[("127.77.1.10", "127.77.1.10")]])  # one address
async def test_moment_range_and_an_address_that_moved_between_clients(viewer, net):
    alice, bob = Client(mac="02:00:00:00:0a:01"), Client(mac="02:00:00:00:0b:01")
    ip = await net.dhcp.grant(alice)
    await trio.sleep(0.05)
    await net.dhcp.renew(alice, ip)
    await trio.sleep(0.05)
    await net.dhcp.release(alice, ip)
    await trio.sleep(0.05)
    assert await net.dhcp.grant(bob) == ip  # the one pool address, now Bob's
    first, second = await items(viewer, ip=ip)
    assert (first["mac"], first["state"], second["mac"], second["state"]) == (
        alice.mac, "released", bob.mac, "active")
    assert first["lease_id"] != second["lease_id"]
    a_from, a_to, b_from = parse(first["from"]), parse(first["to"]), parse(second["from"])
    assert a_from < a_to <= b_from and second["to"] is None
    # One moment: whoever held it then; intervals are [from, to).
    assert [i["mac"] for i in await items(viewer, ip=ip, at=iso(a_from))] == [alice.mac]
    assert [i["mac"] for i in await items(viewer, ip=ip, at=iso(a_to - US))] == [alice.mac]
    assert await items(viewer, ip=ip, at=iso(a_from - US)) == []
    assert [i["mac"] for i in await items(viewer, ip=ip, at=iso(b_from))] == [bob.mac]
    # A range: every interval overlapping it, in time order; either end may be left open.
    hour = dt.timedelta(hours=1)
    assert [i["mac"] for i in await items(viewer, ip=ip, **{"from": iso(a_from - hour)})] == [
        alice.mac, bob.mac]
    assert [i["mac"] for i in await items(viewer, ip=ip, to=iso(a_to - US))] == [alice.mac]
    assert [i["mac"] for i in await items(viewer, ip=ip, **{"from": iso(a_to)})] == [bob.mac]
    assert [i["mac"] for i in await items(
        viewer, ip=ip, **{"from": iso(a_to - US), "to": iso(b_from)})] == [alice.mac, bob.mac]
    assert await items(viewer, ip=ip, **{"from": iso(a_from - hour), "to": iso(a_from - US)}) == []
    # By client: each one's own interval.
    assert [i["ip"] for i in await items(viewer, mac=alice.mac)] == [ip]
    assert [i["state"] for i in await items(viewer, mac=bob.mac, at=iso(b_from))] == ["active"]


async def test_a_declined_address_shows_and_holds(viewer, net):
    carol = Client(mac="02:00:00:00:0c:01", hostname="carol")
    ip = await net.dhcp.grant(carol)
    await net.dhcp.decline(carol, ip)
    [found] = await items(viewer, ip=ip)
    assert (found["state"], found["to"], found["mac"]) == ("declined", None, carol.mac)
    assert [i["ip"] for i in await items(viewer, hostname="carol")] == [ip]


@pytest.mark.parametrize("lease_seconds", [1])
async def test_an_expired_lease_ends_when_it_ran_out(viewer, net):
    dave = Client(mac="02:00:00:00:0d:01")
    ip = await net.dhcp.grant(dave)
    await net.dhcp.wait_event(ip, "expired")  # the server's expiry sweep
    [found] = await items(viewer, ip=ip)
    assert found["state"] == "expired"
    assert parse(found["to"]) - parse(found["from"]) == dt.timedelta(seconds=1)


async def test_zones_read_local_times_and_render_answers(viewer, net):
    erin = Client(mac="02:00:00:00:0e:01")
    ip = await net.dhcp.grant(erin)
    await trio.sleep(0.05)
    await net.dhcp.release(erin, ip)
    [utc] = await items(viewer, ip=ip)
    start = parse(utc["from"])
    assert utc["from"].endswith("Z")
    # Rendered in the zone asked for: the same instants, local offsets.
    [paris] = await items(viewer, ip=ip, tz="Europe/Paris")
    assert parse(paris["from"]) == start and parse(paris["to"]) == parse(utc["to"])
    assert paris["from"][-6:] == start.astimezone(PARIS).isoformat()[-6:] != "+00:00"
    [india] = await items(viewer, ip=ip, tz="Asia/Kolkata")
    assert india["from"].endswith("+05:30") and parse(india["from"]) == start
    # A local time without offset is read in tz ...
    local = (start + dt.timedelta(milliseconds=1)).astimezone(KOLKATA).replace(tzinfo=None)
    assert len(await items(viewer, ip=ip, at=local.isoformat(), tz="Asia/Kolkata")) == 1
    # ... and as UTC without tz: five and a half hours off, nobody held it then.
    assert await items(viewer, ip=ip, at=local.isoformat()) == []
    # An explicit offset wins over tz.
    assert len(await items(viewer, ip=ip, at=iso(start), tz="America/New_York")) == 1


async def test_paging_and_csv(viewer, net):
    frank = Client(mac="02:00:00:00:0f:01", hostname="=cmd|' /C calc'!A0")
    for _ in range(5):
        ip = await net.dhcp.grant(frank)
        await net.dhcp.release(frank, ip)
    full = await items(viewer, mac=frank.mac, limit="1000")
    assert len(full) == 5 and len({i["lease_id"] for i in full}) == 5
    assert [parse(i["from"]) for i in full] == sorted(parse(i["from"]) for i in full)
    # limit=2: three pages, together the full list.
    seen, cursor, pages = [], None, 0
    while pages < 10:
        params = {"mac": frank.mac, "limit": "2", **({"cursor": cursor} if cursor else {})}
        body = (await viewer.get("/history", params=params)).json()
        seen += body["items"]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert (pages, seen) == (3, full)
    # CSV: the same rows under a header, as a download; the client's formula neutralised.
    reply = await viewer.get("/history", params={"mac": frank.mac, "format": "csv",
                                                 "tz": "Europe/Paris"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/csv")
    assert "attachment" in reply.headers["content-disposition"]
    assert "x-next-cursor" not in reply.headers
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert [r["lease_id"] for r in rows] == [i["lease_id"] for i in full]
    assert parse(rows[0]["from"]) == parse(full[0]["from"])
    assert rows[0]["from"].endswith(("+01:00", "+02:00"))
    assert rows[0]["hostname"] == "'" + frank.hostname
    assert (rows[0]["state"], rows[0]["giaddr"], rows[0]["to"] != "") == (
        "released", RELAY_IP, True)
    # CSV with a limit: a page, the cursor in X-Next-Cursor.
    paged = await viewer.get("/history", params={"mac": frank.mac, "format": "csv", "limit": "4"})
    assert len(list(csv.DictReader(io.StringIO(paged.text)))) == 4
    rest = await viewer.get("/history", params={"mac": frank.mac, "format": "csv",
                                                "cursor": paged.headers["x-next-cursor"]})
    assert [r["lease_id"] for r in csv.DictReader(io.StringIO(rest.text))] == [
        full[4]["lease_id"]]


ERRORS = [
    ({}, "exactly one identity parameter is required"),
    ({"ip": "127.77.1.10", "hostname": "x"}, "got ip and hostname"),
    ({"mac": "02:00:00:00:00:01", "giaddr": RELAY_IP}, "giaddr is only used together"),
    ({"ip": "127.77.1.10", "tz": "Mars/Olympus"}, "'Mars/Olympus'"),
    ({"ip": "127.77.1.10", "at": "last tuesday"}, "at: 'last tuesday'"),
    ({"ip": "127.77.1.10", "at": "2025-01-01T00:00Z", "from": "2025-01-01T00:00Z"}, "cannot be"),
    ({"ip": "127.77.1.10", "from": "2025-02-01", "to": "2025-01-01"}, "from must not be after"),
    ({"mac": "02:00:00:00:00"}, "mac:"),
    ({"client_id": "xyz"}, "client_id:"),
    ({"ip": "127.77.1.10", "format": "xml"}, "format"),
    ({"ip": "127.77.1.10", "limit": "0"}, "limit"),
    ({"ip": "127.77.1.10", "cursor": "nope"}, "cursor"),
    ({"ip": "127.77.1.10", "colour": "blue"}, "colour: unknown field"),
]


async def test_errors_name_the_parameter(viewer, anon):
    for params, message in ERRORS:
        reply = await viewer.get("/history", params=params)
        assert reply.status_code == 400, (params, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "bad_request" and message in error["message"], (params, error)
    # A token is needed once one exists; a viewer's is enough.
    missing = await anon.get("/history", params={"ip": "127.77.1.10"})
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthorized"
