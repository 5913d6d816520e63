"""A subnet's ping check settings (docs/api-ipam.md, "Ping check"): stored, shown, validated
on create and change (422 naming the field), IPv4 only; read by the DHCP plan; a conflict's
lease shown as one."""

from __future__ import annotations

from typing import Any

import httpx

from ipamd import runtime
from ipamd.dhcp import plan_loader
from ipamd.dhcp.plan import build
from tests.integration.ipam.helpers import created, error_of, prefix, subnet


async def test_off_by_default_then_stored_shown_and_changed(operator: httpx.AsyncClient) -> None:
    plain = await subnet(operator, "10.20.1.0/24")
    assert (plain["ping_check"], plain["ping_timeout_ms"]) == (False, 500)
    s = await subnet(operator, "10.20.2.0/24", ping_check=True, ping_timeout_ms=250)
    assert (s["ping_check"], s["ping_timeout_ms"]) == (True, 250)
    path = f"/subnets/{s['id']}"
    assert (await operator.get(path)).json()["ping_timeout_ms"] == 250
    changed = await operator.patch(path, json={"ping_timeout_ms": 5000})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["ping_check"], changed.json()["ping_timeout_ms"]) == (True, 5000)
    off = await operator.patch(path, json={"ping_check": False})
    assert off.status_code == 200 and off.json()["ping_check"] is False


async def test_bad_values_are_refused_naming_the_field(operator: httpx.AsyncClient) -> None:
    p = await prefix(operator, "10.20.0.0/16")
    body = {"prefix_id": p["id"], "cidr": "10.20.3.0/24"}
    for field, value in (("ping_timeout_ms", 99), ("ping_timeout_ms", 5001),
                         ("ping_timeout_ms", "500"), ("ping_timeout_ms", None),
                         ("ping_timeout_ms", 2.5), ("ping_check", "yes"),
                         ("ping_check", None), ("ping_check", 1)):
        message = error_of(await operator.post("/subnets", json={**body, field: value}),
                           422, "validation_error")
        assert message.startswith(field), (field, value, message)
    s = created(await operator.post("/subnets", json=body))
    for field, value in (("ping_timeout_ms", 0), ("ping_check", None)):
        message = error_of(await operator.patch(f"/subnets/{s['id']}", json={field: value}),
                           422, "validation_error")
        assert message.startswith(field), (field, value, message)


async def test_an_ipv6_subnet_refuses_the_ping_check(operator: httpx.AsyncClient) -> None:
    p = await prefix(operator, "2001:db8::/32")
    message = error_of(await operator.post("/subnets", json={
        "prefix_id": p["id"], "cidr": "2001:db8:1::/64", "ping_check": True}),
        422, "validation_error")
    assert message.startswith("ping_check:") and "DHCPv4" in message
    s = created(await operator.post("/subnets", json={"prefix_id": p["id"],
                                                      "cidr": "2001:db8:2::/64"}))
    assert s["ping_check"] is False
    assert error_of(await operator.patch(f"/subnets/{s['id']}", json={"ping_check": True}),
                    422, "validation_error").startswith("ping_check:")


async def test_the_openapi_document_names_the_fields(anon: httpx.AsyncClient) -> None:
    schemas = (await anon.get("/openapi.json")).json()["components"]["schemas"]
    for model in ("SubnetCreate", "SubnetPatch", "SubnetOut"):
        assert {"ping_check", "ping_timeout_ms"} <= set(schemas[model]["properties"]), model
    assert "ping_conflict" in schemas["LeaseOut"]["properties"]


async def test_the_dhcp_plan_reads_the_timeout_only_when_on(
    operator: httpx.AsyncClient, appliance: runtime.Running,
) -> None:
    on = await subnet(operator, "10.20.4.0/24", ping_check=True, ping_timeout_ms=750)
    off = await subnet(operator, "10.20.5.0/24", ping_timeout_ms=750)
    rows: dict[str, Any] = await appliance.state.db.run(plan_loader.load_rows)
    plan = build(rows)
    by_id = {str(k): v for k, v in plan.subnets.items()}
    assert by_id[on["id"]].ping_timeout == 0.75
    assert by_id[off["id"]].ping_timeout == 0.0
