"""`make image-boot-test`: boot build/image's container and get a relayed lease from it.

    client ns ── veth ── relay ns (dhcrelay, 10.77.15.129/25 | 10.77.15.1/25) ── veth ── box ns
                                                                   the container, 10.77.15.2/25

podman runs the OCI archive (`--runtime runc`, explicit `--ulimit`s; systemd is PID 1) in the
box namespace with a fresh data volume; the first token is minted on the box (`ipamd token`
in the container, as root on the console); the plan is made over the console port 8443; a
real dhclient behind a real dhcrelay gets a lease. Prints the time from `podman run` to each
step. Root; everything it makes is named ipt15… and removed at the end (by name and pid).
Too heavy for CI: not collected by pytest (run it with python3).
"""

from __future__ import annotations

import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bootlab import ns, sh, veth_pairs, wait  # image/, beside this script

ROOT = Path(__file__).resolve().parents[1]
TAG = f"ipt15{os.getpid() % 10000:04d}"
BOX, RELAY, CLIENT = f"{TAG}b", f"{TAG}r", f"{TAG}c"
CONFIG = """\
state_dir = "/var/lib/ipamd"
[api]
public_listen = ["0.0.0.0:8443"]
loopback_listen = "127.0.0.1:8080"
[database]
data_dir = "/var/lib/ipamd/pgdata"
socket_dir = "/run/ipamd"
[dhcp]
listen = ["0.0.0.0:67"]
server_id = "10.77.15.2"
trusted_relays = ["10.77.15.0/24"]
"""
LEASES = """
import httpx, sys
c = httpx.Client(base_url="https://10.77.15.2:8443/api/v1", verify=False,
                 headers={"Authorization": "Bearer " + sys.argv[1]}, timeout=10)
r = c.get("/leases"); r.raise_for_status()
print(" ".join(f"{x['ip']}={x['state']}" for x in r.json()["items"]))
"""
PROCESS = r"""for f in /proc/[0-9]*/cmdline; do
  if tr '\0' ' ' < "$f" | grep -q 'bin/ipamd run'; then
    grep -E '^(Uid|CapEff|NoNewPrivs):' "${f%/cmdline}/status"; break
  fi
done"""
SUPERVISOR = "runuser -u ipamd -- /opt/ipamd/.venv/bin/supervisorctl -c /etc/ipamd/supervisord.conf"
PLAN = """
import httpx, sys
token = sys.argv[1]
c = httpx.Client(base_url="https://10.77.15.2:8443/api/v1", verify=False,
                 headers={"Authorization": "Bearer " + token}, timeout=10)
p = c.post("/prefixes", json={"cidr": "10.77.15.128/25"}); p.raise_for_status()
s = c.post("/subnets", json={"prefix_id": p.json()["id"], "cidr": "10.77.15.128/25",
                             "gateway": "10.77.15.129", "lease_time_seconds": 600})
s.raise_for_status()
c.post(f"/subnets/{s.json()['id']}/pools", json={
    "name": "lab", "start_ip": "10.77.15.140", "end_ip": "10.77.15.160"}).raise_for_status()
print(s.json()["id"])
"""


def network() -> None:
    for name in (BOX, RELAY, CLIENT):
        sh("ip", "netns", "add", name)
    pairs = [(f"{TAG}bs", BOX, "10.77.15.2/25", f"{TAG}rs", RELAY, "10.77.15.1/25"),
             (f"{TAG}cc", CLIENT, None, f"{TAG}rc", RELAY, "10.77.15.129/25")]
    veth_pairs(pairs)
    for name in (BOX, RELAY, CLIENT):
        ns(name, "ip", "link", "set", "lo", "up")
    # Replies go to the relay's giaddr on the client side.
    ns(BOX, "ip", "route", "add", "10.77.15.128/25", "via", "10.77.15.1")


