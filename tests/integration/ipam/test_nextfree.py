"""Next free address against a brute-force answer on dense, random subnets (windowed reads)."""

from __future__ import annotations

import ipaddress
import random
import uuid

from tests.integration.ipam.helpers import subnet


async def _fill(conn, subnet_id: uuid.UUID, cidr: str, seed: int) -> set[int]:
    """Random dense occupancy; returns every address next-free must avoid."""
    rng = random.Random(seed)
    net = ipaddress.IPv4Network(cidr)
    base = int(net.network_address)
    taken = {base, base + net.num_addresses - 1, base + 1}  # network, broadcast, gateway
    first_gap = rng.randrange(800, 960)  # every table holds more than one chunk (256)
    dense = list(range(base + 2, base + first_gap))
    rng.shuffle(dense)
    cut = len(dense) // 3
    pool = (base + first_gap + 1, base + first_gap + 40)
    await conn.execute(
        "INSERT INTO pools (subnet_id, name, start_ip, end_ip) VALUES ($1, 'p', $2, $3)",
        subnet_id, ipaddress.IPv4Address(pool[0]), ipaddress.IPv4Address(pool[1]))
    taken |= set(range(pool[0], pool[1] + 1))
    await conn.executemany(
        "INSERT INTO reservations (subnet_id, ip, mac) VALUES ($1, $2, $3::macaddr)",
        [(subnet_id, ipaddress.IPv4Address(a), f"02:00:00:00:{(a >> 8) & 255:02x}:{a & 255:02x}")
         for a in dense[:cut]])
    await conn.executemany(
        "INSERT INTO assignments (subnet_id, ip, hostname) VALUES ($1, $2, 'h')",
        [(subnet_id, ipaddress.IPv4Address(a)) for a in dense[cut:2 * cut]])
    await conn.executemany(
        """INSERT INTO leases (subnet_id, ip, state, client_key, expires_at)
           VALUES ($1, $2, $3, $4, now() + interval '1 hour')""",
        [(subnet_id, ipaddress.IPv4Address(a), rng.choice(["active", "offered", "declined"]),
          a.to_bytes(4, "big")) for a in dense[2 * cut:]])
    taken |= set(dense)
    # Ended leases above the gap do not hold their address.
    await conn.execute(
        """INSERT INTO leases (subnet_id, ip, state, client_key, expires_at)
           VALUES ($1, $2, 'expired', '\\x01', now())""",
        subnet_id, ipaddress.IPv4Address(base + first_gap))
    return taken


async def test_next_free_matches_brute_force(operator, viewer, db):
    for seed in range(3):
        s = await subnet(operator, f"10.2{seed}.0.0/22", parent=f"10.2{seed}.0.0/16",
                         gateway=f"10.2{seed}.0.1")
        taken = await db.run(_fill, uuid.UUID(s["id"]), s["cidr"], seed)
        base = int(ipaddress.IPv4Network(s["cidr"]).network_address)
        expected = next(a for a in range(base, base + 1024) if a not in taken)
        got = (await viewer.get(f"/subnets/{s['id']}/next-free-ip")).json()["ip"]
        assert got == str(ipaddress.IPv4Address(expected)), seed
