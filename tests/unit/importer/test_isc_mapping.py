"""dhcpd.conf mapped onto the API's objects (spec §1's table; docs/migrating.md, "From ISC
dhcpd"): Debian's example, the worked site config, scopes and their precedence, options,
classes, hosts, and what is refused or noted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipamd.importer import isc, model
from ipamd.importer.model import Plan, Ref
from tests.support.isc_site import EXAMPLE, SITE, resolver, uncommented_example
from tests.unit.importer.helpers import bodies, noted, of_kind, refused, write


def isc_plan(tmp_path: Path, text: str) -> Plan:
    return isc.read(write(tmp_path, text, "dhcpd.conf"), resolver)


def subnet(plan: Plan, cidr: str) -> dict[str, Any]:
    obj = plan.get(model.subnet_key(cidr))
    assert obj is not None, cidr
    return dict(obj.body)


def options_of(plan: Plan, owner: str) -> dict[int, Any]:
    return {obj.body["code"]: obj.body["payload"] for obj in plan.objects if obj.owner == owner
            and obj.kind.endswith("_option")}


def test_debians_example_as_shipped_plans_its_global_settings(tmp_path):
    plan = isc.read(str(EXAMPLE))
    print("dhcpd.conf.example:", len(plan.objects), "mapped,", len(plan.refused), "refused,",
          len(plan.notes), "notes")
    assert (plan.objects, plan.refused) == ([], [])  # it declares no subnet
    assert noted(plan, "ddns-update-style none")


def test_debians_example_with_its_statements_on(tmp_path):
    plan = isc.read(uncommented_example(tmp_path), resolver)
    counts = plan.counts()
    print("dhcpd.conf.example (statements on):", len(plan.objects), "mapped,",
          counts["refused"], "refused,", len(plan.notes), "notes")
    assert (counts["subnet"], counts["pool"], counts["reservation"]) == (6, 5, 1)
    assert subnet(plan, "10.152.187.0/24")["dhcp_enabled"] is False
    assert subnet(plan, "10.254.239.0/27")["gateway"] == "10.254.239.1"
    assert subnet(plan, "10.5.5.0/27")["lease_time_seconds"] == 600
    foo = plan.get(model.class_key("foo"))
    assert foo is not None and (foo.body["match"], foo.body["value"]) == ("vendor_class", "SUNW")
    pools = {p["start_ip"]: p for p in bodies(plan, "pool")}
    assert pools["10.17.224.10"]["class_id"] == Ref(model.class_key("foo"))
    assert "class_id" not in pools["10.0.29.10"]
    (reservation,) = bodies(plan, "reservation")
    assert (reservation["ip"], reservation["mac"]) == ("10.5.5.20", "08:00:07:26:c0:a5")
    passacaglia = plan.get(model.class_key("host passacaglia"))
    assert passacaglia is not None and passacaglia.body["value"] == "00:00:c0:5d:bd:95"
    assert refused(plan, "deny members of", "open to every client")
    assert refused(plan, "server-name", "sname")
    assert refused(plan, "option routers rtr-239-0-1", "10.254.239.2 is not")
    assert refused(plan, "broadcast-address 10.254.239.31", "10.254.239.63")


def test_the_site_config_plans_every_construct(tmp_path):
    plan = isc.read(str(SITE), resolver)
    counts = plan.counts()
    assert {k: v for k, v in counts.items() if v} == {
        "prefix": 6, "subnet": 6, "pool": 8, "reservation": 3, "client_class": 6,
        "subnet_option": 14, "class_option": 2, "reservation_option": 2, "shared_network": 1,
        "refused": 14}
    assert len(plan.notes) == 17  # docs/migrating.md, "From ISC dhcpd", gives these counts
    office = subnet(plan, "10.77.1.0/24")
    assert {k: office[k] for k in ("lease_time_seconds", "min_lease_time_seconds",
                                   "max_lease_time_seconds", "gateway", "ntp_servers")} == {
        "lease_time_seconds": 600, "min_lease_time_seconds": 60, "max_lease_time_seconds": 7200,
        "gateway": "10.77.1.1", "ntp_servers": ["10.77.0.123"]}
    assert options_of(plan, model.subnet_key("10.77.1.0/24")) == {
        224: {"hex": "68:65:6c:6c:6f"},
        121: {"routes": [{"destination": "10.77.9.0/24", "router": "10.77.1.1"}]},
        15: {"value": "site.example"},
        6: {"addresses": ["10.77.0.53", "10.77.0.54"]}}
    campus = model.shared_network_key("campus")
    for cidr in ("10.77.10.0/24", "10.77.11.0/24"):
        assert subnet(plan, cidr)["shared_network_id"] == Ref(campus)
        assert options_of(plan, model.subnet_key(cidr))[15] == {"value": "campus.site.example"}
    assert subnet(plan, "10.77.2.0/24")["dhcp_enabled"] is False


def test_the_site_configs_classes_match_as_dhcpd_did(tmp_path):
    plan = isc.read(str(SITE), resolver)
    classes = {c["name"]: c for c in bodies(plan, "client_class")}
    assert {name: (c["match"], c["value"], c["priority"]) for name, c in classes.items()} == {
        "pxe-bios": ("vendor_class", "PXEClient", 100), "uefi-x64": ("arch", "7", 100),
        "phones": ("mac_prefix", "00:04:f2", 100), "ipxe": ("user_class", "iPXE", 100),
        "if dhcpd.conf:128": ("user_class", "legacy", 200),
        "host roaming": ("mac_prefix", "02:00:00:00:03:14", 50)}
    assert list(classes) == ["pxe-bios", "uefi-x64", "phones", "ipxe", "if dhcpd.conf:128",
                             "host roaming"]
    assert classes["if dhcpd.conf:128"]["boot_file"] == "legacy.0"  # a global if's block
    assert (classes["pxe-bios"]["boot_file"], classes["pxe-bios"]["next_server"]) == (
        "pxelinux.0", "10.77.1.5")
    assert options_of(plan, model.class_key("phones")) == {150: {"addresses": ["10.77.1.6"]}}
    # vendor-option-space PXE: option 43 of the PXE space's options (mtftp-ip, code 1)
    assert options_of(plan, model.class_key("pxe-bios")) == {43: {"hex": "01:04:0a:4d:01:05"}}
    assert refused(plan, "class 'either'", "and/or/not")
    assert refused(plan, "class 'by-client'", "subclasses")
    assert refused(plan, 'subclass "by-client"', "no equivalent")
    assert refused(plan, "class 'spawned'", "spawning")
    assert not noted(plan, "compares option 60 whole")  # only said of a class that is planned


def test_the_site_configs_hosts_are_reservations_with_their_scopes(tmp_path):
    plan = isc.read(str(SITE), resolver)
    lab = model.subnet_key("10.77.3.0/24")
    found = {r["hostname"]: r for r in bodies(plan, "reservation")}
    assert found["printer"] == {"ip": "10.77.3.10", "mac": "02:00:00:00:03:10",
                                "boot_file": "lab.0", "hostname": "printer"}
    assert found["scanner"]["mac"] == "02:00:00:00:03:11"  # client id 01 + MAC
    assert "client_id" not in found["scanner"]
    assert found["kiosk"]["client_id"] == "6b:69:6f:73:6b:2d:31:32"  # "kiosk-12"
    assert found["kiosk"]["next_server"] == "10.77.3.5"
    printer = model.reservation_key("10.77.3.0/24", "10.77.3.10")
    scanner = model.reservation_key("10.77.3.0/24", "10.77.3.11")
    assert options_of(plan, printer) == {15: {"value": "lab.site.example"}}  # the group's
    assert options_of(plan, scanner) == {15: {"value": "scan.site.example"}}  # its own wins
    assert all(obj.owner == lab for obj in of_kind(plan, "reservation"))
    assert refused(plan, "host by-id-only", "no MAC")
    assert refused(plan, "lost.site.example", "does not resolve")
    assert noted(plan, "host known-only", "nothing to create")
    assert noted(plan, "scanner.site.example resolved to 10.77.3.11")


def test_the_site_configs_refusals_and_notes_name_their_lines(tmp_path):
    plan = isc.read(str(SITE), resolver)
    lines = {(item.source.line, item.construct.split()[0]) for item in plan.refused
             if item.source.file == str(SITE)}
    assert {(124, "deny"), (132, "frobnicate"), (82, "server-name"),
            (101, "option"), (78, "option"), (79, "option"), (91, "deny")} <= lines
    assert noted(plan, 'failover peer "partner"', "not applicable")
    assert noted(plan, 'key "ddns-key"', "secret_ref")
    assert noted(plan, "range 10.77.4.1 10.77.4.20", "planned around it")
    assert "c2VjcmV0" not in json.dumps(model.to_json(plan))  # the DDNS secret never shows


def test_without_a_resolver_names_are_refused_naming_them(tmp_path):
    plan = isc.read(str(SITE))
    assert refused(plan, "ns1.site.example is a DNS name")
    assert refused(plan, "scanner.site.example is a DNS name")
    assert options_of(plan, model.subnet_key("10.77.1.0/24")).get(6) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("", (43_200, 300, 86_400)),  # dhcpd's defaults, never the appliance's 86400 s
    ("default-lease-time 9000; max-lease-time 3600;", (3_600, 300, 3_600)),
    ("default-lease-time 120;", (300, 300, 86_400)),  # raised to dhcpd's minimum
    ("max-lease-time 200;", (200, 200, 200)),  # the minimum is at most the maximum
    ("default-lease-time 600; min-lease-time 900; max-lease-time 800;", (900, 900, 900)),
])
def test_lease_times_are_what_dhcpd_would_give(tmp_path, text, expected):
    plan = isc_plan(tmp_path, f"{text}\nsubnet 10.77.0.0 netmask 255.255.255.0 {{ }}\n")
    body = subnet(plan, "10.77.0.0/24")
    assert (body["lease_time_seconds"], body["min_lease_time_seconds"],
            body["max_lease_time_seconds"]) == expected
    assert noted(plan, "dhcpd's default, 43200") is ("default-lease-time" not in text)


def test_option_precedence_folds_outer_scopes_into_the_subnet(tmp_path):
    plan = isc_plan(tmp_path, """\
        option domain-name "global.example";
        option domain-name-servers 10.77.0.53;
        option time-offset 3600;
        group {
          option domain-name-servers 10.77.0.54;
          shared-network link {
            option time-offset 7200;
            subnet 10.77.1.0 netmask 255.255.255.0 { option domain-name "one.example"; }
          }
          subnet 10.77.2.0 netmask 255.255.255.0 { }
        }
        subnet 10.77.3.0 netmask 255.255.255.0 { }
        group {
          option domain-name "hosts.example";
          host a { hardware ethernet 02:00:00:00:00:0a; fixed-address 10.77.3.10; }
        }
        """)
    one, two, three = (options_of(plan, model.subnet_key(f"10.77.{n}.0/24")) for n in (1, 2, 3))
    assert one == {15: {"value": "one.example"}, 2: {"value": 7200},
                   6: {"addresses": ["10.77.0.54"]}}
    assert two == {6: {"addresses": ["10.77.0.54"]}, 15: {"value": "global.example"},
                   2: {"value": 3600}}
    assert three == {15: {"value": "global.example"}, 6: {"addresses": ["10.77.0.53"]},
                     2: {"value": 3600}}
    host = model.reservation_key("10.77.3.0/24", "10.77.3.10")
    assert options_of(plan, host) == {15: {"value": "hosts.example"}}  # beats the subnet's


def test_option_values_in_dhcpds_forms(tmp_path):
    plan = isc_plan(tmp_path, """\
        option local-servers code 150 = array of ip-address;
        option site-flag code 225 = boolean;
        option site-pair code 226 = { unsigned integer 16, text };
        option site-sub code 227 = encapsulate site;
        subnet 10.77.0.0 netmask 255.255.255.0 {
          option vendor-encapsulated-options 01:04:0a:4d:00:01;
          option vendor-class-identifier "ipamd";
          option domain-search "a.example", "b.example";
          option ip-forwarding off;
          option interface-mtu 1400;
          option static-routes 10.77.9.9 10.77.0.1;
          option local-servers 10.77.0.5, 10.77.0.6;
          option site-flag on;
          option site-pair 8 "x";
          option site-sub 1;
          option unknown-thing 1;
        }
        """)
    assert options_of(plan, model.subnet_key("10.77.0.0/24")) == {
        43: {"hex": "01:04:0a:4d:00:01"}, 60: {"value": "ipamd"},
        119: {"domains": ["a.example", "b.example"]}, 19: {"value": 0}, 26: {"value": 1400},
        33: {"hex": "0a:4d:09:09:0a:4d:00:01"}, 150: {"addresses": ["10.77.0.5", "10.77.0.6"]},
        225: {"hex": "01"}, 226: {"hex": "00:08:78"}}
    assert noted(plan, "site-sub", "not used")
    names = isc_plan(tmp_path, """\
        subnet 10.77.0.0 netmask 255.255.255.0 {
          option domain-name "bad name";
          option domain-search "one.example";
        }
        subnet 10.77.1.0 netmask 255.255.255.0 { option domain-search "a_b.example"; }
        """)
    assert options_of(names, model.subnet_key("10.77.0.0/24")) == {
        119: {"domains": ["one.example"]}}
    assert refused(names, 'option domain-name "bad name"', "not a DNS name")
    assert refused(names, 'option domain-search "a_b.example"', "not a DNS name")
    assert refused(plan, "option site-sub 1", "no definition")
    assert refused(plan, "option unknown-thing 1", "not a standard DHCPv4 option")


def test_hosts_the_api_would_refuse_are_refused_here(tmp_path):
    plan = isc_plan(tmp_path, """\
        subnet 10.77.0.0 netmask 255.255.255.0 { option routers 10.77.0.1; }
        subnet 10.77.0.128 netmask 255.255.255.128 { }
        subnet 10.77.1.0 netmask 255.255.255.0 { }
        host a { hardware ethernet 02:00:00:00:00:01; fixed-address 10.77.0.10; }
        host b { hardware ethernet 02:00:00:00:00:02; fixed-address 10.77.0.10; }
        host c { hardware ethernet 02:00:00:00:00:01; fixed-address 10.77.0.11; }
        host d { hardware ethernet 01:00:5e:00:00:01; fixed-address 10.77.0.12; }
        host e { hardware ethernet 02:00:00:00:00:05; fixed-address 10.77.0.1; }
        host f { hardware ethernet 02:00:00:00:00:06; fixed-address 10.99.0.1; }
        host g { hardware token-ring 02:00:00:00:00:07; fixed-address 10.77.0.13; }
        host h { hardware ethernet 02:00:00:00:00:08; fixed-address 10.77.0.14, 10.77.1.14; }
        host i { hardware ethernet 02:00:00:00:00:09; fixed-address 10.77.0.16, 10.77.0.17; }
        host j { hardware ethernet 02:00:00:00:00:10; fixed-address 10.77.1.255; }
        """)
    assert refused(plan, "subnet 10.77.0.128", "overlaps the subnet 10.77.0.0/24")
    assert [r["ip"] for r in bodies(plan, "reservation")] == [
        "10.77.0.10", "10.77.0.14", "10.77.1.14", "10.77.0.16"]  # one address a subnet
    assert refused(plan, "host i", "its MAC is reserved")
    assert refused(plan, "host j", "10.77.1.255 is the network or broadcast address")
    assert refused(plan, "host b", "its address is reserved")
    assert refused(plan, "host c", "its MAC is reserved")
    assert refused(plan, "host d", "multicast")
    assert refused(plan, "host e", "router")
    assert refused(plan, "host f", "10.99.0.1: no subnet")
    assert refused(plan, "host g", "hardware ethernet")


def test_pools_follow_their_permits(tmp_path):
    plan = isc_plan(tmp_path, """\
        class "known" { match if substring (hardware, 1, 2) = 02:00; }
        class "odd" { match if exists agent.circuit-id; }
        subnet 10.77.0.0 netmask 255.255.255.0 {
          pool { allow members of "known"; range 10.77.0.10 10.77.0.19; }
          pool { allow members of "odd"; range 10.77.0.20 10.77.0.29; }
          pool { allow members of "known"; allow members of "odd"; range 10.77.0.30; }
          pool { allow unknown-clients; range 10.77.0.40 10.77.0.49; }
          pool { range 10.77.0.45 10.77.0.59; }
          pool { option domain-name "pool.example"; range 10.77.0.60 10.77.0.69; }
        }
        """)
    pools = {p["start_ip"]: p for p in bodies(plan, "pool")}
    assert list(pools) == ["10.77.0.10", "10.77.0.40", "10.77.0.60"]
    assert pools["10.77.0.10"]["class_id"] == Ref(model.class_key("known"))
    assert refused(plan, "range 10.77.0.20", "'odd' is not mapped")
    assert refused(plan, "range 10.77.0.30", "several classes")
    assert refused(plan, "allow unknown-clients", "open to every client")
    assert refused(plan, "range 10.77.0.45", "overlaps the range")
    assert refused(plan, 'option domain-name "pool.example"', "a parameter of a pool")


def test_statements_of_other_kinds_are_noted_or_refused(tmp_path):
    plan = isc_plan(tmp_path, """\
        not authoritative;
        ddns-update-style interim;
        ddns-domainname "site.example";
        lease-file-name "/var/lib/dhcp/dhcpd.leases";
        subnet6 2001:db8:77::/64 { range6 2001:db8:77::10 2001:db8:77::20; }
        on commit { set x = 1; }
        deny bootp;
        allow bootp;
        """)
    assert noted(plan, "not authoritative", "always authoritative")
    assert noted(plan, "ddns-update-style interim", "DDNS")
    assert noted(plan, "ddns-domainname", "DDNS")
    assert noted(plan, "lease-file-name", "never imported")
    assert refused(plan, "subnet6", "DHCPv6")
    assert refused(plan, "on commit", "event statements")
    assert noted(plan, "deny bootp") and refused(plan, "allow bootp", "no equivalent")
    assert plan.objects == []


def test_a_name_declared_twice_keeps_the_first(tmp_path):
    plan = isc_plan(tmp_path, """\
        class "pxe" { match if substring (option vendor-class-identifier, 0, 3) = "PXE"; }
        class "pxe" { match if option user-class = "other"; }
        shared-network "link" { subnet 10.77.1.0 netmask 255.255.255.0 { } }
        shared-network "link" { subnet 10.77.2.0 netmask 255.255.255.0 { } }
        host twin { hardware ethernet 02:00:00:00:00:01; filename "a"; }
        host twin { hardware ethernet 02:00:00:00:00:02; filename "b"; }
        subnet 10.77.3.0 netmask 255.255.255.0 {
          pool { allow members of "pxe"; range 10.77.3.10 10.77.3.20; }
        }
        """)
    classes = bodies(plan, "client_class")
    assert [(c["name"], c["value"]) for c in classes] == [("pxe", "PXE"),
                                                         ("host twin", "02:00:00:00:00:01")]
    assert refused(plan, 'class "pxe"', "declared at", "the first declaration is planned")
    assert refused(plan, "host twin", "declared at")
    link = model.shared_network_key("link")
    assert subnet(plan, "10.77.1.0/24")["shared_network_id"] == Ref(link)
    assert "shared_network_id" not in subnet(plan, "10.77.2.0/24")
    (pool,) = bodies(plan, "pool")
    assert pool["class_id"] == Ref(model.class_key("pxe"))


def test_settings_in_the_wrong_scope_are_refused(tmp_path):
    plan = isc_plan(tmp_path, """\
        site-option-space PXE;
        server-identifier 10.77.0.1;
        subnet 10.77.0.0 netmask 255.255.255.0 { hardware ethernet 02:00:00:00:00:01; }
        class "c" { match if option user-class = "c"; default-lease-time 60; }
        group {
          max-lease-time 120;
          host a { hardware ethernet 02:00:00:00:00:02; fixed-address 10.77.0.10; }
        }
        """)
    assert refused(plan, "site-option-space", "by its code")
    assert refused(plan, "server-identifier", "dhcp.server_id")
    assert refused(plan, "hardware ethernet", "outside a host declaration")
    assert refused(plan, "default-lease-time 60", "a class's clients")
    assert refused(plan, "max-lease-time 120", "a reservation's clients")
    assert subnet(plan, "10.77.0.0/24")["max_lease_time_seconds"] == 86_400
    assert [r["ip"] for r in bodies(plan, "reservation")] == ["10.77.0.10"]


def test_a_class_declared_in_a_subnet_is_a_class_with_its_own_settings(tmp_path):
    plan = isc_plan(tmp_path, """\
        option architecture-type code 93 = unsigned integer 16;
        subnet 10.77.0.0 netmask 255.255.255.0 {
          option domain-name "lan.example";
          range 10.77.0.10 10.77.0.20;
          class "pxeclients" {
            match if substring (option vendor-class-identifier, 0, 9) = "PXEClient";
            next-server 10.77.0.1;
            if option architecture-type = 00:07 {
              filename "BOOTX64.EFI";
            } else {
              filename "pxelinux/pxelinux.0";
            }
          }
        }
        """)
    (pxe,) = bodies(plan, "client_class")
    assert (pxe["name"], pxe["value"], pxe["next_server"]) == ("pxeclients", "PXEClient",
                                                               "10.77.0.1")
    assert "boot_file" not in pxe
    assert options_of(plan, model.class_key("pxeclients")) == {}
    assert refused(plan, "if option architecture-type", "conditional statements")
    assert refused(plan, "else", "conditional statements")


def test_vendor_option_space_makes_option_43_where_dhcpd_does(tmp_path):
    plan = isc_plan(tmp_path, """\
        option space PXE;
        option PXE.mtftp-ip code 1 = ip-address;
        option PXE.mtftp-cport code 2 = unsigned integer 16;
        option PXE.discovery-control code 6 = unsigned integer 8;
        option space wide code width 2 length width 2;
        option wide.x code 1 = text;
        option PXE.mtftp-ip 10.77.0.5;
        class "pxe" {
          match if substring (option vendor-class-identifier, 0, 9) = "PXEClient";
          vendor-option-space PXE;
          option PXE.discovery-control 3;
        }
        subnet 10.77.0.0 netmask 255.255.255.0 {
          option PXE.mtftp-cport 1758;
          option wide.x "y";
        }
        subnet 10.77.1.0 netmask 255.255.255.0 {
          vendor-option-space PXE;
          option PXE.mtftp-cport 1759;
        }
        """)
    assert options_of(plan, model.class_key("pxe")) == {
        43: {"hex": "01:04:0a:4d:00:05:06:01:03"}}  # its own and the global one, by code
    assert options_of(plan, model.subnet_key("10.77.1.0/24")) == {
        43: {"hex": "01:04:0a:4d:00:05:02:02:06:df"}}
    assert options_of(plan, model.subnet_key("10.77.0.0/24")) == {}
    assert noted(plan, "option PXE.mtftp-cport 1758", "only in option 43")
    assert noted(plan, "option space wide", "refused where set")
    both = isc_plan(tmp_path, """\
        option space PXE;
        option PXE.mtftp-ip code 1 = ip-address;
        subnet 10.77.0.0 netmask 255.255.255.0 {
          vendor-option-space PXE;
          option PXE.mtftp-ip 10.77.0.5;
          option vendor-encapsulated-options 01:04:0a:4d:00:06;
        }
        """)
    assert options_of(both, model.subnet_key("10.77.0.0/24")) == {
        43: {"hex": "01:04:0a:4d:00:06"}}
    assert refused(both, "vendor-option-space PXE", "vendor-encapsulated-options already")
    assert refused(plan, 'option wide.x "y"', "without a definition")


def test_a_global_if_on_a_client_test_is_a_class_and_its_else_the_global_scope(tmp_path):
    plan = isc_plan(tmp_path, """\
        option arch code 93 = unsigned integer 16;
        filename "old.0";
        if exists user-class and option user-class = "iPXE" {
          filename "http://10.77.0.5/boot.ipxe";
        } elsif option arch = 00:07 {
          filename "ipxe.efi";
          next-server 10.77.0.5;
        } else {
          filename "undionly.kpxe";
          next-server 10.77.0.6;
        }
        if option user-class = "x" { option domain-name "x.example"; } else { ping-check true; }
        if option user-class = "a" or option user-class = "b" { filename "ab"; }
        subnet 10.77.0.0 netmask 255.255.255.0 { range 10.77.0.10 10.77.0.20; }
        subnet 10.77.1.0 netmask 255.255.255.0 {
          filename "own.0";
          if option user-class = "iPXE" { filename "x"; }
        }
        """)
    classes = {c["name"]: c for c in bodies(plan, "client_class")}
    assert {name: (c["match"], c["value"], c["priority"], c.get("boot_file"),
                   c.get("next_server")) for name, c in classes.items()} == {
        "if dhcpd.conf:3": ("user_class", "iPXE", 200, "http://10.77.0.5/boot.ipxe", None),
        "if dhcpd.conf:5": ("arch", "7", 201, "ipxe.efi", "10.77.0.5")}
    zero = subnet(plan, "10.77.0.0/24")
    assert (zero["boot_file"], zero["next_server"]) == ("undionly.kpxe", "10.77.0.6")
    assert subnet(plan, "10.77.1.0/24")["boot_file"] == "own.0"
    assert noted(plan, "next-server 10.77.0.6", "does not")  # the iPXE branch sets none
    assert refused(plan, 'if option user-class = "x"', "its else block holds 'ping-check")
    assert refused(plan, 'if option user-class = "a"', "and/or/not")
    assert refused(plan, 'if option user-class = "iPXE"', "conditional statements")


def test_renewal_and_rebinding_times_are_kept_when_the_appliance_derives_them(tmp_path):
    plan = isc_plan(tmp_path, """\
        default-lease-time 3600;
        option dhcp-renewal-time 1800;
        subnet 10.77.0.0 netmask 255.255.255.0 { option dhcp-rebinding-time 3150; }
        subnet 10.77.1.0 netmask 255.255.255.0 { option dhcp-rebinding-time 3000; }
        class "c" { match if option user-class = "c"; option dhcp-renewal-time 1800; }
        """)
    assert sorted(item.source.line for item in plan.refused) == [4, 5]
    assert refused(plan, "dhcp-rebinding-time 3000", "3150 s for 3600 s")
    assert refused(plan, "option dhcp-renewal-time 1800", "not a class's")