def main() -> int:
    archives = sorted(glob.glob(str(ROOT / "build/image/ipamd-*-oci.tar")))
    if not archives:
        print("no build/image/ipamd-*-oci.tar: run `make image` first", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix=f"{TAG}-"))
    container = f"{TAG}-box"
    procs: list[subprocess.Popen[bytes]] = []
    image = ""
    try:
        loaded = sh("podman", "load", "-q", "-i", archives[-1]).stdout
        image = loaded.strip().rsplit(" ", 1)[-1]
        print(f"loaded {image} from {archives[-1]}")
        network()
        (work / "ipamd.toml").write_text(CONFIG)
        (work / "data").mkdir()
        relay_log = (work / "relay.log").open("w")
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", RELAY, "dhcrelay", "-d", "-4", "--no-pid",
             "-id", f"{TAG}rc", "-iu", f"{TAG}rs", "10.77.15.2"],
            stdout=relay_log, stderr=subprocess.STDOUT))
        # Explicit limits: podman 4.3's defaults (and an nproc at the host's own limit) are
        # refused by runc here; nofile up to the host's hard limit, nproc 4096 work.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nofile = f"{min(65536, hard)}:{min(65536, hard)}"
        nproc = "4096:4096"
        started = time.monotonic()
        sh("podman", "run", "-d", "--name", container, "--runtime", "runc",
           "--ulimit", f"nofile={nofile}", "--ulimit", f"nproc={nproc}",
           "--network", f"ns:/run/netns/{BOX}", "--systemd", "always",
           "-v", f"{work / 'ipamd.toml'}:/etc/ipamd/ipamd.toml:ro",
           "-v", f"{work / 'data'}:/var/lib/ipamd", image)

        def token() -> bool:
            made = sh("podman", "exec", container, "ipamd", "token", "--name", "first",
                      check=False, timeout=60)
            if made.returncode == 0:
                (work / "token").write_text(json.loads(made.stdout)["token"])
                return True
            return False

        wait("first token minted on the box (ipamd token)", token, 60, started)
        secret = (work / "token").read_text()
        venv_python = str(ROOT / ".venv/bin/python")

        def plan() -> bool:
            made = ns(BOX, venv_python, "-c", PLAN, secret, check=False)
            return made.returncode == 0

        wait("plan made over https://10.77.15.2:8443", plan, 60, started)
        leases = work / "dhclient.leases"
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", CLIENT, "dhclient", "-d", "-4", "-sf", "/bin/true",
             "-lf", str(leases), "-pf", str(work / "dhclient.pid"), f"{TAG}cc"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        took = wait("relayed dhclient has a lease",
                    lambda: leases.exists() and "fixed-address" in leases.read_text(),
                    60, started)
        address = leases.read_text().split("fixed-address", 1)[1].split(";")[0].strip()
        print(f"lease {address}; start → first lease {took:.1f} s")
        assert took < 60, "start to first lease must be under 60 s"

        def leases_now() -> str:
            return ns(BOX, venv_python, "-c", LEASES, secret).stdout.strip()

        assert leases_now() == f"{address}=active", leases_now()
        # ipamd runs unprivileged, with only the two capabilities, no new privileges.
        found = sh("podman", "exec", container, "sh", "-c", PROCESS).stdout
        print("  ipamd run: " + " ".join(found.split()))
        fields = dict(line.split(":", 1) for line in found.strip().splitlines())
        assert fields["Uid"].split()[0] != "0" and fields["NoNewPrivs"].strip() == "1", fields
        caps = int(fields["CapEff"], 16)  # BIND_SERVICE (10) always; RAW (13) if podman grants it
        assert caps & (1 << 10) and not caps & ~((1 << 10) | (1 << 13)), fields
        # Backup and restore on the box, as image/README.md gives them.
        sh("podman", "exec", container, "ipamd", "backup", "/var/lib/ipamd/boot.backup")
        mode = (work / "data/boot.backup").stat().st_mode & 0o777
        assert mode == 0o600, oct(mode)
        made = sh("podman", "exec", container, "sh", "-c",
                  f"{SUPERVISOR} stop ipamd && ipamd restore /var/lib/ipamd/boot.backup"
                  f" && {SUPERVISOR} start ipamd")
        print(f"  restore: {made.stdout.strip().splitlines()[-2]}")
        started = time.monotonic()
        wait("ipamd back after the restore, lease kept",
             lambda: ns(BOX, venv_python, "-c", LEASES, secret, check=False).stdout.strip()
             == f"{address}=active", 60, started)
        # The same on a running appliance without stopping ipamd first: the box's `ipamd`
        # ($IPAMD_SUPERVISOR) stops the ipamd program for the restore and starts it again.
        made = sh("podman", "exec", container, "ipamd", "restore", "/var/lib/ipamd/boot.backup")
        print(f"  restore (ipamd running): {made.stdout.strip().splitlines()[-1]}")
        started = time.monotonic()
        wait("ipamd back after the restore on a running appliance, lease kept",
             lambda: ns(BOX, venv_python, "-c", LEASES, secret, check=False).stdout.strip()
             == f"{address}=active", 60, started)
        # A new container on the same data volume (what an upgrade does): everything kept.
        sh("podman", "rm", "-f", "-t", "10", container)
        started = time.monotonic()
        sh("podman", "run", "-d", "--name", container, "--runtime", "runc",
           "--ulimit", f"nofile={nofile}", "--ulimit", f"nproc={nproc}",
           "--network", f"ns:/run/netns/{BOX}", "--systemd", "always",
           "-v", f"{work / 'ipamd.toml'}:/etc/ipamd/ipamd.toml:ro",
           "-v", f"{work / 'data'}:/var/lib/ipamd", image)
        wait("replaced container serves the same data (token, lease)",
             lambda: ns(BOX, venv_python, "-c", LEASES, secret, check=False).stdout.strip()
             == f"{address}=active", 60, started)
        return 0
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        logs = sh("podman", "logs", container, check=False).stdout
        if logs and os.environ.get("BOOT_TEST_LOGS"):
            print(logs[-4000:])
        sh("podman", "rm", "-f", "-t", "10", container, check=False)
        if image:
            sh("podman", "rmi", image, check=False)
        for name in (BOX, RELAY, CLIENT):
            sh("ip", "netns", "del", name, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
