"""`make image-vm-boot-test`: boot build/image's VM disk under qemu/KVM to a relayed lease.

    client ns ── veth ── relay ns (dhcrelay, 10.77.15.129/25 | 10.77.15.1/25) ── veth ──┐
    box ns: bridge 10.77.15.3/25 ── tap ── qemu-system-x86_64 -accel kvm              ──┘
            the VM: 10.77.15.2/25 on its virtio NIC (a networkd file on its state disk)

The VM boots the raw disk (`snapshot=on`: the built file is never written) with a blank second
disk as its state disk, which its first boot formats and mounts on /var/lib/ipamd. Everything
on the box goes through the serial console (ttyS0, the appliance's root console): the network
file /var/lib/ipamd/network/10-lab.network, then `ipamd token`. The plan (trusted relays,
subnet, pool) is made over https://10.77.15.2:8443, then a real dhclient behind a real
dhcrelay gets a lease. Prints the time from qemu's start to each step. Root; everything it
makes is named ivm15… and removed at the end (processes by pid, namespaces by name).
Too heavy for CI: not collected by pytest (run it with python3).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bootlab import ns, sh, veth_pairs, wait  # image/, beside this script

ROOT = Path(__file__).resolve().parents[1]
TAG = f"ivm15{os.getpid() % 10000:04d}"
BOX, RELAY, CLIENT = f"{TAG}b", f"{TAG}r", f"{TAG}c"
TAP, BRIDGE = f"{TAG}t", f"{TAG}br"
# VM_ACCEL=tcg where KVM cannot run a BIOS guest (here: the host's kvm-pvm, which runs PVM
# guests only: "kvm-pvm: INTERNAL_ERROR in batch emul" in SeaBIOS); every wait is then longer.
ACCEL = os.environ.get("VM_ACCEL", "kvm")
SLOW = 1 if ACCEL == "kvm" else 4
BOOT_TIMEOUT = 240 * SLOW  # seconds from qemu's start to a root shell on the serial console
NETWORK = "[Match]\\nName=en*\\n\\n[Network]\\nAddress=10.77.15.2/25\\nGateway=10.77.15.1\\n"
PLAN = """
import httpx, sys
token = sys.argv[1]
c = httpx.Client(base_url="https://10.77.15.2:8443/api/v1", verify=False,
                 headers={"Authorization": "Bearer " + token}, timeout=10)
c.patch("/settings", json={"trusted_relays": ["10.77.15.0/24"]}).raise_for_status()
p = c.post("/prefixes", json={"cidr": "10.77.15.128/25"}); p.raise_for_status()
s = c.post("/subnets", json={"prefix_id": p.json()["id"], "cidr": "10.77.15.128/25",
                             "gateway": "10.77.15.129", "lease_time_seconds": 600})
s.raise_for_status()
c.post(f"/subnets/{s.json()['id']}/pools", json={
    "name": "lab", "start_ip": "10.77.15.140", "end_ip": "10.77.15.160"}).raise_for_status()
print(s.json()["id"])
"""
# TCP to 8443: an answer (accepted, or refused while ipamd starts) means the VM has its address.
REACHABLE = """
import socket
try:
    socket.create_connection(("10.77.15.2", 8443), 1).close()
except ConnectionRefusedError:
    pass
"""
LEASES = """
import httpx, sys
c = httpx.Client(base_url="https://10.77.15.2:8443/api/v1", verify=False,
                 headers={"Authorization": "Bearer " + sys.argv[1]}, timeout=10)
r = c.get("/leases"); r.raise_for_status()
print(" ".join(f"{x['ip']}={x['state']}" for x in r.json()["items"]))
"""


def network() -> None:
    for name in (BOX, RELAY, CLIENT):
        sh("ip", "netns", "add", name)
    pairs = [(f"{TAG}bs", BOX, None, f"{TAG}rs", RELAY, "10.77.15.1/25"),
             (f"{TAG}cc", CLIENT, None, f"{TAG}rc", RELAY, "10.77.15.129/25")]
    veth_pairs(pairs)
    for name in (BOX, RELAY, CLIENT):
        ns(name, "ip", "link", "set", "lo", "up")
    # The box: a bridge joins the VM's tap and the veth to the relay.
    ns(BOX, "ip", "link", "add", BRIDGE, "type", "bridge", "forward_delay", "0")
    ns(BOX, "ip", "tuntap", "add", "dev", TAP, "mode", "tap")
    for link in (TAP, f"{TAG}bs"):
        ns(BOX, "ip", "link", "set", link, "master", BRIDGE)
        ns(BOX, "ip", "link", "set", link, "up")
    ns(BOX, "ip", "addr", "add", "10.77.15.3/25", "dev", BRIDGE)
    ns(BOX, "ip", "link", "set", BRIDGE, "up")


class Console:
    """The VM's serial console (qemu -serial stdio): everything read is kept and logged."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.data = bytearray()
        self.lock = threading.Lock()
        self.log = log.open("wb")
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 65536):
            with self.lock:
                self.data += chunk
            self.log.write(chunk)
            self.log.flush()

    def text(self, since: int = 0) -> str:
        with self.lock:
            return self.data[since:].decode("utf-8", "replace")

    def size(self) -> int:
        with self.lock:
            return len(self.data)

    def find(self, pattern: str, since: int = 0) -> re.Match[str] | None:
        return re.search(pattern, self.text(since))

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\r")
        self.proc.stdin.flush()

    def run(self, command: str, timeout: float = 60) -> tuple[int, str]:
        """Type a command into the root shell; its exit status and the output after it."""
        self.count += 1
        mark = f"@@{self.count}"
        since = self.size()
        # The echo of the typed line shows "@@""N; only the command's output has @@N.
        self.type(f'{command}; echo "{mark[:2]}""{mark[2:]} $?"')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(rf"{mark} (\d+)", since)
            if found:
                return int(found.group(1)), self.text(since)
            if self.proc.poll() is not None:
                raise AssertionError(f"qemu exited ({self.proc.returncode})")
            time.sleep(0.2)
        raise AssertionError(f"no answer on the serial console to {command!r}")


