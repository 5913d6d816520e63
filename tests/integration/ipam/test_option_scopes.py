"""Options at every scope (docs/api-ipam.md, "Option scopes"): client classes and reservations
carry options and next_server/boot_file; classes match more (arch, circuit/remote id) and have
a priority; GET /subnets/{id}/effective-options answers what a client gets, and from where."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.ipam.helpers import created, error_of, prefix, subnet

DNS = {"code": 6, "payload": {"addresses": ["10.20.1.53"]}}


async def _klass(client: httpx.AsyncClient, name: str, match: str, value: str,
                 **extra: Any) -> dict[str, Any]:
    return created(await client.post("/client-classes", json={
        "name": name, "match": match, "value": value, **extra}))


async def test_a_class_name_is_unique_in_its_tenant(operator):
    await _klass(operator, "pxe", "arch", "0")
    other = await _klass(operator, "uefi", "arch", "7")
    for reply in (await operator.post("/client-classes", json={
                      "name": "pxe", "match": "arch", "value": "9"}),
                  await operator.patch(f"/client-classes/{other['id']}", json={"name": "pxe"})):
        assert error_of(reply, 409, "conflict").startswith(
            "name: this tenant already has the client class 'pxe'")
    renamed = await operator.patch(f"/client-classes/{other['id']}", json={"name": "uefi"})
    assert renamed.status_code == 200, renamed.text  # its own name is no conflict


async def test_class_fields_and_new_match_kinds(operator):
    uefi = await _klass(operator, "uefi", "arch", "0007", priority=10,
                        next_server="10.20.0.69", boot_file="grubx64.efi")
    assert (uefi["value"], uefi["priority"]) == ("7", 10)
    assert (uefi["next_server"], uefi["boot_file"]) == ("10.20.0.69", "grubx64.efi")
    port = await _klass(operator, "port", "circuit_id", "65747437")
    assert port["value"] == "65:74:74:37" and port["priority"] == 100
    assert port["next_server"] is None and port["boot_file"] is None
    assert (await _klass(operator, "sw", "remote_id", "00-11-22"))["value"] == "00:11:22"
    changed = await operator.patch(f"/client-classes/{uefi['id']}",
                                   json={"priority": 5, "boot_file": None})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["priority"], changed.json()["boot_file"]) == (5, None)

    for body, field in (({"match": "arch", "value": "65536"}, "value"),
                        ({"match": "arch", "value": "x64"}, "value"),
                        ({"match": "circuit_id", "value": "not hex"}, "value"),
                        ({"match": "arch", "value": "7", "priority": -1}, "priority"),
                        ({"match": "arch", "value": "7", "next_server": "boot.lan"},
                         "next_server"),
                        ({"match": "client_id", "value": "7"}, "match")):
        message = error_of(await operator.post("/client-classes", json={"name": "bad", **body}),
                           422, "validation_error")
        assert message.startswith(field), message


async def test_class_options_mirror_the_subnets(operator):
    pxe = await _klass(operator, "pxe", "vendor_class", "PXEClient")
    path = f"/client-classes/{pxe['id']}/options"
    option = created(await operator.post(path, json=DNS))
    assert option["class_id"] == pxe["id"] and option["subnet_id"] is None
    assert option["reservation_id"] is None and option["tenant_id"] == pxe["tenant_id"]
    vendor = created(await operator.post(path, json={
        "code": 43, "payload": {"hex": "06:01:08"}, "vendor_class": "PXEClient:Arch:00007"}))
    page = (await operator.get(path)).json()
    assert [o["id"] for o in page["items"]] == [option["id"], vendor["id"]]
    assert [o["code"] for o in (await operator.get(path, params={"code": 43})).json()["items"]] \
        == [43]
    assert "client class already has option 6" in error_of(
        await operator.post(path, json=DNS), 409, "conflict")
    assert error_of(await operator.post(path, json={"code": 3, "payload": {"addresses": [
        "10.20.1.1"]}}), 422, "validation_error").startswith("code")
    assert error_of(await operator.post(path, json={**DNS, "vendor_class": "x"}),
                    422, "validation_error").startswith("vendor_class")
    item = f"/options/{option['id']}"
    patched = await operator.patch(item, json={"payload": {"addresses": ["10.20.1.54"]}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["payload"] == {"addresses": ["10.20.1.54"]}
    assert "already has option 43" in error_of(
        await operator.patch(item, json={"code": 43, "payload": {"hex": "01"},
                                         "vendor_class": "PXEClient:Arch:00007"}),
        409, "conflict")
    missing = "/client-classes/0192f000-0000-7000-8000-00000000dead/options"
    error_of(await operator.post(missing, json=DNS), 404, "not_found")
    error_of(await operator.get(missing), 404, "not_found")
    # A class's options go with it, each delete audited.
    assert (await operator.delete(f"/client-classes/{pxe['id']}")).status_code == 204
    error_of(await operator.get(item), 404, "not_found")
    trail = (await operator.get("/audit", params={"object_id": option["id"]})).json()["items"]
    assert sorted(e["action"] for e in trail) == ["create", "delete", "update"]


async def test_reservation_options_and_pxe_fields(operator):
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1")
    res = created(await operator.post(f"/subnets/{s['id']}/reservations", json={
        "ip": "10.20.1.50", "mac": "02:00:00:00:00:50", "boot_file": "own.pxe",
        "next_server": "10.20.0.70"}))
    assert (res["boot_file"], res["next_server"]) == ("own.pxe", "10.20.0.70")
    path = f"/reservations/{res['id']}/options"
    option = created(await operator.post(path, json=DNS))
    assert option["reservation_id"] == res["id"] and option["tenant_id"] == s["tenant_id"]
    assert [o["id"] for o in (await operator.get(path)).json()["items"]] == [option["id"]]
    assert error_of(await operator.patch(f"/reservations/{res['id']}",
                                         json={"next_server": "nope"}),
                    422, "validation_error").startswith("next_server")
    # The subnet's own list holds only the subnet's options.
    assert (await operator.get(f"/subnets/{s['id']}/options")).json()["items"] == []
    other = created(await operator.post(path, json={"code": 15, "payload": {"value": "x.lan"}}))
    assert (await operator.delete(f"/options/{option['id']}")).status_code == 204
    assert (await operator.delete(f"/reservations/{res['id']}")).status_code == 204
    error_of(await operator.get(f"/options/{other['id']}"), 404, "not_found")
    error_of(await operator.get(path), 404, "not_found")

    await prefix(operator, "2001:db8::/32")
    v6 = await subnet(operator, "2001:db8:1::/64", parent="2001:db8::/32")
    res6 = created(await operator.post(f"/subnets/{v6['id']}/reservations", json={
        "ip": "2001:db8:1::50", "duid": "00:03:00:01:02:00:00:00:00:51"}))
    assert error_of(await operator.post(f"/reservations/{res6['id']}/options", json=DNS),
                    422, "validation_error").startswith("reservation_id")
    assert error_of(await operator.patch(f"/reservations/{res6['id']}",
                                         json={"boot_file": "x.efi"}),
                    422, "validation_error").startswith("boot_file")


async def test_effective_options_name_their_scope(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1", boot_file="subnet.pxe")
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/options", json=DNS))
    created(await operator.post(f"/subnets/{sid}/options", json={
        "code": 15, "payload": {"value": "lan.example"}}))
    uefi = await _klass(operator, "uefi", "arch", "7", boot_file="grubx64.efi", priority=10)
    x64 = await _klass(operator, "x64-late", "arch", "7", boot_file="late.efi", priority=20)
    created(await operator.post(f"/client-classes/{uefi['id']}/options", json={
        "code": 6, "payload": {"addresses": ["10.20.1.60"]}}))
    res = created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.50", "mac": "02:00:00:00:00:50", "hostname": "printer"}))
    created(await operator.post(f"/reservations/{res['id']}/options", json={
        "code": 6, "payload": {"addresses": ["10.20.1.70"]}}))
    path = f"/subnets/{sid}/effective-options"

    plain = (await viewer.get(path, params={"mac": "02:00:00:00:00:01"})).json()
    by_code = {o["code"]: o for o in plain["options"]}
    assert by_code[6]["hex"] == "0a:14:01:35" and by_code[6]["scope"] == "subnet"
    assert by_code[1]["scope"] == "subnet" and by_code[3]["hex"] == "0a:14:01:01"
    assert plain["classes"] == [] and plain["reservation"] is None
    assert plain["boot_file"] == {"value": "subnet.pxe", "scope": "subnet", "scope_id": sid,
                                  "scope_name": None}

    pxe = (await viewer.get(path, params={"mac": "02:00:00:00:00:01", "arch": 7})).json()
    assert [c["name"] for c in pxe["classes"]] == ["uefi", "x64-late"]
    by_code = {o["code"]: o for o in pxe["options"]}
    assert (by_code[6]["scope"], by_code[6]["scope_name"]) == ("class", "uefi")
    assert by_code[15]["scope"] == "subnet"
    assert pxe["boot_file"]["value"] == "grubx64.efi"  # priority 10 beats 20
    assert pxe["boot_file"]["scope_id"] == uefi["id"] != x64["id"]

    own = (await viewer.get(path, params={"mac": "02-00-00-00-00-50", "arch": "7"})).json()
    assert own["reservation"] == {"id": res["id"], "ip": "10.20.1.50"}
    by_code = {o["code"]: o for o in own["options"]}
    assert by_code[6]["hex"] == "0a:14:01:46" and by_code[6]["scope"] == "reservation"
    assert by_code[12]["hex"] == b"printer".hex(":")
    assert own["boot_file"]["scope_name"] == "uefi"  # the reservation sets none


async def test_effective_options_refuse_bad_questions(viewer, operator):
    s = await subnet(operator, "10.20.1.0/24")
    path = f"/subnets/{s['id']}/effective-options"
    assert (await viewer.get(path, params={"mac": "02:00:00:00:00:01"})).status_code == 200
    for params, field in (({}, "mac"), ({"mac": "01:aa:bb:cc:dd:ee:ff"}, "mac"),
                          ({"mac": "02:00:00:00:00:01", "arch": "70000"}, "arch"),
                          ({"mac": "02:00:00:00:00:01", "circuit_id": "zz"}, "circuit_id"),
                          ({"mac": "02:00:00:00:00:01", "giaddr": "10.0.0.1"}, "giaddr")):
        response = await viewer.get(path, params=params)
        assert response.status_code in (400, 422), response.text
        assert field in response.json()["error"]["message"], response.text
    error_of(await viewer.get("/subnets/0192f000-0000-7000-8000-00000000dead/effective-options",
                              params={"mac": "02:00:00:00:00:01"}), 404, "not_found")
    await prefix(operator, "2001:db8::/32")
    v6 = await subnet(operator, "2001:db8:1::/64", parent="2001:db8::/32")
    error_of(await viewer.get(f"/subnets/{v6['id']}/effective-options",
                              params={"mac": "02:00:00:00:00:01"}), 422, "validation_error")
