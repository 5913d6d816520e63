"""A relayed DHCP segment for end-to-end tests: real clients behind a real dhcrelay.

    client ns ── veth "l" ── relay ns (dhcrelay, 10.77.1.1/24 LAN) ── veth "s" ── root ns
    (dhclient / udhcpc)                (10.77.0.x+2/30 upstream)          (server 10.77.0.x+1)

The server side is the root namespace, so an in-process appliance binds the server
address. Clients unicast renews and releases to the server identifier: the relay forwards
IP, and the root reaches the LAN through a policy route that only traffic from the server
address uses (the root's main table is never touched).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.dhcp import plan_loader
from tests.support.netns import Lab, require_tools

LAN = "10.77.1.0/24"
GATEWAY = "10.77.1.1"
DHCLIENT_WAIT = 25  # seconds a dhclient -1 run may take (its own timeout is 20)


@dataclass
class DhcpNet:
    lab: Lab
    client_ns: str
    relay_ns: str
    server_ip: str      # where the appliance listens (root namespace)
    relay_ip: str       # the relay's upstream address: the packets' source
    relay_lan_if: str   # dhcrelay's downstream interface (also option 82 circuit id)
    relay_up_if: str
    client_if: str
    relay: subprocess.Popen[Any] | None = None


async def plan_caught_up(running: runtime.Running, timeout: float = 20) -> None:
    """Until the DHCP server's plan is as new as the database's: it reloads on the plan's
    NOTIFY, a moment after an API write commits, so a client started right after the write
    could otherwise be answered from the plan before it (seen in CI under load)."""
    wanted = await running.state.db.run(plan_loader.version)
    with trio.fail_after(timeout):
        while running.state.dhcp.plans.current.version < wanted:  # type: ignore[union-attr]
            await trio.sleep(0.05)


def relayed(lab: Lab, *build_args: str, tools: tuple[str, ...] = ("dhclient", "dhcrelay")
            ) -> DhcpNet:
    """``build``'s segment for a test that runs ``tools`` on it; skipped (with the reason)
    where one is missing."""
    reason = require_tools(*tools)
    if reason:
        pytest.skip(reason)
    return build(lab, *build_args)


def serving(net: DhcpNet) -> dict[str, Any]:
    """The ``[dhcp]`` section of an appliance serving ``net``'s relay."""
    return {"enabled": True, "listen": [f"{net.server_ip}:67"],
            "trusted_relays": [f"{net.relay_ip}/32"]}


