"""A scenario through every rule of docs/api-ipam.md: exact status and error code each time."""

from __future__ import annotations

from tests.integration.ipam.helpers import created, error_of, prefix, subnet

DEFAULT_TENANT = "00000000-0000-7000-8000-000000000001"


async def test_plan_rules(operator, anon, viewer, admin):
    # §2: every create takes an optional tenant_id; left out, the default tenant is used.
    p = await prefix(operator, "10.20.0.0/16", description="site A")
    assert p["tenant_id"] == DEFAULT_TENANT and p["cidr"] == "10.20.0.0/16"
    error_of(await operator.post("/prefixes", json={
        "cidr": "10.21.0.0/16", "tenant_id": "01a00000-0000-7000-8000-000000000000"}),
        422, "validation_error")
    error_of(await operator.post("/prefixes", json={"cidr": "10.20.0.0/16"}), 409, "conflict")
    message = error_of(await operator.post("/prefixes", json={"cidr": "10.20.0.1/16"}),
                       422, "validation_error")
    assert message.startswith("cidr:") and "10.20.0.0/16" in message

    # Subnet: inside its prefix; defaults; the gateway is a host of the subnet; its DDNS
    # references name a DNS server of its adapter and a zone that server holds.
    dns = created(await admin.post("/dns-servers", json={
        "name": "ns1", "adapter": "bind_tsig", "address": "127.0.0.1",
        "tsig_key_name": "ddns-key", "secret_ref": "env:DDNS_KEY"}))
    created(await operator.post("/dns-zones", json={"name": "lan.example.com",
                                                    "server_id": dns["id"]}))
    s = created(await operator.post("/subnets", json={
        "prefix_id": p["id"], "cidr": "10.20.1.0/24", "gateway": "10.20.1.1",
        "next_server": "10.20.1.5", "boot_file": "pxelinux.0", "ntp_servers": ["10.20.1.6"],
        "ddns_adapter": "bind_tsig", "ddns_server_id": dns["id"],
        "ddns_zone": "Lan.Example.com."}))
    assert s["lease_time_seconds"] == 86400 and s["dhcp_enabled"] is True
    assert s["tenant_id"] == DEFAULT_TENANT and s["ddns_zone"] == "lan.example.com"
    assert s["ntp_servers"] == ["10.20.1.6"] and s["next_server"] == "10.20.1.5"
    body = {"prefix_id": p["id"]}
    assert "cidr:" in error_of(await operator.post("/subnets", json={
        **body, "cidr": "10.99.1.0/24"}), 422, "validation_error")
    assert "overlaps" in error_of(await operator.post("/subnets", json={
        **body, "cidr": "10.20.1.128/25"}), 409, "conflict")
    for gateway, words in (("10.20.3.1", "outside"), ("10.20.2.0", "network address"),
                           ("10.20.2.255", "broadcast")):
        message = error_of(await operator.post("/subnets", json={
            **body, "cidr": "10.20.2.0/24", "gateway": gateway}), 422, "validation_error")
        assert message.startswith("gateway:") and words in message
    assert error_of(await operator.post("/subnets", json={
        **body, "cidr": "10.20.2.0/24", "ddns_adapter": "nsupdate"}),
        422, "validation_error").startswith("ddns_adapter")
    assert error_of(await operator.post("/subnets", json={
        **body, "cidr": "10.20.2.0/24", "ddns_adapter": "bind_tsig"}),
        422, "validation_error").startswith("ddns_zone")
    error_of(await operator.post("/subnets", json={**body, "cidr": "10.20.2.0/24",
                                                   "lease_time_seconds": 0}),
             422, "validation_error")

    # Another tenant's subnets may overlap this tenant's (separate address spaces).
    t = created(await operator.post("/tenants", json={"name": "customer-b"}))
    pb = await prefix(operator, "10.20.0.0/16", tenant_id=t["id"])
    sb = created(await operator.post("/subnets", json={"prefix_id": pb["id"],
                                                       "cidr": "10.20.1.0/24"}))
    assert sb["tenant_id"] == t["id"]
    assert error_of(await operator.post("/subnets", json={
        "prefix_id": pb["id"], "cidr": "10.20.5.0/24", "tenant_id": DEFAULT_TENANT}),
        422, "validation_error").startswith("tenant_id")

    sid = s["id"]
    # Pools: inside the subnet; a pool overlapping a pool is 409 conflict.
    pool = created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.199"}))
    assert pool["size"] == 100 and pool["tenant_id"] == DEFAULT_TENANT
    assert error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "10.20.1.150", "end_ip": "10.20.1.250"}),
        409, "conflict").startswith("start_ip/end_ip")
    assert error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "10.20.1.200", "end_ip": "10.20.2.10"}),
        422, "validation_error").startswith("end_ip")
    assert error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "10.20.1.220", "end_ip": "10.20.1.210"}),
        422, "validation_error").startswith("end_ip")
    assert "gateway" in error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "10.20.1.1", "end_ip": "10.20.1.9"}), 409, "conflict")

    # Excludes: inside the subnet; one address is start_ip == end_ip; no overlaps.
    single = created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.20", "end_ip": "10.20.1.20"}))
    assert single["size"] == 1
    created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.30", "end_ip": "10.20.1.39"}))
    error_of(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.35", "end_ip": "10.20.1.40"}), 409, "conflict")
    error_of(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.0.250", "end_ip": "10.20.1.5"}), 422, "validation_error")

    # Reservations, rules 1-4.
    res = f"/subnets/{sid}/reservations"
    assert "mac" in error_of(await operator.post(res, json={"ip": "10.20.1.50"}),
                             422, "validation_error")
    r = created(await operator.post(res, json={"ip": "10.20.1.50",
                                               "mac": "AA-BB-CC-DD-EE-50"}))
    assert r["mac"] == "aa:bb:cc:dd:ee:50"
    assert error_of(await operator.post(res, json={"ip": "10.20.1.50",
                                                   "mac": "aa:bb:cc:dd:ee:51"}),
                    409, "conflict").startswith("ip")
    assert error_of(await operator.post(res, json={"ip": "10.20.1.51",
                                                   "mac": "aabb.ccdd.ee50"}),
                    409, "conflict").startswith("mac")
    assert "exclude" in error_of(await operator.post(res, json={
        "ip": "10.20.1.33", "mac": "aa:bb:cc:dd:ee:52"}), 409, "conflict")
    assert "six octets" in error_of(await operator.post(res, json={
        "ip": "10.20.1.52", "mac": "01:aa:bb:cc:dd:ee:52"}), 422, "validation_error")
    assert error_of(await operator.post(res, json={"ip": "10.20.2.52",
                                                   "mac": "aa:bb:cc:dd:ee:53"}),
                    422, "validation_error").startswith("ip")
    by_duid = created(await operator.post(res, json={
        "ip": "10.20.1.53", "duid": "00030001AABBCCDDEE53", "hostname": "duid-host"}))
    assert by_duid["duid"] == "00:03:00:01:aa:bb:cc:dd:ee:53" and by_duid["mac"] is None
    error_of(await operator.post(res, json={"ip": "10.20.1.54", "duid": "00:09:01"}),
             422, "validation_error")
    # The exclude rule also holds the other way round.
    assert "reservation" in error_of(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.50", "end_ip": "10.20.1.50"}), 409, "conflict")
    # The same MAC in another subnet is fine (unique per subnet).
    s2 = await subnet(operator, "10.20.9.0/24")
    created(await operator.post(f"/subnets/{s2['id']}/reservations", json={
        "ip": "10.20.9.50", "mac": "aa:bb:cc:dd:ee:50"}))

    # Options: payload shape per code; server-owned codes name the field to use instead.
    opt = f"/subnets/{sid}/options"
    created(await operator.post(opt, json={"code": 6, "payload": {"addresses": ["10.20.1.53"]}}))
    assert created(await operator.post(opt, json={
        "code": 15, "payload": {"value": "LAN.example.com"}}))["payload"] == {
        "value": "lan.example.com"}
    created(await operator.post(opt, json={"code": 42, "payload": {"addresses": ["10.0.0.1"]}}))
    created(await operator.post(opt, json={"code": 43, "payload": {"hex": "01:02:03"},
                                           "vendor_class": "PXEClient"}))
    created(await operator.post(opt, json={"code": 43, "payload": {"hex": "09"}}))
    error_of(await operator.post(opt, json={"code": 6, "payload": {"addresses": ["10.0.0.2"]}}),
             409, "conflict")
    for code, field in ((3, "gateway"), (51, "lease_time_seconds"), (1, "cidr"),
                        (67, "boot_file"), (66, "next_server")):
        message = error_of(await operator.post(opt, json={"code": code, "payload": {"hex": "00"}}),
                           422, "validation_error")
        assert message.startswith("code:") and field in message
    assert error_of(await operator.post(opt, json={"code": 6, "payload": {"value": "x"}}),
                    422, "validation_error").startswith("payload")
    assert error_of(await operator.post(opt, json={
        "code": 6, "payload": {"addresses": ["10.0.0.9"]}, "vendor_class": "x"}),
        422, "validation_error").startswith("vendor_class")

    # Client classes: the three match kinds; a pool refers to one.
    klass = created(await operator.post("/client-classes", json={
        "name": "phones", "match": "mac_prefix", "value": "00-1A-2B"}))
    assert klass["value"] == "00:1a:2b"
    error_of(await operator.post("/client-classes", json={
        "name": "x", "match": "hostname", "value": "a"}), 422, "validation_error")
    created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "phones", "start_ip": "10.20.1.200", "end_ip": "10.20.1.209",
        "class_id": klass["id"]}))
    assert "pool" in error_of(await operator.delete(f"/client-classes/{klass['id']}"),
                              409, "conflict")

    # A subnet with dhcp_enabled=false has no pools.
    vlan = await subnet(operator, "10.20.4.0/24", dhcp_enabled=False)
    assert "dhcp_enabled" in error_of(await operator.post(f"/subnets/{vlan['id']}/pools", json={
        "name": "x", "start_ip": "10.20.4.10", "end_ip": "10.20.4.20"}), 409, "conflict")
    assert "pool" in error_of(await operator.patch(f"/subnets/{sid}", json={
        "dhcp_enabled": False}), 409, "conflict")

    # Deleting what still holds children: 409 naming what is inside.
    message = error_of(await operator.delete(f"/subnets/{sid}"), 409, "conflict")
    assert "pools" in message and "reservations" in message and "options" in message
    assert "subnet" in error_of(await operator.delete(f"/prefixes/{p['id']}"), 409, "conflict")
    assert "default tenant" in error_of(await operator.delete(f"/tenants/{DEFAULT_TENANT}"),
                                        409, "conflict")
    assert "prefix" in error_of(await operator.delete(f"/tenants/{t['id']}"), 409, "conflict")

    # §5 and §7: 401 without or with a bad token, 403 for a role that may not write.
    error_of(await anon.get("/prefixes"), 401, "unauthorized")
    error_of(await anon.get("/prefixes", headers={"Authorization": "Bearer service_live_nope"}),
             401, "unauthorized")
    error_of(await viewer.post("/prefixes", json={"cidr": "10.30.0.0/16"}), 403, "forbidden")
    assert (await viewer.get(f"/subnets/{sid}")).status_code == 200
    # Unknown fields and wrong types are refused, naming the field.
    assert error_of(await operator.post("/prefixes", json={"cidr": "10.31.0.0/16", "vrf": "x"}),
                    422, "validation_error").startswith("vrf")
    error_of(await operator.post("/subnets", json={**body, "cidr": "10.20.6.0/24",
                                                   "lease_time_seconds": "3600"}),
             422, "validation_error")
    error_of(await operator.get("/subnets/01a00000-0000-7000-8000-000000000000"),
             404, "not_found")
    error_of(await operator.get("/subnets/not-a-uuid"), 404, "not_found")
