"""Small builders for IPAM tests: a prefix, a subnet, and assertions on the error envelope."""

from __future__ import annotations

from typing import Any

import httpx


def error_of(response: httpx.Response, status: int, code: str) -> str:
    """Assert the exact status and error code; return the message."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    return body["error"]["message"]


def created(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return response.json()


async def prefix(client: httpx.AsyncClient, cidr: str = "10.20.0.0/16", **extra: Any) -> dict:
    return created(await client.post("/prefixes", json={"cidr": cidr, **extra}))


async def subnet(
    client: httpx.AsyncClient, cidr: str = "10.20.1.0/24", *, parent: str = "10.20.0.0/16",
    **extra: Any,
) -> dict:
    found = (await client.get("/prefixes", params={"cidr": parent})).json()["items"]
    owner = found[0] if found else await prefix(client, parent)
    body = {"prefix_id": owner["id"], "cidr": cidr, **extra}
    return created(await client.post("/subnets", json=body))


async def insert_lease(
    conn: Any, subnet_id: Any, ip: str, state: str = "active", mac: str | None = None,
    duid: str | None = None, hostname: str | None = None, fqdn: str | None = None,
) -> Any:
    """A lease row as the DHCP server writes it (tests only: IPAM never writes leases).

    Positional arguments only after conn (Database.run passes them through)."""
    key = bytes.fromhex((mac or duid or "02:00:00:00:00:00").replace(":", ""))
    return await conn.fetchval(
        """INSERT INTO leases (subnet_id, ip, state, client_key, mac, duid, hostname, fqdn,
                               expires_at)
           VALUES ($1, $2::inet, $3, $4, $5::macaddr, $6, $7, $8, now() + interval '1 hour')
           RETURNING lease_id""",
        subnet_id, ip, state, key, mac, duid, hostname, fqdn,
    )
