"""`make ha-lab` (docs/scale-out.md): failover of the database under relayed DHCP load, on one machine.

In network namespaces on 10.77.16.0/24 (a bridge in namespace ``sw``):

    etcd  10.77.16.2          one etcd member (Patroni's leader lock)
    pg1   10.77.16.11         Postgres under Patroni   ┐ synchronous_mode: true,
    pg2   10.77.16.12         Postgres under Patroni   ┘ master_start_timeout: 0
    nodea 10.77.16.21         ipamd run (DHCP on :67)  ┐ database.dsn lists pg1,pg2 with
    nodeb 10.77.16.22         ipamd run (DHCP on :67)  ┘ target_session_attrs=read-write
    relay 10.77.16.129        the load generator, a relay with both nodes as helpers
    hook  10.77.16.30         the HTTPS webhook receiver (``--kill node`` only)

The load generator (``load``) plays CLIENTS DHCP clients behind the relay: each repeats
DISCOVER → (first OFFER) → REQUEST, sent to both helper addresses as a relay does, and
records every Ack (client, address, which node, when the exchange began). After a steady
period the Patroni leader's postmaster is killed with SIGKILL; Patroni promotes the
synchronous replica; both nodes must reconnect without a restart. Then ``check`` compares
every Ack with the database: an Ack whose (address, client) is not an active lease is
lost; an address Acked to two clients is a double allocation.

With ``run --kill node`` the appliance node A (``ipamd run``) is killed with SIGKILL
instead, under the same load: node B must Ack every exchange begun after the kill (the
relay still sends to both helpers), with no Ack lost and none doubled. A webhook on
lease.granted points at the receiver, which is stopped (SIGSTOP: connections hang) from
the start, so both nodes hold claimed outbox rows; it is resumed after the kill, and the
rows node A had claimed must be delivered by node B once their claim times out. Results go to stdout as
JSON (and to --out). Needs root, `patroni`, `etcd-server` (Makefile: LAB_PACKAGES).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support import netns

from bench.appliance import BenchError, ipamd_argv, ipamd_env, write_config

ROOT = Path(__file__).resolve().parents[1]

NET = "10.77.16"
ETCD, PG, NODES, RELAY = f"{NET}.2", {"pg1": f"{NET}.11", "pg2": f"{NET}.12"}, \
    {"nodea": f"{NET}.21", "nodeb": f"{NET}.22"}, f"{NET}.129"
HOOK, HOOK_PORT, HOOK_NAME = f"{NET}.30", 8443, "hook.lab"
HOOK_SECRET_ENV, HOOK_SECRET = "IPAMD_LAB_HOOK_SECRET", "lab-hook-secret"
CLAIM_TIMEOUT = 6.0
CLIENTS = 60
PG_BIN = "/usr/lib/postgresql/15/bin"
PYTHON = sys.executable
SELF = (PYTHON, "-m", "bench.ha_lab")  # this lab's own steps, run in the lab's namespaces


def dsn(database: str = "ipamd") -> str:
    hosts = ",".join(f"{ip}:5432" for ip in PG.values())
    return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"


# --- the load generator (runs inside the relay namespace) ---------------------------------

def cmd_load(args: argparse.Namespace) -> int:
    from tests.unit.dhcp.packets import mac_bytes, request

    from ipamd.dhcp import options as o
    from ipamd.dhcp.codec import parse

    servers = [(ip, 67) for ip in NODES.values()]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((RELAY, 67))
    sock.settimeout(0.05)
    out = open(args.out, "a", buffering=1)  # noqa: SIM115  (one line per Ack, flushed)
    stop_at = time.monotonic() + args.seconds
    # One client at a time per step, round robin over the population: steady, bounded load.
    state: dict[int, dict[str, Any]] = {}
    xid_of: dict[int, int] = {}
    next_xid = 1
    clients = list(range(CLIENTS))
    pending: dict[int, int] = {}  # xid -> client
    while time.monotonic() < stop_at:
        # Start exchanges for idle clients (at most 8 in flight).
        for client in clients:
            if len(pending) >= 8:
                break
            entry = state.setdefault(client, {"phase": "idle"})
            if entry["phase"] == "idle" and time.monotonic() >= entry.get("after", 0):
                next_xid += 1
                xid_of[client] = next_xid
                pending[next_xid] = client
                entry.update(phase="discover", began=time.monotonic(), sent=time.monotonic())
                msg = request(o.DISCOVER, mac_bytes(900_000 + client), xid=next_xid,
                              giaddr=RELAY)
                for server in servers:
                    sock.sendto(msg.to_bytes(), server)
        try:
            data, peer = sock.recvfrom(4096)
        except TimeoutError:
            data = b""
        now = time.monotonic()
        if data:
            reply = parse(data)
            client = pending.get(reply.xid)
            entry = state.get(client) if client is not None else None
            if entry is not None:
                mac = mac_bytes(900_000 + client)
                if entry["phase"] == "discover" and reply.message_type == o.OFFER:
                    entry.update(phase="request", sent=now, node=peer[0])
                    msg = request(o.REQUEST, mac, xid=reply.xid, giaddr=RELAY,
                                  server_id=peer[0], requested=o.ip_to_str(reply.yiaddr))
                    for server in servers:
                        sock.sendto(msg.to_bytes(), server)
                elif entry["phase"] == "request" and reply.message_type in (o.ACK, o.NAK):
                    if reply.message_type == o.ACK:
                        out.write(json.dumps({
                            "ip": o.ip_to_str(reply.yiaddr), "mac": mac.hex(":"),
                            "node": peer[0], "began": entry["began"], "at": now}) + "\n")
                    pending.pop(reply.xid, None)
                    entry.update(phase="idle", after=now + 0.05)
        # Retransmit-free: an unanswered exchange is abandoned after 1 s and begun again.
        for xid, client in list(pending.items()):
            entry = state[client]
            if now - entry["sent"] > 1.0:
                pending.pop(xid, None)
                entry.update(phase="idle", after=now)
    out.close()
    return 0


# --- seed and check (run inside a node's namespace: they reach the database) ----------------

def cmd_seed(args: argparse.Namespace) -> int:
    import asyncio

    import asyncpg
    from tests.integration.dhcp.harness import seed_subnet

    from ipamd.core.jsonutil import dumps
    from ipamd.outbox import webhooks

    async def go() -> None:
        conn = await asyncpg.connect(dsn())
        try:
            if not await conn.fetchval("SELECT count(*) FROM subnets"):
                await seed_subnet(conn, f"{NET}.128/25", gateway=RELAY,
                                  pools=[(f"{NET}.140", f"{NET}.250")])
            if args.hook and not await conn.fetchval("SELECT count(*) FROM webhooks"):
                # jsonb as Python objects, as every connection of the appliance has it.
                for kind in ("jsonb", "json"):
                    await conn.set_type_codec(kind, encoder=dumps, decoder=json.loads,
                                              schema="pg_catalog")
                async with conn.transaction():
                    await webhooks.create(conn, "ha-lab", {
                        "name": "lab", "url": args.hook, "topics": ["lease.granted"],
                        "secret_ref": f"env:{HOOK_SECRET_ENV}"})
        finally:
            await conn.close()

    asyncio.run(go())
    return 0


def cmd_outbox(args: argparse.Namespace) -> int:
    """Every outbox row: state, who holds its claim, which node delivered it (JSON)."""
    import asyncio

    import asyncpg

    async def go() -> list[dict[str, Any]]:
        conn = await asyncpg.connect(dsn())
        try:
            rows = await conn.fetch(
                """SELECT o.id::text AS id, o.state, split_part(o.claimed_by, ':', 1) AS claim,
                          (SELECT split_part(a.node, ':', 1) FROM outbox_attempts a
                           WHERE a.outbox_id = o.id AND a.status BETWEEN 200 AND 299
                           ORDER BY a.at DESC LIMIT 1) AS delivered_by
                   FROM outbox o""")
            return [dict(r) for r in rows]
        finally:
            await conn.close()

    print(json.dumps(asyncio.run(go())))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import asyncio

    import asyncpg

    async def go() -> dict[str, str]:
        conn = await asyncpg.connect(dsn())
        try:
            rows = await conn.fetch("SELECT host(ip) AS ip, mac::text AS mac FROM leases "
                                    "WHERE state = 'active'")
            return {r["ip"]: r["mac"] for r in rows}
        finally:
            await conn.close()

    active = asyncio.run(go())
    print(json.dumps(active))
    return 0


# --- the orchestrator ---------------------------------------------------------------------

def patroni_config(name: str, ip: str, base: Path) -> Path:
    data = base / name
    (data / "run").mkdir(parents=True, exist_ok=True)
    config = {
        "scope": "ipamd-lab", "name": name,
        "etcd3": {"hosts": f"{ETCD}:2379"},
        "restapi": {"listen": f"{ip}:8008", "connect_address": f"{ip}:8008"},
        "bootstrap": {
            "dcs": {
                "ttl": 10, "loop_wait": 1, "retry_timeout": 3,
                "synchronous_mode": True, "master_start_timeout": 0,
                "postgresql": {"use_pg_rewind": True, "parameters": {
                    "wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
                    "max_wal_senders": 10, "max_replication_slots": 10,
                    "max_connections": 200}},
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
            "pg_hba": [f"host replication all {NET}.0/24 trust",
                       f"host all all {NET}.0/24 trust", "local all all trust"],
        },
        "postgresql": {
            "listen": f"{ip}:5432", "connect_address": f"{ip}:5432",
            "data_dir": str(data / "data"), "bin_dir": PG_BIN,
            "pgpass": str(data / "pgpass"),
            "authentication": {"superuser": {"username": "postgres", "password": "lab"},
                               "replication": {"username": "postgres", "password": "lab"}},
            "parameters": {"unix_socket_directories": str(data / "run")},
        },
    }
    path = data / "patroni.yml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def psql(net: netns.Lab, ns: str, ip: str, sql: str) -> str:
    result = net.run(ns, [f"{PG_BIN}/psql", "-h", ip, "-U", "postgres", "-d", "postgres",
                          "-Atc", sql], check=False, timeout=5)
    return result.stdout.strip() if result.returncode == 0 else ""


def leader(net: netns.Lab, spaces: dict[str, str]) -> str | None:
    for name, ip in PG.items():
        if psql(net, spaces[name], ip, "SELECT pg_is_in_recovery()") == "f":
            return name
    return None


def outbox_section(base: Path | None) -> dict[str, Any]:
    """Outbox on (node mode: the lab's CA and hosts file, claims that expire quickly)."""
    if base is None:
        return {"enabled": False}
    return {
        "enabled": True, "workers": 4, "max_attempts": 100, "backoff_base_seconds": 0.5,
        "backoff_multiplier": 2.0, "backoff_max_seconds": 2.0, "backoff_jitter": 0.0,
        "request_timeout_seconds": 2.0, "claim_timeout_seconds": CLAIM_TIMEOUT,
        "poll_interval_seconds": 0.5, "ca_file": str(base / "hook" / "ca.pem"),
        "hosts_file": str(base / "hook" / "hosts"),
    }


def hook_files(base: Path) -> tuple[Path, Path]:
    """A CA the nodes trust, the receiver's certificate and key, the hosts file."""
    import trustme

    hook = base / "hook"
    hook.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(hook / "ca.pem"))
    cert = ca.issue_cert(HOOK_NAME)
    cert.private_key_pem.write_to_path(str(hook / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(hook / "cert.pem"))
    (hook / "hosts").write_text(f"{HOOK} {HOOK_NAME}\n")
    return hook / "cert.pem", hook / "key.pem"


def ipamd_config(name: str, ip: str, base: Path, outbox: bool = False) -> Path:
    state = base / name
    return write_config(state / "ipamd.toml", {
        "database": {"dsn": dsn(), "pool_min": 2, "pool_max": 8},
        "api": {"public_enabled": False, "loopback_listen": "127.0.0.1:8080"},
        "dhcp": {"listen": [f"{ip}:67"], "server_id": ip, "trusted_relays": [RELAY]},
        "outbox": outbox_section(base if outbox else None),
        "logging": {"level": "INFO"},
    }, {"node_name": name, "state_dir": str(state)})


def wait(predicate: Any, timeout: float, what: str) -> None:
    if not netns.wait_for(predicate, timeout, interval=0.2):
        raise BenchError(f"ha-lab: timed out waiting for {what}")


def cmd_run(args: argparse.Namespace) -> int:
    reason = netns.require_tools("ip", "etcd", "patroni")
    if reason:
        print(f"ha-lab: {reason}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="ipamd-ha-lab-"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres", "postgres")
    env = {**os.environ, HOOK_SECRET_ENV: HOOK_SECRET}
    hooked = args.kill == "node"
    logs: dict[str, Any] = {}
    try:
        with netns.lab() as net:
            sw = net.namespace("sw")
            bridge = net.bridge(sw, "br")
            spaces: dict[str, str] = {}
            addresses = {"etcd": ETCD, **PG, **NODES, "relay": RELAY, "hook": HOOK}
            for index, (name, ip) in enumerate(addresses.items()):
                ns = net.namespace(name)
                spaces[name] = ns
                pair = net.veth(f"v{index}", ns, sw, a_addr=f"{ip}/24")
                net.attach(sw, pair.b, bridge)

            def spawn(name: str, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
                log = open(base / f"{name}.log", "w")  # noqa: SIM115
                logs[name] = log
                return net.spawn(spaces[name], argv, stdout=log, stderr=subprocess.STDOUT, **kw)

            (base / "etcd").mkdir()
            spawn("etcd", ["etcd", "--name", "e1", "--data-dir", str(base / "etcd"),
                           "--listen-client-urls", f"http://{ETCD}:2379",
                           "--advertise-client-urls", f"http://{ETCD}:2379",
                           "--listen-peer-urls", f"http://{ETCD}:2380",
                           "--initial-advertise-peer-urls", f"http://{ETCD}:2380",
                           "--initial-cluster", f"e1=http://{ETCD}:2380"])
            time.sleep(1.0)
            for name, ip in PG.items():
                config = patroni_config(name, ip, base)
                subprocess.run(["chown", "-R", "postgres:postgres", str(base / name)],
                               check=True)
                spawn(name, ["runuser", "-u", "postgres", "--", "patroni", str(config)])
                if name == "pg1":
                    wait(lambda: leader(net, spaces) == "pg1", 90, "pg1 to lead")
            wait(lambda: psql(net, spaces["pg1"], PG["pg1"],
                              "SELECT count(*) FROM pg_stat_replication "
                              "WHERE sync_state = 'sync'") == "1", 120,
                 "pg2 to be a synchronous standby")
            psql(net, spaces["pg1"], PG["pg1"], "CREATE DATABASE ipamd")

            if hooked:
                cert, key = hook_files(base)  # before the nodes: they read the CA at start
            nodes = {}
            for name, ip in NODES.items():
                config = ipamd_config(name, ip, base, outbox=hooked)
                nodes[name] = spawn(name, ipamd_argv(config), env=ipamd_env(env), cwd=ROOT)
            # Migrated by the first node up; then the plan.
            wait(lambda: all("ipamd ready" in (base / f"{n}.log").read_text()
                             for n in NODES), 90, "both appliance nodes")
            hook = None
            if hooked:
                # The receiver, stopped at once: connections to it hang, claims are held.
                hook = spawn("hook", [PYTHON, "-m", "tests.support.receiver", "--cert", cert,
                                      "--key", key, "--host", HOOK, "--port", str(HOOK_PORT),
                                      "--secret", HOOK_SECRET], env=env, cwd=ROOT)
                wait(lambda: "PORT" in (base / "hook.log").read_text(), 30, "the receiver")
                os.kill(hook.pid, signal.SIGSTOP)
            seed = [*SELF, "seed"]
            if hooked:
                seed += ["--hook", f"https://{HOOK_NAME}:{HOOK_PORT}/hook"]
            net.run(spaces["nodea"], seed, env=env, timeout=30, cwd=ROOT)

            def outbox() -> list[dict[str, Any]]:
                done = net.run(spaces["nodeb"], [*SELF, "outbox"], env=env, timeout=30, cwd=ROOT)
                return json.loads(done.stdout)
            acks = base / "acks.jsonl"
            load = net.spawn(spaces["relay"], [*SELF, "load", "--out", str(acks), "--seconds",
                                               str(args.steady + args.after)],
                             env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

            def ack_count() -> int:
                return sum(1 for _ in acks.open()) if acks.exists() else 0

            wait(lambda: ack_count() > 50, 60, "the first Acks")
            time.sleep(args.steady)
            before = ack_count()
            promoted_at = promoted = None
            orphans: set[str] = set()
            if args.kill == "node":
                killed = "nodea"  # one appliance node, SIGKILL: no clean stop at all
                t_kill = time.monotonic()
                os.kill(nodes[killed].pid, signal.SIGKILL)
                nodes[killed].wait(timeout=10)
                # What the dead node held: never recorded, never handed back.
                orphans = {r["id"] for r in outbox() if r["claim"] == killed
                           and r["state"] != "delivered"}
                time.sleep(1.0)
                assert hook is not None
                os.kill(hook.pid, signal.SIGCONT)  # the receiver answers again
            else:
                killed = leader(net, spaces)
                assert killed is not None
                pid = int((base / killed / "data" / "postmaster.pid").read_text().split()[0])
                t_kill = time.monotonic()
                os.kill(pid, signal.SIGKILL)  # the leader's postmaster, not Patroni
                wait(lambda: leader(net, spaces) not in (None, killed), 60, "a promotion")
                promoted_at = time.monotonic()
                promoted = leader(net, spaces)
            load.wait(timeout=args.steady + args.after + 30)
            rows: list[dict[str, Any]] = []
            if hooked:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    rows = outbox()
                    if all(r["state"] == "delivered" for r in rows):
                        break
                    time.sleep(0.5)
            check = net.run(spaces["nodea"], [*SELF, "check"], env=env, timeout=30, cwd=ROOT)
            active: dict[str, str] = json.loads(check.stdout)
            records = [json.loads(line) for line in acks.open()]
            holders: dict[str, set[str]] = {}
            for r in records:
                holders.setdefault(r["ip"], set()).add(r["mac"])
            after = [r for r in records if r["began"] >= t_kill]
            first = min((r["at"] for r in after), default=None)
            by_node = {ip: [r for r in after if r["node"] == ip] for ip in NODES.values()}
            result = {
                "acks": len(records), "acks_before_kill": before,
                "acks_after_kill": len(after),
                "acks_after_kill_per_node": {ip: len(v) for ip, v in by_node.items()},
                "lost": sum(1 for r in records if active.get(r["ip"]) != r["mac"]),
                "double_allocations": sum(1 for macs in holders.values() if len(macs) > 1),
                "kill": args.kill, "killed": killed, "promoted": promoted,
                "promotion_seconds":
                    round(promoted_at - t_kill, 2) if promoted_at is not None else None,
                "kill_to_first_new_ack_seconds":
                    round(first - t_kill, 2) if first is not None else None,
                "nodes_restarted": [n for n, p in nodes.items() if p.poll() is not None],
            }
            if hooked:
                by_id = {r["id"]: r for r in rows}
                result["outbox"] = {
                    "rows": len(rows),
                    "undelivered": sum(1 for r in rows if r["state"] != "delivered"),
                    "claimed_by_killed_node": len(orphans),
                    "of_those_delivered_by": {
                        node: sum(1 for i in orphans
                                  if by_id.get(i, {}).get("delivered_by") == node)
                        for node in NODES},
                }
            print(json.dumps(result, indent=2))
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
            if args.kill == "node":
                # The survivor serves every exchange begun after the kill; the dead one none.
                serving = (by_node[NODES["nodeb"]] and not by_node[NODES["nodea"]]
                           and result["nodes_restarted"] == ["nodea"]
                           and orphans and not result["outbox"]["undelivered"]
                           and result["outbox"]["of_those_delivered_by"]["nodeb"]
                           == len(orphans))
            else:
                serving = all(by_node.values()) and not result["nodes_restarted"]
            ok = (result["lost"] == 0 and result["double_allocations"] == 0 and first is not None
                  and bool(serving))
            return 0 if ok else 1
    finally:
        for log in logs.values():
            log.close()
        if args.keep:
            print(f"ha-lab: logs kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run")
    run.add_argument("--steady", type=float, default=10.0, help="load before the kill (s)")
    run.add_argument("--after", type=float, default=25.0, help="load after the kill (s)")
    run.add_argument("--out", default="", help="also write the JSON result here")
    run.add_argument("--keep", action="store_true", help="keep the logs directory")
    run.add_argument("--kill", choices=("leader", "node"), default="leader",
                     help="SIGKILL the Patroni leader's postmaster, or appliance node A")
    load = sub.add_parser("load")
    load.add_argument("--out", required=True)
    load.add_argument("--seconds", type=float, required=True)
    seed = sub.add_parser("seed")
    seed.add_argument("--hook", default="", help="also a lease.granted webhook to this URL")
    sub.add_parser("check")
    sub.add_parser("outbox")
    args = parser.parse_args()
    handlers = {"load": cmd_load, "seed": cmd_seed, "check": cmd_check, "outbox": cmd_outbox}
    try:
        return handlers.get(args.command or "run", cmd_run)(args) if args.command else \
            cmd_run(parser.parse_args(["run"]))
    except BenchError as error:
        print(error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
