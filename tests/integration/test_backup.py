"""`ipamd backup` → wipe → `ipamd restore` on the real appliance (runtime + DHCP + API): every
list the API serves is identical after, leases keep their state and history and renew; a
newer-schema backup is refused; a restore that fails half way changes nothing."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd.config import parse
from ipamd.db import migrate
from ipamd.db.bridge import run_once
from ipamd.dhcp import options as o
from tests.integration import appliance_data as data
from tests.integration.dhcp.harness import Relay, relay_socket
from tests.support.ports import free_port

pytestmark = pytest.mark.slow


async def ipamd(config_file: Path, *args: str) -> tuple[int, str, str]:
    """The real command, as an operator runs it."""
    result = await trio.run_process(
        [sys.executable, "-m", "ipamd", "--config", str(config_file), *args],
        capture_stdout=True, capture_stderr=True, check=False,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def _recreate(admin_dsn: str, name: str) -> None:
    """The wipe: the database dropped and made again, empty (a fresh appliance's)."""
    async def go(conn: Any) -> None:
        await conn.execute(f'DROP DATABASE "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')

    await run_once(admin_dsn, go)


async def _break_foreign_key(dsn: str) -> None:
    """An exclude pointing at no subnet, slipped past the foreign key: a dump of this replays
    its data fine and fails only at the very end, when the key is re-created."""
    async def go(conn: Any) -> None:
        await conn.execute("SET session_replication_role = replica")
        await conn.execute(
            """INSERT INTO excludes (subnet_id, start_ip, end_ip)
               VALUES ('00000000-0000-7000-8000-0000000000ff', '127.77.9.9', '127.77.9.9')""")

    await run_once(dsn, go)


def _with_schema(source: Path, target: Path, schema: int) -> None:
    """A copy of a backup whose manifest claims ``schema``."""
    with tarfile.open(source) as tar_in, tarfile.open(target, "w") as tar_out:
        for info in tar_in:
            raw = tar_in.extractfile(info).read()  # type: ignore[union-attr]
            if info.name == "manifest.json":
                manifest = json.loads(raw)
                manifest["schema_version"] = schema
                raw = json.dumps(manifest).encode()
                info.size = len(raw)
            tar_out.addfile(info, io.BytesIO(raw))


async def test_backup_wipe_restore_round_trip(pg: Any, dsn: str, nursery: trio.Nursery,
                                              tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "hosts").write_text("127.0.0.1 fine.test\n")
    sock = relay_socket()
    dhcp_port = free_port()
    raw = data.appliance_config(dsn, state_dir, sock.getsockname()[1], dhcp_port)
    config_file = tmp_path / "ipamd.toml"
    config_file.write_text(data.toml(raw))
    config = parse(raw)
    relay = Relay(trio.socket.from_stdlib_socket(sock), ("127.0.0.1", dhcp_port))
    nursery.start_soon(relay.run)

    running = await data.start(nursery, config)
    async with data.client(running) as anon:
        secret = data.ok(await anon.post("/tokens", json={"name": "first", "role": "admin"}))
    async with data.client(running, secret["token"]) as admin:
        ids = await data.fill(admin)
        await data.wait_plan(running, ids["subnet_id"])
        kept = await data.dora(relay, 1)
        gone = await data.dora(relay, 2)
        await data.release(relay, 2, gone)
        with trio.fail_after(10):  # the release is committed by the committer
            while not any(lease["state"] == "released"
                          for lease in (await admin.get("/leases")).json()["items"]):
                await trio.sleep(0.05)
        before = await data.lists(admin, ids["subnet_id"])
    await data.stop(running)
    for path in ("/prefixes", "/subnets", "/leases", "/audit", "/webhooks", "/tokens",
                 "/client-classes", "/subnets/{subnet_id}/reservations",
                 "/subnets/{subnet_id}/history"):
        assert before.get(path), f"{path} is empty or missing: nothing to compare"
    states = {lease["ip"]: lease["state"] for lease in before["/leases"]}
    assert states[kept] == "active" and states[gone] == "released"
    assert before[f"/history?ip={gone}"][0]["state"] == "released"
    tls = {name: (state_dir / "tls" / name).read_bytes() for name in ("cert.pem", "key.pem")}

    backup_file = tmp_path / "ipamd.backup"
    code, out, err = await ipamd(config_file, "backup", str(backup_file))
    assert code == 0, err
    assert os.stat(backup_file).st_mode & 0o777 == 0o600
    with tarfile.open(backup_file) as tar:
        assert sorted(tar.getnames()) == [
            "ipamd.dump", "manifest.json", "tls/cert.pem", "tls/key.pem"]
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest["schema_version"] == migrate.latest()
    assert {"ipamd_version", "node", "created_at"} <= set(manifest)
    assert json.loads(out)["schema_version"] == migrate.latest()

    # A newer schema is refused before anything is touched.
    newer = tmp_path / "newer.backup"
    _with_schema(backup_file, newer, migrate.latest() + 1)
    code, _, err = await ipamd(config_file, "restore", str(newer))
    assert code == 5 and f"knows up to {migrate.latest()}" in err, err
    assert "Nothing was changed" in err

    # Wipe: a fresh appliance (empty database, no TLS pair), then restore.
    name = dsn.rsplit("/", 1)[1]
    await _recreate(pg.dsn("postgres"), name)
    for path in (state_dir / "tls").iterdir():
        path.unlink()
    code, out, err = await ipamd(config_file, "restore", str(backup_file))
    assert code == 0, err
    assert json.loads(out)["migrated"] == []
    assert {n: (state_dir / "tls" / n).read_bytes() for n in tls} == tls
    assert (state_dir / "tls/key.pem").stat().st_mode & 0o777 == 0o600

    running = await data.start(nursery, config)
    async with data.client(running, secret["token"]) as admin:
        after = await data.lists(admin, ids["subnet_id"])
        assert after == before
        await data.wait_plan(running, ids["subnet_id"])
        # The restored lease is known: its renewal is acknowledged, not NAKed.
        assert await data.renew(relay, 1, kept) == o.ACK
    await data.stop(running)

    # A restore that fails at its very end (a foreign key re-created over a bad row) rolls
    # back whole: the database is as it was.
    broken_source = tmp_path / "broken.backup"
    await _break_foreign_key(dsn)
    code, _, err = await ipamd(config_file, "backup", str(broken_source))
    assert code == 0, err

    async def drop_bad(conn: Any) -> None:
        await conn.execute("DELETE FROM excludes WHERE start_ip = '127.77.9.9'")

    await run_once(dsn, drop_bad)
    code, _, err = await ipamd(config_file, "restore", str(broken_source))
    assert code == 5 and "rolled back, nothing changed" in err, err
    running = await data.start(nursery, config)
    async with data.client(running, secret["token"]) as admin:
        again = await data.lists(admin, ids["subnet_id"])
    await data.stop(running)
    # The renewal above moved the lease on; everything else is exactly the restored state.
    assert {k: v for k, v in again.items() if "lease" not in k and "history" not in k} == {
        k: v for k, v in before.items() if "lease" not in k and "history" not in k}

    async def bad_rows(conn: Any) -> Any:
        return await conn.fetchval("SELECT count(*) FROM excludes WHERE start_ip = '127.77.9.9'")

    assert await run_once(dsn, bad_rows) == 0
    sock.close()
