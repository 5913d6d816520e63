"""DNS servers, zones and static records over the API: fields, rules, roles, audit, the
subnets' DDNS references, and the outbox row (kind dns) every static change makes."""

from __future__ import annotations

from tests.integration.ipam.helpers import created, error_of, subnet

BIND = {"name": "ns1", "adapter": "bind_tsig", "address": "127.0.0.1", "port": 5353,
        "tsig_key_name": "ddns-key.", "secret_ref": "env:IPAMD_TEST_TSIG"}


async def _zone(operator, server_id: str, name: str = "lan.example") -> dict:
    return created(await operator.post("/dns-zones", json={"name": name,
                                                            "server_id": server_id}))


async def test_servers_crud_roles_and_secret_refs(operator, viewer, admin):
    # A server makes the appliance use a secret: admins only make and change it, and only
    # they read where its secret lives (core/secret_locations).
    srv = created(await admin.post("/dns-servers", json=BIND,
                                   headers={"Idempotency-Key": "ns1-once"}))
    again = await admin.post("/dns-servers", json=BIND, headers={"Idempotency-Key": "ns1-once"})
    assert again.status_code == 201 and again.json()["id"] == srv["id"]
    assert srv["tsig_key_name"] == "ddns-key" and srv["tsig_algorithm"] == "hmac-sha256"
    assert srv["secret_ref"] == "env:IPAMD_TEST_TSIG" and srv["port"] == 5353
    assert (await admin.get(f"/dns-servers/{srv['id']}")).json() == srv
    for reader in (viewer, operator):
        assert (await reader.get(f"/dns-servers/{srv['id']}")).json() == {
            **srv, "secret_ref": "(redacted)"}
    for writer in (viewer, operator):
        error_of(await writer.post("/dns-servers", json={**BIND, "name": "x"}), 403, "forbidden")
        error_of(await writer.patch(f"/dns-servers/{srv['id']}", json={"port": 1}), 403,
                 "forbidden")
        error_of(await writer.delete(f"/dns-servers/{srv['id']}"), 403, "forbidden")
    operator = admin  # the rest of this test is about the fields, as the admin writes them
    error_of(await operator.post("/dns-servers", json=BIND), 409, "conflict")
    # A secret is never accepted in place of its reference.
    msg = error_of(await operator.post("/dns-servers", json={**BIND, "name": "n2",
                                                             "secret_ref": "c2VjcmV0"}),
                   422, "validation_error")
    assert msg.startswith("secret_ref")
    msg = error_of(await operator.post("/dns-servers", json={**BIND, "name": "n2",
                                                             "address": None}),
                   422, "validation_error")
    assert msg.startswith("address")
    msg = error_of(await operator.post("/dns-servers", json={
        "name": "pdns", "adapter": "powerdns_http", "secret_ref": "env:K"}),
        422, "validation_error")
    assert msg.startswith("api_url")
    # The SSRF rules of webhooks apply to the PowerDNS API URL.
    msg = error_of(await operator.post("/dns-servers", json={
        "name": "pdns", "adapter": "powerdns_http", "secret_ref": "env:K",
        "api_url": "http://169.254.169.254/api/v1"}), 422, "validation_error")
    assert msg.startswith("api_url")
    changed = (await operator.patch(f"/dns-servers/{srv['id']}", json={"port": 5354})).json()
    assert changed["port"] == 5354
    # Audited, with the reference redacted.
    entries = (await admin.get("/audit", params={"object_type": "dns_server"})).json()["items"]
    assert entries and all(e["after"] is None or e["after"]["secret_ref"] == "(redacted)"
                           for e in entries)
    assert (await operator.delete(f"/dns-servers/{srv['id']}")).status_code == 204


