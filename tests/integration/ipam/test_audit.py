"""Every IPAM mutation leaves an audit entry and an ipam.audit event with before and after."""

from __future__ import annotations

from tests.integration.ipam.helpers import created


async def _mutate_everything(op) -> list[tuple[str, str, str]]:
    """Create, update and delete one of each resource; returns (type, id, action) in order."""
    done: list[tuple[str, str, str]] = []

    async def make(kind: str, path: str, body: dict) -> dict:
        item = created(await op.post(path, json=body))
        done.append((kind, item["id"], "create"))
        return item

    async def change(kind: str, path: str, body: dict) -> None:
        response = await op.patch(path, json=body)
        assert response.status_code == 200, response.text
        done.append((kind, response.json()["id"], "update"))

    async def remove(kind: str, path: str, ident: str) -> None:
        response = await op.delete(path)
        assert response.status_code == 204, response.text
        done.append((kind, ident, "delete"))

    t = await make("tenant", "/tenants", {"name": "audited"})
    await change("tenant", f"/tenants/{t['id']}", {"description": "changed"})
    p = await make("prefix", "/prefixes", {"cidr": "10.20.0.0/16"})
    await change("prefix", f"/prefixes/{p['id']}", {"description": "changed"})
    s = await make("subnet", "/subnets", {"prefix_id": p["id"], "cidr": "10.20.1.0/24"})
    await change("subnet", f"/subnets/{s['id']}", {"gateway": "10.20.1.1"})
    c = await make("client_class", "/client-classes", {
        "name": "c", "match": "user_class", "value": "iPXE"})
    await change("client_class", f"/client-classes/{c['id']}", {"value": "gPXE"})
    sid = s["id"]
    children = {
        "pool": ("pools", {"name": "d", "start_ip": "10.20.1.100", "end_ip": "10.20.1.110"},
                 {"class_id": c["id"]}),
        "exclude": ("excludes", {"start_ip": "10.20.1.5", "end_ip": "10.20.1.6"},
                    {"end_ip": "10.20.1.7"}),
        "reservation": ("reservations", {"ip": "10.20.1.50", "mac": "02:00:00:00:00:50"},
                        {"hostname": "cam"}),
        "assignment": ("assignments", {"ip": "10.20.1.60", "hostname": "nas"},
                       {"description": "rack 2"}),
        "option": ("options", {"code": 6, "payload": {"addresses": ["10.20.1.53"]}},
                   {"payload": {"addresses": ["10.20.1.54"]}}),
    }
    for kind, (path, body, patch) in children.items():
        item = await make(kind, f"/subnets/{sid}/{path}", body)
        await change(kind, f"/{path}/{item['id']}", patch)
        await remove(kind, f"/{path}/{item['id']}", item["id"])
    await remove("client_class", f"/client-classes/{c['id']}", c["id"])
    await remove("subnet", f"/subnets/{sid}", sid)
    await remove("prefix", f"/prefixes/{p['id']}", p["id"])
    await remove("tenant", f"/tenants/{t['id']}", t["id"])
    return done


async def _trail(conn):
    entries = await conn.fetch(
        "SELECT * FROM audit_log WHERE object_type <> 'token' ORDER BY id")
    events = await conn.fetch(
        "SELECT payload FROM events WHERE topic = 'ipam.audit' ORDER BY id")
    return entries, [e["payload"] for e in events if e["payload"]["object_type"] != "token"]


async def test_every_mutation_is_audited_with_an_event(operator, tokens, admin, db):
    done = await _mutate_everything(operator)
    entries, events = await db.run(_trail)
    assert [(e["object_type"], e["object_id"], e["action"]) for e in entries] == done
    assert len(events) == len(entries)
    operator_token = next(t for t in (await admin.get("/tokens")).json()["items"]
                          if t["name"] == "operator")
    for entry, event in zip(entries, events, strict=True):
        assert event["id"] == str(entry["id"]) and event["action"] == entry["action"]
        assert event["before"] == entry["before"] and event["after"] == entry["after"]
        assert entry["actor"] == f"token:{operator_token['id']}"
        if entry["action"] == "create":
            assert entry["before"] is None and entry["after"]["id"] == entry["object_id"]
        elif entry["action"] == "update":
            assert entry["before"]["id"] == entry["after"]["id"] == entry["object_id"]
            assert entry["before"] != entry["after"]
        else:
            assert entry["before"]["id"] == entry["object_id"] and entry["after"] is None
    # The audit API shows them too (newest first).
    newest = (await operator.get("/audit", params={"limit": 1})).json()["items"][0]
    assert (newest["object_type"], newest["action"]) == ("tenant", "delete")


async def test_a_refused_mutation_leaves_no_trace(operator, db):
    created(await operator.post("/prefixes", json={"cidr": "10.20.0.0/16"}))
    before = await db.run(_trail)
    refused = await operator.post("/prefixes", json={"cidr": "10.20.0.0/16"})
    assert refused.status_code == 409
    assert await db.run(_trail) == before