async def created(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` through the API; the object it made (201 asserted)."""
    made = await client.post(path, json=body)
    assert made.status_code == 201, f"POST {path}: {made.status_code} {made.text}"
    result: dict[str, Any] = made.json()
    return result


def build(lab: Lab, lan_net: str = LAN, gateway: str = GATEWAY,
          upstream: str = "10.77.0.0/24") -> DhcpNet:
    """The segment; another LAN/upstream keeps labs of parallel test runs apart."""
    server_ip, relay_ip = lab.free_pair(upstream)
    client_ns, relay_ns = lab.namespace("cli"), lab.namespace("rly")
    up = lab.veth("s", None, relay_ns, f"{server_ip}/30", f"{relay_ip}/30")
    length = lan_net.split("/")[1]
    lan = lab.veth("l", relay_ns, client_ns, f"{gateway}/{length}", None)
    lab.sysctl(relay_ns, "net.ipv4.ip_forward", "1")
    lab.policy_route(server_ip, lan_net, relay_ip)
    return DhcpNet(lab=lab, client_ns=client_ns, relay_ns=relay_ns, server_ip=server_ip,
                   relay_ip=relay_ip, relay_lan_if=lan.a, relay_up_if=up.b, client_if=lan.b)


async def start_relay(net: DhcpNet, log: Path) -> subprocess.Popen[Any]:
    """ISC dhcrelay: LAN downstream, -a adds option 82 (circuit id = the LAN interface)."""
    handle = open(log, "w")  # noqa: SIM115 - the relay writes to it for its lifetime
    net.relay = net.lab.spawn(
        net.relay_ns,
        ["dhcrelay", "-d", "-4", "-a", "--no-pid", "-id", net.relay_lan_if,
         "-iu", net.relay_up_if, net.server_ip],
        stdout=handle, stderr=subprocess.STDOUT,
    )
    handle.close()
    with trio.move_on_after(10):
        while "Sending on   Socket/fallback" not in log.read_text(errors="replace"):
            if net.relay.poll() is not None:
                raise RuntimeError(f"dhcrelay exited: {log.read_text(errors='replace')}")
            await trio.sleep(0.05)
    return net.relay


def set_mac(net: DhcpNet, mac: str) -> None:
    net.lab.ip(net.client_ns, "link", "set", "dev", net.client_if, "address", mac)


def client_mac(net: DhcpNet) -> str:
    out = net.lab.ip(net.client_ns, "-j", "link", "show", "dev", net.client_if).stdout
    return json.loads(out)[0]["address"]


# --- the client script ----------------------------------------------------------------

# dhclient and udhcpc both call it: dhclient with $reason and new_*/old_* variables,
# udhcpc with the event as $1 and ip/subnet/router/serverid/lease. It records one line
# per event and configures the interface as far as renew and release need (address and
# default route), since both clients unicast those to the server identifier.
SCRIPT = """#!/bin/sh
event="${reason:-$1}"
addr="${new_ip_address:-${ip:-$old_ip_address}}"
mask="${new_subnet_mask:-$subnet}"
router="${new_routers:-$router}"
router="${router%% *}"
server="${new_dhcp_server_identifier:-$serverid}"
lease="${new_dhcp_lease_time:-$lease}"
file="${new_filename:-$boot_file}"
dns="${new_domain_name_servers:-$dns}"
printf '{"event":"%s","ip":"%s","mask":"%s","router":"%s","server":"%s","lease":"%s",'\\
'"file":"%s","dns":"%s"}\\n' \\
  "$event" "$addr" "$mask" "$router" "$server" "$lease" "$file" "$dns" >> "@RECORD@"
case "$event" in
  PREINIT|deconfig)
    ip link set dev "$interface" up
    ip -4 addr flush dev "$interface" ;;
  BOUND|REBOOT|RENEW|REBIND|bound|renew)
    if ! ip -4 addr show dev "$interface" | grep -q "inet $addr/"; then
      ip -4 addr flush dev "$interface"
      ip addr add "$addr/$mask" dev "$interface"
    fi
    [ -n "$router" ] && ip route replace default via "$router" dev "$interface" ;;
  RELEASE|EXPIRE|STOP|FAIL|leasefail|nak)
    ip -4 addr flush dev "$interface" ;;
esac
exit 0
"""


class Recorder:
    """The client script and the events it records (one JSON object a line)."""

    def __init__(self, workdir: Path, name: str) -> None:
        self.record = workdir / f"{name}.events"
        self.record.touch()
        self.script = workdir / f"{name}.sh"
        self.script.write_text(SCRIPT.replace("@RECORD@", str(self.record)))
        self.script.chmod(self.script.stat().st_mode | stat.S_IXUSR)

    def events(self) -> list[dict[str, str]]:
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]

    def names(self) -> list[str]:
        return [e["event"] for e in self.events()]

    async def wait(self, names: set[str], timeout: float, after: int = 0) -> dict[str, str]:
        """The first event named in ``names`` past the first ``after`` events."""
        with trio.move_on_after(timeout):
            while True:
                for event in self.events()[after:]:
                    if event["event"] in names:
                        return event
                await trio.sleep(0.05)
        raise AssertionError(f"no {sorted(names)} within {timeout} s; events: {self.names()}")


# --- clients --------------------------------------------------------------------------

DHCLIENT_CONF = """timeout 20;
retry 1;
initial-interval 1;
backoff-cutoff 2;
send host-name "@HOST@";
request subnet-mask, routers, domain-name-servers, host-name, dhcp-lease-time,
        dhcp-server-identifier, dhcp-renewal-time, dhcp-rebinding-time;
"""


class Dhclient:
    """ISC dhclient in the foreground (-d) so it renews by itself at T1; -r releases."""

    def __init__(self, net: DhcpNet, workdir: Path, hostname: str) -> None:
        self.net = net
        self.recorder = Recorder(workdir, "dhclient")
        self.conf = workdir / "dhclient.conf"
        self.conf.write_text(DHCLIENT_CONF.replace("@HOST@", hostname))
        self.files = ["-sf", str(self.recorder.script), "-pf", str(workdir / "dhclient.pid"),
                      "-lf", str(workdir / "dhclient.leases"), "-cf", str(self.conf)]
        self.log = workdir / "dhclient.log"
        self.proc: subprocess.Popen[Any] | None = None

    def start(self) -> None:
        with open(self.log, "w") as handle:
            self.proc = self.net.lab.spawn(
                self.net.client_ns,
                ["dhclient", "-4", "-d", "-1", "-v", *self.files, self.net.client_if],
                stdout=handle, stderr=subprocess.STDOUT,
            )

    async def release(self) -> subprocess.CompletedProcess[str]:
        # -r stops the running dhclient (its pid file) and sends DHCPRELEASE.
        return await self.net.lab.run_async(
            self.net.client_ns, ["dhclient", "-4", "-r", "-v", *self.files, self.net.client_if],
            timeout=DHCLIENT_WAIT, check=False,
        )


class Udhcpc:
    """busybox udhcpc: SIGUSR1 renews, SIGUSR2 releases (busybox's documented signals)."""

    def __init__(self, net: DhcpNet, workdir: Path, hostname: str, name: str = "udhcpc") -> None:
        self.net = net
        self.hostname = hostname
        self.recorder = Recorder(workdir, name)
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen[Any] | None = None

    def argv(self, *extra: str) -> list[str]:
        return ["busybox", "udhcpc", "-f", "-i", self.net.client_if, "-s",
                str(self.recorder.script), "-x", f"hostname:{self.hostname}", *extra]

    def start(self, *extra: str) -> subprocess.Popen[Any]:
        with open(self.log, "w") as handle:
            self.proc = self.net.lab.spawn(self.net.client_ns, self.argv(*extra), stdout=handle,
                                           stderr=subprocess.STDOUT)
        return self.proc

    def signal(self, signum: int) -> None:
        assert self.proc is not None and self.proc.poll() is None, "udhcpc is not running"
        os.kill(self.proc.pid, signum)

    async def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        with trio.move_on_after(timeout):
            while self.proc.poll() is None:
                await trio.sleep(0.05)
        if self.proc.poll() is None:
            self.net.lab.stop(self.proc)
            raise AssertionError(f"udhcpc still running after {timeout} s")
        return self.proc.returncode


# --- IPv6: the same segment for DHCPv6 (docs/dhcpv6.md) ---------------------------------------
#
#     client ns ── veth "l" ── relay ns (dhcrelay -6; <lan>::1/64) ── veth "s" ── root ns
#     (dhclient -6)                      (<up>::2/64 upstream)                   (<up>::1)
#
# Addresses from 2001:db8:77::/48 (netns.ALLOWED6), two /64s per lab picked at random so
# parallel labs do not share a route. No duplicate address detection: a tentative address
# cannot be bound (the facts from trying Debian's clients).


@dataclass
class Dhcp6Net:
    lab: Lab
    client_ns: str
    relay_ns: str
    server_ip: str   # where the appliance listens (root namespace), port 547
    relay_ip: str    # the relay's upstream address: the Relay-forwards' source
    link_ip: str     # the relay's address on the clients' link: the link-address
    lan: str         # the clients' /64 (the subnet to serve)
    relay_lan_if: str
    relay_up_if: str
    client_if: str
    server_if: str
    relay: subprocess.Popen[Any] | None = None


def _no_dad(lab: Lab, ns: str) -> None:
    for scope in ("all", "default"):
        lab.sysctl(ns, f"net.ipv6.conf.{scope}.accept_dad", "0")


def build6(lab: Lab) -> Dhcp6Net:
    up_id, lan_id = secrets.SystemRandom().sample(range(1, 0xFFFF), 2)
    up, lan = f"2001:db8:77:{up_id:x}::", f"2001:db8:77:{lan_id:x}::"
    client_ns, relay_ns = lab.namespace("cli6"), lab.namespace("rly6")
    for ns in (client_ns, relay_ns):
        _no_dad(lab, ns)
    upstream = lab.veth("s6", None, relay_ns, f"{up}1/64", f"{up}2/64")
    link = lab.veth("l6", relay_ns, client_ns, f"{lan}1/64", None)
    return Dhcp6Net(lab=lab, client_ns=client_ns, relay_ns=relay_ns, server_ip=f"{up}1",
                    relay_ip=f"{up}2", link_ip=f"{lan}1", lan=f"{lan}/64",
                    relay_lan_if=link.a, relay_up_if=upstream.b, client_if=link.b,
                    server_if=upstream.a)


def build6_attached(lab: Lab) -> Dhcp6Net:
    """A client namespace on a veth whose root side the server serves directly
    (dhcp6.interfaces): no relay (its fields are empty); the root side's global address
    names the subnet."""
    lan = f"2001:db8:77:{secrets.randbelow(0xFFFE) + 1:x}::"
    client_ns = lab.namespace("cli6d")
    _no_dad(lab, client_ns)
    pair = lab.veth("d6", None, client_ns, f"{lan}1/64", None)
    return Dhcp6Net(lab=lab, client_ns=client_ns, relay_ns=client_ns, server_ip=f"{lan}1",
                    relay_ip="", link_ip=f"{lan}1", lan=f"{lan}/64", relay_lan_if="",
                    relay_up_if="", client_if=pair.b, server_if=pair.a)


async def settled6(net: Dhcp6Net, timeout: float = 10) -> None:
    """Until no address of the lab is tentative (link-locals of the root side included)."""
    with trio.move_on_after(timeout):
        while any(net.lab.ip(ns, "-6", "addr", "show", *where, "tentative").stdout.strip()
                  for ns, where in ((net.client_ns, ()), (net.relay_ns, ()),
                                    (None, ("dev", net.server_if)))):
            await trio.sleep(0.1)
        return
    raise AssertionError("IPv6 addresses still tentative")


async def start_relay6(net: Dhcp6Net, log: Path) -> subprocess.Popen[Any]:
    """ISC dhcrelay -6: clients on the LAN interface, the server upstream."""
    handle = open(log, "w")  # noqa: SIM115 - the relay writes to it for its lifetime
    net.relay = net.lab.spawn(
        net.relay_ns,
        ["dhcrelay", "-6", "-d", "--no-pid", "-l", net.relay_lan_if,
         "-u", f"{net.server_ip}%{net.relay_up_if}"],
        stdout=handle, stderr=subprocess.STDOUT,
    )
    handle.close()
    with trio.move_on_after(10):
        while "Sending on" not in log.read_text(errors="replace"):
            if net.relay.poll() is not None:
                raise RuntimeError(f"dhcrelay -6 exited: {log.read_text(errors='replace')}")
            await trio.sleep(0.05)
    return net.relay


# dhclient -6 calls it with $reason (PREINIT6, BOUND6, RENEW6, REBIND6, RELEASE6, EXPIRE6,
# DEPREF6...) and new_ip6_address/new_ip6_prefixlen (IA_NA), new_ip6_prefix (IA_PD),
# new_dhcp6_name_servers, new_dhcp6_domain_search. It records one line per event; nothing
# needs configuring (DHCPv6 clients send Renew and Release through the relay, multicast).
SCRIPT6 = """#!/bin/sh
printf '{"event":"%s","ip":"%s","prefixlen":"%s","prefix":"%s","dns":"%s","search":"%s"}\\n' \\
  "$reason" "${new_ip6_address:-$old_ip6_address}" "$new_ip6_prefixlen" \\
  "${new_ip6_prefix:-$old_ip6_prefix}" "$new_dhcp6_name_servers" \\
  "$new_dhcp6_domain_search" >> "@RECORD@"
exit 0
"""

# The same, and on BOUND6 it configures the address and waits for duplicate address detection,
# as ISC's own client script for Linux does (Debian's dhclient-script does not): a duplicate
# (RFC 4862 §5.4.5) is recorded as DADFAILED, removed, and the script exits 3, which makes
# dhclient decline it (RFC 8415 §18.2.8). Added without lifetimes: the kernel keeps a permanent
# duplicate flagged "dadfailed", where it deletes one with lifetimes without saying why.
SCRIPT6_DAD = SCRIPT6.replace("exit 0\n", """\
if [ "$reason" = BOUND6 ] && [ -n "$new_ip6_address" ]; then
  ip -6 addr add "$new_ip6_address/128" dev "$interface"
  n=0
  while [ $n -lt 50 ]; do  # until DAD ends (a duplicate stays "tentative dadfailed")
    case "$(ip -6 addr show dev "$interface" to "$new_ip6_address")" in
      *dadfailed*) break ;;
      *tentative*) ;;
      *) break ;;
    esac
    sleep 0.1; n=$((n + 1))
  done
  if ip -6 addr show dev "$interface" to "$new_ip6_address" | grep -q dadfailed; then
    printf '{"event":"DADFAILED","ip":"%s"}\\n' "$new_ip6_address" >> "@RECORD@"
    ip -6 addr del "$new_ip6_address/128" dev "$interface"
    exit 3
  fi
fi
exit 0
""")


class Dhclient6:
    """ISC dhclient -6 in the foreground (-d): -N for an address, -P for a prefix.
    ``dad``: the script checks duplicate address detection (SCRIPT6_DAD)."""

    def __init__(self, net: Dhcp6Net, workdir: Path, name: str = "dhclient6",
                 duid: bytes | None = None, dad: bool = False) -> None:
        self.net = net
        self.recorder = Recorder(workdir, name)
        script = SCRIPT6_DAD if dad else SCRIPT6
        self.recorder.script.write_text(script.replace("@RECORD@", str(self.recorder.record)))
        self.conf = workdir / f"{name}.conf"
        self.conf.write_text("timeout 20;\nretry 1;\nrequest dhcp6.name-servers, "
                             "dhcp6.domain-search;\n")
        self.leases = workdir / f"{name}.leases"
        if duid is not None:  # dhclient -6 reads its DUID from the lease file (the facts)
            octal = "".join(f"\\{byte:03o}" for byte in duid)
            self.leases.write_text(f'default-duid "{octal}";\n')
        self.files = ["-sf", str(self.recorder.script), "-pf", str(workdir / f"{name}.pid"),
                      "-lf", str(self.leases), "-cf", str(self.conf)]
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen[Any] | None = None

    def start(self, *mode: str) -> None:
        with open(self.log, "w") as handle:
            self.proc = self.net.lab.spawn(
                self.net.client_ns,
                ["dhclient", "-6", *mode, "-d", "-1", "-v", *self.files, self.net.client_if],
                stdout=handle, stderr=subprocess.STDOUT,
            )

    async def release(self, *mode: str) -> subprocess.CompletedProcess[str]:
        return await self.net.lab.run_async(
            self.net.client_ns,
            ["dhclient", "-6", *mode, "-r", "-v", *self.files, self.net.client_if],
            timeout=DHCLIENT_WAIT, check=False,
        )


# dhcpcd (Debian dhcpcd-base) calls it with $reason (PREINIT, BOUND6, RENEW6, REBIND6,
# RELEASE6, EXPIRE6, STOP6...) and new_dhcp6_ia_na1_ia_addr1, new_dhcp6_ia_pd1_prefix1 (and
# _length), new_dhcp6_name_servers, new_dhcp6_domain_search (dhcpcd-run-hooks(8)). It records
# one line per event; dhcpcd configures the address itself.
DHCPCD_SCRIPT = """#!/bin/sh
printf '{"event":"%s","ip":"%s","prefix":"%s","prefixlen":"%s","dns":"%s","search":"%s"}\\n' \\
  "$reason" "${new_dhcp6_ia_na1_ia_addr1:-$old_dhcp6_ia_na1_ia_addr1}" \\
  "${new_dhcp6_ia_pd1_prefix1:-$old_dhcp6_ia_pd1_prefix1}" \\
  "${new_dhcp6_ia_pd1_prefix1_length:-$old_dhcp6_ia_pd1_prefix1_length}" \\
  "$new_dhcp6_name_servers" "$new_dhcp6_domain_search" >> "@RECORD@"
exit 0
"""

# dhcpcd.conf(5): DHCPv6 only; no Router Solicitation (`ia_na`/`ia_pd` solicit without
# waiting for an RA: the facts); options 23 and 24 asked for.
DHCPCD_CONF = """ipv6only
noipv6rs
option dhcp6_name_servers, dhcp6_domain_search
interface @IF@
@IA@
"""


class Dhcpcd:
    """dhcpcd in the foreground (-B) on the client interface; ``ia`` is ``ia_na 1`` or
    ``ia_pd 1``. Its state (/var/lib/dhcpcd: DUID, leases; /run/dhcpcd: pid files and
    control sockets) is the test's own: each run sees the test's directories bound over
    those paths in a private mount namespace (Debian's build has no option to move them),
    so nothing on the host is read or written. ``release`` (dhcpcd -k) reaches the daemon's
    control socket through the same directories."""

    def __init__(self, net: Dhcp6Net, workdir: Path, name: str = "dhcpcd",
                 ia: str = "ia_na 1", duid: bytes | None = None) -> None:
        self.net = net
        self.recorder = Recorder(workdir, name)
        self.recorder.script.write_text(
            DHCPCD_SCRIPT.replace("@RECORD@", str(self.recorder.record)))
        self.conf = workdir / f"{name}.conf"
        self.conf.write_text(DHCPCD_CONF.replace("@IF@", net.client_if).replace("@IA@", ia))
        self.db, self.run_dir = workdir / f"{name}.db", workdir / f"{name}.run"
        for made in (self.db, self.run_dir):
            made.mkdir(mode=0o755)
        if duid is not None:  # the DUID file: hex pairs joined by colons (dhcpcd(8), FILES)
            (self.db / "duid").write_text(":".join(f"{b:02x}" for b in duid) + "\n")
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen[Any] | None = None

    def _isolated(self, *argv: str) -> list[str]:
        script = ('mount --bind "$1" /var/lib/dhcpcd && mount --bind "$2" /run && shift 2 '
                  '&& exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                str(self.db), str(self.run_dir), *argv]

    def argv(self, *extra: str) -> list[str]:
        return self._isolated("dhcpcd", "-B", "-d", "-f", str(self.conf), "-c",
                              str(self.recorder.script), *extra, self.net.client_if)

    def start(self) -> None:
        with open(self.log, "w") as handle:
            self.proc = self.net.lab.spawn(self.net.client_ns, self.argv(),
                                           stdout=handle, stderr=subprocess.STDOUT)

    async def release(self) -> subprocess.CompletedProcess[str]:
        return await self.net.lab.run_async(
            self.net.client_ns, self.argv("-k"), timeout=DHCLIENT_WAIT, check=False)