async def test_zones_records_and_cname_exclusivity(operator, viewer, admin):
    srv = created(await admin.post("/dns-servers", json=BIND))
    zone = await _zone(operator, srv["id"], "Lan.Example.")
    assert zone["name"] == "lan.example" and zone["kind"] == "forward"
    rev = await _zone(operator, srv["id"], "53.77.10.in-addr.arpa")
    assert rev["kind"] == "reverse"
    named = (await viewer.get("/dns-zones", params={"name": "LAN.example."})).json()["items"]
    assert [z["id"] for z in named] == [zone["id"]]
    error_of(await operator.post("/dns-zones", json={"name": "lan.example",
                                                      "server_id": srv["id"]}), 409, "conflict")
    error_of(await operator.post("/dns-zones", json={
        "name": "x.example", "server_id": "01a00000-0000-7000-8000-00000000dead"}),
        422, "validation_error")
    # The server is in use now.
    error_of(await admin.delete(f"/dns-servers/{srv['id']}"), 409, "conflict")

    rec = f"/dns-zones/{zone['id']}/records"
    www = created(await operator.post(rec, json={"name": "www", "type": "A",
                                                 "value": "10.77.53.80"}))
    assert www["name"] == "www.lan.example" and www["ttl"] is None
    mx = created(await operator.post(rec, json={"name": "@", "type": "MX",
                                                "value": "10 mail"}))
    assert mx["name"] == "lan.example" and mx["value"] == "10 mail.lan.example."
    for bad in ({"name": "www", "type": "A", "value": "10.77.53.300"},
                {"name": "www", "type": "AAAA", "value": "10.77.53.1"},
                {"name": "bad_-name-", "type": "A", "value": "10.77.53.1"},
                {"name": "www.other.example.", "type": "A", "value": "10.77.53.1"},
                {"name": "x", "type": "SRV", "value": "10 5"},
                {"name": "x", "type": "SPF", "value": "v=spf1"}):
        error_of(await operator.post(rec, json=bad), 422, "validation_error")
    error_of(await operator.post(rec, json={"name": "www", "type": "A",
                                            "value": "10.77.53.80"}), 409, "conflict")
    # CNAME exclusivity, both ways, and not at the apex.
    error_of(await operator.post(rec, json={"name": "www", "type": "CNAME",
                                            "value": "web"}), 409, "conflict")
    alias = created(await operator.post(rec, json={"name": "web", "type": "CNAME",
                                                   "value": "www"}))
    assert alias["value"] == "www.lan.example."
    error_of(await operator.post(rec, json={"name": "web", "type": "TXT",
                                            "value": '"hello"'}), 409, "conflict")
    error_of(await operator.post(rec, json={"name": "@", "type": "CNAME",
                                            "value": "www"}), 422, "validation_error")
    error_of(await operator.patch(f"/dns-records/{www['id']}", json={"name": "web"}),
             409, "conflict")
    error_of(await viewer.post(rec, json={"name": "v", "type": "A", "value": "10.77.53.9"}),
             403, "forbidden")
    moved = (await operator.patch(f"/dns-records/{www['id']}",
                                  json={"value": "10.77.53.81", "ttl": 60})).json()
    assert moved["value"] == "10.77.53.81" and moved["ttl"] == 60
    listed = (await viewer.get(rec, params={"limit": 2})).json()
    assert len(listed["items"]) == 2 and listed["next_cursor"]
    # Every static change is an outbox row of kind dns for the zone's server.
    rows = (await viewer.get("/outbox", params={"kind": "dns"})).json()["items"]
    assert len(rows) == 4  # www, mx, web created; www changed
    change = next(r for r in rows if r["dns"]["before"] is not None)
    assert change["target"] == "www.lan.example" and change["dns"]["server_id"] == srv["id"]
    assert change["dns"]["after"]["value"] == "10.77.53.81"
    error_of(await operator.delete(f"/dns-zones/{zone['id']}"), 409, "conflict")
    for r in (www, mx, alias):
        assert (await operator.delete(f"/dns-records/{r['id']}")).status_code == 204
    error_of(await viewer.get(f"/dns-records/{www['id']}"), 404, "not_found")
    assert (await operator.delete(f"/dns-zones/{zone['id']}")).status_code == 204
    entries = (await admin.get("/audit", params={"object_type": "dns_record"})).json()["items"]
    assert len(entries) == 7


async def test_subnet_ddns_references(operator, admin):
    srv = created(await admin.post("/dns-servers", json=BIND))
    pdns = created(await admin.post("/dns-servers", json={
        "name": "pdns", "adapter": "powerdns_http", "secret_ref": "env:K",
        "api_url": "http://127.0.0.1:8081/api/v1"}))
    await _zone(operator, srv["id"], "lan.example")
    await _zone(operator, srv["id"], "20.10.in-addr.arpa")
    await _zone(operator, pdns["id"], "other.example")
    await _zone(operator, srv["id"], "8.b.d.0.1.0.0.2.ip6.arpa")
    good = {"ddns_adapter": "bind_tsig", "ddns_server_id": srv["id"],
            "ddns_zone": "lan.example", "ddns_reverse_zone": "20.10.in-addr.arpa",
            "ddns_ttl": 300}
    s = await subnet(operator, "10.20.1.0/24", **good)
    assert s["ddns_server_id"] == srv["id"] and s["ddns_ttl"] == 300
    for change, field in (({"ddns_zone": "nowhere.example"}, "ddns_zone"),
                          ({"ddns_zone": "other.example"}, "ddns_zone"),
                          ({"ddns_zone": "20.10.in-addr.arpa"}, "ddns_zone"),
                          ({"ddns_adapter": "powerdns_http"}, "ddns_server_id"),
                          ({"ddns_reverse_zone": "9.10.in-addr.arpa"}, "ddns_reverse_zone"),
                          # An IPv4 subnet's PTRs are in in-addr.arpa, not ip6.arpa.
                          ({"ddns_reverse_zone": "8.b.d.0.1.0.0.2.ip6.arpa"},
                           "ddns_reverse_zone")):
        msg = error_of(await operator.patch(f"/subnets/{s['id']}", json=change),
                       422, "validation_error")
        assert msg.startswith(field), (change, msg)
    error_of(await admin.delete(f"/dns-servers/{srv['id']}"), 409, "conflict")
