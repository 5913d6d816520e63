"""GET /subnets/{id}/history: the address map "As of" a moment, from leases the real DHCP
server granted and a plan made (and partly deleted) through the API."""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid

import trio

from tests.integration.history.dhcp_clients import Client


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def _map(viewer, subnet_id: str, **params) -> dict:
    reply = await viewer.get(f"/subnets/{subnet_id}/history", params=params)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.json()
    # Rows come in no particular order: sort them by address to compare.
    body["addresses"]["rows"].sort(key=lambda row: ipaddress.IPv4Address(row[0]))
    return body


async def _post(admin, path: str, body: dict) -> dict:
    reply = await admin.post(path, json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


async def test_map_as_of_now_and_before(viewer, net):
    subnet, admin = net.subnet_id, net.admin
    first = await _map(viewer, subnet)
    assert (first["cidr"], first["size"], first["tz"]) == ("127.77.0.0/16", 65536, "UTC")
    assert first["addresses"] == {"columns": ["ip", "mac", "hostname", "state"], "rows": []}
    before_plan = parse(first["at"])
    await trio.sleep(0.05)

    kiosk = Client(mac="02:00:00:00:1e:01", hostname="kiosk")
    # A client's own name may hold anything: the map must still be valid JSON.
    guest = Client(mac="02:00:00:00:1e:02", hostname='gü"est\\\x01')
    await _post(admin, f"/subnets/{subnet}/excludes",
                {"start_ip": "127.77.1.15", "end_ip": "127.77.1.16"})
    reserved = await _post(admin, f"/subnets/{subnet}/reservations",
                           {"ip": "127.77.2.20", "mac": kiosk.mac, "hostname": "kiosk"})
    await _post(admin, f"/subnets/{subnet}/assignments",
                {"ip": "127.77.2.5", "hostname": "static"})
    after_plan = dt.datetime.now(dt.UTC)
    await trio.sleep(0.05)

    kiosk_ip = await net.dhcp.grant(kiosk)
    assert kiosk_ip == "127.77.2.20"  # its reservation
    guest_ip = await net.dhcp.grant(guest)
    await net.dhcp.decline(guest, guest_ip)
    await trio.sleep(0.05)
    middle = dt.datetime.now(dt.UTC)
    await trio.sleep(0.05)
    deleted = await admin.delete(f"/reservations/{reserved['id']}")
    assert deleted.status_code == 204, deleted.text
    await net.dhcp.release(kiosk, kiosk_ip)

    now = await _map(viewer, subnet, tz="Europe/Paris")
    assert now["at"].endswith(("+01:00", "+02:00"))
    assert now["ranges"] == [
        {"start": "127.77.0.0", "end": "127.77.1.9", "state": "free"},
        {"start": "127.77.1.10", "end": "127.77.1.14", "state": "pool"},
        {"start": "127.77.1.15", "end": "127.77.1.16", "state": "excluded"},
        {"start": "127.77.1.17", "end": "127.77.1.19", "state": "pool"},
        {"start": "127.77.1.20", "end": "127.77.255.255", "state": "free"},
    ]
    # The kiosk released and its reservation is gone; the guest's decline still holds.
    assert now["addresses"]["rows"] == [
        [guest_ip, guest.mac, guest.hostname, "declined"],
        ["127.77.2.5", None, "static", "assigned"]]
    assert now["counts"] == {"free": 65536 - 10 - 1, "pool": 8 - 1, "excluded": 2,
                             "assigned": 1, "reserved": 0, "declined": 1, "leased": 0}

    then = await _map(viewer, subnet, at=iso(middle))
    assert parse(then["at"]) == middle
    assert then["addresses"]["rows"] == [
        [guest_ip, guest.mac, guest.hostname, "declined"],
        ["127.77.2.5", None, "static", "assigned"],
        ["127.77.2.20", kiosk.mac, "kiosk", "leased"]]  # the lease wins over its reservation
    assert (then["counts"]["leased"], then["counts"]["reserved"]) == (1, 0)

    # After the plan was made, before any lease: the reservation, deleted since, is known
    # from the audit trail.
    planned = await _map(viewer, subnet, at=iso(after_plan))
    assert planned["addresses"]["rows"] == [
        ["127.77.2.5", None, "static", "assigned"],
        ["127.77.2.20", kiosk.mac, "kiosk", "reserved"]]
    assert planned["counts"]["reserved"] == 1

    # Before the plan: the subnet's pools existed (made with it), nothing else did.
    early = await _map(viewer, subnet, at=iso(before_plan))
    assert early["addresses"]["rows"] == []
    assert [r["state"] for r in early["ranges"]] == ["free", "pool", "free"]


async def test_map_errors(viewer, net):
    missing = await viewer.get(f"/subnets/{uuid.uuid4()}/history")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    for params, message in (({"at": "soon"}, "at: 'soon'"),
                            ({"tz": "Nowhere/Land"}, "'Nowhere/Land'"),
                            ({"ip": "127.77.1.1"}, "ip: unknown field")):
        reply = await viewer.get(f"/subnets/{net.subnet_id}/history", params=params)
        assert reply.status_code == 400 and message in reply.json()["error"]["message"]