def main() -> int:
    disks = sorted(glob.glob(str(ROOT / "build/image/ipamd-*-disk.raw")))
    if not disks:
        print("no build/image/ipamd-*-disk.raw: run `make image` first", file=sys.stderr)
        return 2
    if ACCEL == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        print("no /dev/kvm to use", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix=f"{TAG}-"))
    procs: list[subprocess.Popen[bytes]] = []
    console: Console | None = None
    ok = False
    try:
        print(f"disk {disks[-1]} (qemu -accel {ACCEL})")
        network()
        state = work / "state.raw"
        with state.open("wb") as handle:  # the blank state disk, formatted by the first boot
            handle.truncate(1 << 30)
        relay_log = (work / "relay.log").open("w")
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", RELAY, "dhcrelay", "-d", "-4", "--no-pid",
             "-id", f"{TAG}rc", "-iu", f"{TAG}rs", "10.77.15.2"],
            stdout=relay_log, stderr=subprocess.STDOUT))
        qemu_log = (work / "qemu.log").open("w")
        started = time.monotonic()
        qemu = subprocess.Popen(
            ["ip", "netns", "exec", BOX, "qemu-system-x86_64", "-accel", ACCEL,
             "-m", "2048", "-smp", "2", "-display", "none", "-monitor", "none",
             "-serial", "stdio", "-no-reboot",
             "-drive", f"file={disks[-1]},format=raw,if=virtio,snapshot=on",
             "-drive", f"file={state},format=raw,if=virtio",
             "-netdev", f"tap,id=n0,ifname={TAP},script=no,downscript=no",
             "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:77:15:02"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=qemu_log)
        procs.append(qemu)
        console = Console(qemu, work / "serial.log")

        def seen(pattern: str) -> Callable[[], bool]:
            def check() -> bool:
                if qemu.poll() is not None:
                    raise AssertionError(f"qemu exited ({qemu.returncode})")
                return console.find(pattern) is not None
            return check

        wait("kernel on the serial console (Linux version …)", seen(r"Linux version"), 120 * SLOW,
             started)
        loader = console.find(r"Loading /vmlinuz[^\r\n]*|SYSLINUX[^\r\n]*")
        print(f"           boot loader: {loader.group(0).strip() if loader else '(silent)'}")
        wait("root shell on the serial console (autologin)", seen(r"root@[^\s:]*:[^\r\n]*# "),
             BOOT_TIMEOUT, started)
        rc, out = console.run("for i in $(seq 60); do mountpoint -q /var/lib/ipamd && break; "
                              "sleep 1; done; findmnt -n -o SOURCE,FSTYPE /var/lib/ipamd")
        assert rc == 0 and "/dev/vdb ext4" in out, out
        took = time.monotonic() - started
        print(f"  {took:6.1f} s  state disk /dev/vdb (ext4) on /var/lib/ipamd", flush=True)
        rc, out = console.run(
            "install -d -m 0755 /var/lib/ipamd/network && "
            f"printf '{NETWORK}' > /var/lib/ipamd/network/10-lab.network && "
            "systemctl restart ipamd-network")
        assert rc == 0, out
        wait("VM answers on 10.77.15.2 (networkd file from the state disk)",
             lambda: ns(BOX, sys.executable, "-c", REACHABLE, check=False).returncode == 0,
             60, started)

        token_file = work / "token"

        def token() -> bool:
            rc, _ = console.run("ipamd token --name first > /root/first.json 2> /root/first.err",
                                timeout=150 * SLOW)
            if rc != 0:
                time.sleep(1)
                return False
            _, out = console.run('echo "@@""T $(cat /root/first.json)"')
            found = re.search(r"@@T (\{[^\r\n]*\})", out)
            assert found, out
            token_file.write_text(json.loads(found.group(1))["token"])
            return True

        wait("first token minted on the box (ipamd token on ttyS0)", token, 240 * SLOW, started)
        secret = token_file.read_text()
        venv_python = str(ROOT / ".venv/bin/python")
        wait("plan made over https://10.77.15.2:8443 (trusted relays, subnet, pool)",
             lambda: ns(BOX, venv_python, "-c", PLAN, secret, check=False).returncode == 0,
             60 * SLOW, started)
        leases = work / "dhclient.leases"
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", CLIENT, "dhclient", "-d", "-4", "-sf", "/bin/true",
             "-lf", str(leases), "-pf", str(work / "dhclient.pid"), f"{TAG}cc"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        took = wait("relayed dhclient has a lease",
                    lambda: leases.exists() and "fixed-address" in leases.read_text(),
                    60 * SLOW, started)
        address = leases.read_text().split("fixed-address", 1)[1].split(";")[0].strip()
        print(f"lease {address}; qemu start → first lease {took:.1f} s")
        shown = ns(BOX, venv_python, "-c", LEASES, secret).stdout.strip()
        assert shown == f"{address}=active", shown
        rc, out = console.run("systemctl is-active ipamd var-lib-ipamd.mount ipamd-network")
        assert rc == 0, out
        ok = True
        return 0
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if console is not None and (not ok or os.environ.get("BOOT_TEST_LOGS")):
            print("---- serial console (last 6000 characters)")
            print(console.text()[-6000:])
            print("---- qemu:", (work / "qemu.log").read_text()[-2000:])
        for name in (BOX, RELAY, CLIENT):
            sh("ip", "netns", "del", name, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
