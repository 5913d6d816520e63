"""Every DDNS adapter end to end: a real dhclient (sending its host name) behind a real
dhcrelay in network namespaces gets a lease from the appliance; the A and PTR records answer
at that adapter's DNS server on loopback — a real BIND 9 (bind_tsig, through the outbox), a
real PowerDNS (powerdns_http), BIND 9 with GSS-TSIG in a Kerberos realm made by the test
(ad_gsstsig), the appliance itself (embedded); dhclient -r releases → they are gone.
Addresses: 10.77.53.0/24 only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.support import dhcp_lab, netns
from tests.support.bind import KEY_NAME, Bind, free_port, need_bind
from tests.support.daemons import dig_short
from tests.support.dhcp_lab import DhcpNet
from tests.support.kerberos import REALM, Realm, need_kerberos
from tests.support.pdns import PowerDns, need_pdns

pytestmark = pytest.mark.netns

LAN, GATEWAY, UPSTREAM = "10.77.53.0/25", "10.77.53.1", "10.77.53.128/26"
ZONE, REVERSE = "e2e.example", "53.77.10.in-addr.arpa"
SECRET_ENV = "IPAMD_TEST_DDNS_E2E_SECRET"
DNS_HOST = "ns1.e2e.example"  # ad_gsstsig: the DNS server's service principal is DNS/<this>
ANSWER_WAIT = 15.0


@dataclass
class Target:
    """One adapter's DNS server as the test sees it."""

    server: dict[str, Any]                    # the POST /dns-servers body, adapter included
    dig: Callable[[str, str], list[str]]      # (name, rtype) → sorted RDATA at that server
    config: dict[str, dict[str, Any]] = field(default_factory=dict)  # appliance sections

    @property
    def adapter(self) -> str:
        return self.server["adapter"]


Setup = Callable[[Path, contextlib.ExitStack, pytest.MonkeyPatch], Target]


def _bind_tsig(tmp: Path, stack: contextlib.ExitStack, env: pytest.MonkeyPatch) -> Target:
    need_bind()
    bind = Bind(tmp / "bind", [ZONE, REVERSE])
    stack.callback(bind.stop)
    bind.start()
    env.setenv(SECRET_ENV, bind.secret)
    return Target({"adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
                   "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"}, bind.dig)


def _powerdns_http(tmp: Path, stack: contextlib.ExitStack, env: pytest.MonkeyPatch) -> Target:
    need_pdns()
    pdns = PowerDns(tmp / "pdns")
    stack.callback(pdns.stop)
    pdns.start()
    for zone in (ZONE, REVERSE):
        pdns.create_zone(zone)
    env.setenv(SECRET_ENV, pdns.key)
    return Target({"adapter": "powerdns_http", "api_url": pdns.api,
                   "secret_ref": f"env:{SECRET_ENV}"}, pdns.dig)


def _ad_gsstsig(tmp: Path, stack: contextlib.ExitStack, env: pytest.MonkeyPatch) -> Target:
    need_bind()
    need_kerberos()
    realm = Realm(tmp / "krb", DNS_HOST)
    stack.callback(realm.stop)
    realm.start()
    stack.enter_context(realm.exported())  # the appliance runs in this process
    bind = realm.dns_server(tmp / "bind", [ZONE, REVERSE])
    stack.callback(bind.stop)
    bind.start()
    return Target({"adapter": "ad_gsstsig", "address": "127.0.0.1", "port": bind.port,
                   "krb_principal": "ipamd", "krb_realm": REALM,
                   "keytab_path": str(realm.keytab("ipamd")), "krb_service_host": DNS_HOST},
                  bind.dig)


def _embedded(tmp: Path, stack: contextlib.ExitStack, env: pytest.MonkeyPatch) -> Target:
    need_bind()  # for dig
    port = free_port()
    return Target({"adapter": "embedded"}, partial(dig_short, port),
                  {"dns": {"enabled": True, "listen": [f"127.0.0.1:{port}"],
                           "ns_name": DNS_HOST, "hostmaster": f"hostmaster.{ZONE}"}})


SETUPS: dict[str, Setup] = {"bind_tsig": _bind_tsig, "powerdns_http": _powerdns_http,
                            "ad_gsstsig": _ad_gsstsig, "embedded": _embedded}


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab, LAN, GATEWAY, UPSTREAM)


@pytest.fixture(params=list(SETUPS))
def target(request: pytest.FixtureRequest, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Target]:
    """The adapter's DNS server, started here and stopped (by pid) after the appliance."""
    with contextlib.ExitStack() as stack:
        yield SETUPS[request.param](tmp_path, stack, monkeypatch)


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet, target: Target) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_lab.serving(dhcp_net),
            "outbox": {"enabled": True, "workers": 2, "backoff_base_seconds": 0.1,
                       "backoff_max_seconds": 0.5, "backoff_jitter": 0.0,
                       "request_timeout_seconds": 2.0, "claim_timeout_seconds": 8.0,
                       "poll_interval_seconds": 0.2},
            **target.config}


async def _answers(target: Target, admin: httpx.AsyncClient, name: str, rtype: str,
                   want: list[str]) -> None:
    """Wait (bounded) until the adapter's server answers ``want`` for name/rtype."""
    with trio.move_on_after(ANSWER_WAIT):
        while (got := await trio.to_thread.run_sync(target.dig, name, rtype)) != want:
            await trio.sleep(0.2)
        return
    rows = (await admin.get("/outbox", params={"kind": "dns"})).json()["items"]
    seen = [(r["topic"], r["target"], r["state"], r["last_error"]) for r in rows]
    raise AssertionError(f"{target.adapter}: {name} {rtype} is {got}, wanted {want}; "
                         f"dns outbox rows: {seen}")


async def test_dhclient_lease_registers_and_release_removes(
    appliance, admin: httpx.AsyncClient, dhcp_net: DhcpNet, target: Target, tmp_path: Path,
) -> None:
    server = await dhcp_lab.created(admin, "/dns-servers", {"name": target.adapter, **target.server})
    for name in (ZONE, REVERSE):
        await dhcp_lab.created(admin, "/dns-zones", {"name": name, "server_id": server["id"]})
    prefix = await dhcp_lab.created(admin, "/prefixes", {"cidr": "10.77.53.0/24"})
    subnet = await dhcp_lab.created(admin, "/subnets", {
        "prefix_id": prefix["id"], "cidr": LAN, "gateway": GATEWAY,
        "ddns_adapter": target.adapter, "ddns_server_id": server["id"], "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE})
    await dhcp_lab.created(admin, f"/subnets/{subnet['id']}/pools",
                {"name": "clients", "start_ip": "10.77.53.50", "end_ip": "10.77.53.60"})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")

    client = dhcp_lab.Dhclient(dhcp_net, tmp_path, "E2E_Host")
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    ip, fqdn = bound["ip"], f"e2e-host.{ZONE}"
    reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
    await _answers(target, admin, fqdn, "A", [ip])
    await _answers(target, admin, reverse, "PTR", [fqdn + "."])
    lease = (await admin.get("/leases", params={"ip": ip})).json()["items"][0]
    assert lease["fqdn"] == fqdn and lease["hostname"] == "E2E_Host"

    released = await client.release()
    assert released.returncode == 0, released.stdout
    await _answers(target, admin, fqdn, "A", [])
    await _answers(target, admin, reverse, "PTR", [])
