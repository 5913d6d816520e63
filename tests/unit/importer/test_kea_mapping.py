"""Kea constructs one by one: what each maps to, or why it is refused (docs/migrating.md)."""

from __future__ import annotations

import pytest

from ipamd.importer.kea_classes import map_test
from ipamd.importer.options import Unmappable
from tests.unit.importer.helpers import bodies, kea4, kea6, noted, of_kind, refusals, refused

NET = "10.77.1.0/24"


def subnet4(**extra):
    return {"subnet": NET, "pools": [{"pool": "10.77.1.100 - 10.77.1.199"}], **extra}


def test_global_options_reach_every_subnet_and_a_subnet_value_wins(tmp_path):
    plan = kea4(tmp_path, {
        "option-data": [{"name": "domain-name-servers", "data": "10.77.0.53"},
                        {"name": "domain-name", "data": "lan.example"}],
        "subnet4": [subnet4(**{"option-data": [
            {"name": "domain-name-servers", "data": "10.77.1.53, 10.77.1.54"},
            {"name": "routers", "data": "10.77.1.1"}]}),
            {"subnet": "10.77.2.0/24"}],
    })
    by_subnet: dict[str, dict[int, object]] = {}
    for obj in of_kind(plan, "subnet_option"):
        by_subnet.setdefault(obj.owner, {})[obj.body["code"]] = obj.body["payload"]
    assert by_subnet["subnet:10.77.1.0/24"] == {
        6: {"addresses": ["10.77.1.53", "10.77.1.54"]}, 15: {"value": "lan.example"}}
    assert by_subnet["subnet:10.77.2.0/24"] == {
        6: {"addresses": ["10.77.0.53"]}, 15: {"value": "lan.example"}}
    assert bodies(plan, "subnet")[0]["gateway"] == "10.77.1.1"


def test_lifetimes_kea_default_and_bounds(tmp_path):
    plan = kea4(tmp_path, {"min-valid-lifetime": 600, "max-valid-lifetime": 9000,
                           "subnet4": [subnet4(), subnet4(subnet="10.77.2.0/24", pools=[],
                                                          **{"valid-lifetime": 60})]})
    first, second = bodies(plan, "subnet")
    assert (first["lease_time_seconds"], first["min_lease_time_seconds"],
            first["max_lease_time_seconds"]) == (7200, 600, 9000)
    assert noted(plan, "no valid-lifetime", "7200 s", "not the appliance's 86400 s")
    # 600 does not hold a 60 s lease: refused once, at its line, and left out
    assert second["lease_time_seconds"] == 60 and "min_lease_time_seconds" not in second
    assert refused(plan, "min-valid-lifetime", "does not hold the subnet's lease time 60 s")


def test_timers_that_match_the_derived_ones_are_not_refused(tmp_path):
    plan = kea4(tmp_path, {"valid-lifetime": 4000, "renew-timer": 2000, "rebind-timer": 3500,
                           "subnet4": [subnet4()]})
    assert plan.refused == []


def test_the_router_comes_out_of_a_pool_that_holds_it(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [subnet4(
        pools=[{"pool": "10.77.1.0/24"}],
        **{"option-data": [{"name": "routers", "data": "10.77.1.100"}]})]})
    assert [(b["start_ip"], b["end_ip"]) for b in bodies(plan, "pool")] == [
        ("10.77.1.1", "10.77.1.99"), ("10.77.1.101", "10.77.1.254")]
    assert noted(plan, "split around it")


@pytest.mark.parametrize("option, words", [
    ({"name": "subnet-mask", "data": "255.255.0.0"}, ("subnet-mask 255.255.0.0 differs",)),
    ({"name": "broadcast-address", "data": "10.77.1.127"}, ("broadcast-address",)),
    ({"name": "dhcp-server-identifier", "data": "10.77.1.2"}, ("dhcp.server_id",)),
    ({"name": "tftp-servers", "space": "vendor-4491", "data": "10.77.1.2"},
     ("option space 'vendor-4491'",)),
    ({"name": "no-such-option", "data": "1"}, ("'no-such-option' is not a DHCPv4 option",)),
    ({"name": "interface-mtu", "data": "20"}, ("outside 68..65535",)),
    ({"code": 200, "data": "1"}, ("format is unknown",)),
])
def test_options_without_an_equivalent_are_refused_by_name(tmp_path, option, words):
    plan = kea4(tmp_path, {"subnet4": [subnet4(**{"option-data": [option]})]})
    assert refused(plan, *words), refusals(plan)
    assert of_kind(plan, "subnet_option") == []


def test_an_owned_option_equal_to_the_derived_value_is_taken_silently(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [subnet4(**{"option-data": [
        {"name": "subnet-mask", "data": "255.255.255.0"},
        {"name": "tftp-server-name", "data": "10.77.1.5"},
        {"name": "boot-file-name", "data": "pxelinux.0"}]})]})
    subnet = bodies(plan, "subnet")[0]
    assert (subnet["next_server"], subnet["boot_file"]) == ("10.77.1.5", "pxelinux.0")
    assert plan.refused == []


def test_custom_options_are_sent_by_code_as_octets(tmp_path):
    plan = kea4(tmp_path, {
        "option-def": [{"name": "site-id", "code": 224, "type": "uint16", "array": True},
                       {"name": "site-name", "code": 225, "type": "string"}],
        "option-data": [{"name": "site-id", "data": "1, 258"},
                        {"code": 225, "data": "lab"},
                        {"code": 43, "csv-format": False, "data": "01:04:0A:4D:01:05"}],
        "subnet4": [subnet4()]})
    options = {body["code"]: body["payload"] for body in bodies(plan, "subnet_option")}
    assert options == {224: {"hex": "00:01:01:02"}, 225: {"hex": "6c:61:62"},
                       43: {"hex": "01:04:0a:4d:01:05"}}
    assert noted(plan, "option 224 (site-id, defined by option-def as uint16[])")


def test_dns_names_resolve_through_the_resolver_given_or_are_refused(tmp_path):
    config = {"subnet4": [subnet4(**{"next-server": "boot.lab", "option-data": [
        {"name": "ntp-servers", "data": "ntp.lab"}]})]}
    table = {("boot.lab", 4): ["10.77.1.5"], ("ntp.lab", 4): ["10.77.1.6", "10.77.1.7"]}

    def resolver(name: str, family: int) -> list[str]:
        if (name, family) not in table:
            raise LookupError("no such name")
        return table[(name, family)]

    plan = kea4(tmp_path, config, resolver)
    subnet = bodies(plan, "subnet")[0]
    assert subnet["next_server"] == "10.77.1.5"
    assert subnet["ntp_servers"] == ["10.77.1.6", "10.77.1.7"]
    assert noted(plan, "ntp.lab resolved to 10.77.1.6, 10.77.1.7")
    without = kea4(tmp_path, config)
    assert refused(without, "next-server", "boot.lab is a DNS name")
    assert refused(without, "ntp-servers", "ntp.lab is a DNS name")
    assert "next_server" not in bodies(without, "subnet")[0]


def test_reservations_identities_and_hosts_without_an_address(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [subnet4(reservations=[
        {"client-id": "01:02:aa:bb:cc:dd:ee", "ip-address": "10.77.1.10", "hostname": "pc1"},
        {"hw-address": "02:00:00:00:00:02", "ip-address": "10.77.1.11",
         "option-data": [{"name": "domain-name-servers", "data": "10.77.1.53"}]},
        {"client-id": "ff:00:00:00:01:00:01", "ip-address": "10.77.1.12"},
        {"hw-address": "02:00:00:00:00:03", "hostname": "no-address"},
        {"hw-address": "02:00:00:00:00:02", "ip-address": "10.77.1.13"},
        {"hw-address": "02:00:00:00:00:04", "ip-address": "10.77.9.1"},
    ])]})
    assert bodies(plan, "reservation") == [
        {"ip": "10.77.1.10", "mac": "02:aa:bb:cc:dd:ee", "hostname": "pc1"},
        {"ip": "10.77.1.11", "mac": "02:00:00:00:00:02"}]
    assert bodies(plan, "reservation_option") == [
        {"code": 6, "payload": {"addresses": ["10.77.1.53"]}}]
    assert refused(plan, "client-id ff:00:00:00:01:00:01 is not of the 01 + MAC form")
    assert refused(plan, "without an address is not a reservation")
    assert refused(plan, "02:00:00:00:00:02 is already reserved")
    assert refused(plan, "outside the subnet")


def test_global_reservations_land_in_the_subnet_that_holds_them(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [subnet4()], "reservations": [
        {"hw-address": "02:00:00:00:00:05", "ip-address": "10.77.1.20"},
        {"hw-address": "02:00:00:00:00:06", "ip-address": "10.99.0.1"}]})
    (reservation,) = of_kind(plan, "reservation")
    assert reservation.owner == "subnet:10.77.1.0/24"
    assert refused(plan, "reservation 10.99.0.1", "no planned subnet")


def test_hooks_ha_is_not_applicable_others_are_refused_unknown_keys_too(tmp_path):
    plan = kea4(tmp_path, {"hooks-libraries": [
        {"library": "/usr/lib/kea/hooks/libdhcp_ha.so"},
        {"library": "/usr/lib/kea/hooks/libdhcp_flex_id.so"}],
        "lease-database": {"type": "memfile"}, "no-such-key": 1, "subnet4": []})
    assert noted(plan, "libdhcp_ha.so", "not applicable")
    assert noted(plan, "lease-database", "never imported")
    assert refused(plan, "libdhcp_flex_id.so")
    assert refused(plan, "no-such-key", "no equivalent")


def test_overlapping_subnets_and_pools_are_refused_at_their_lines(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [
        subnet4(pools=[{"pool": "10.77.1.10-10.77.1.20"}, {"pool": "10.77.1.15-10.77.1.30"}]),
        {"subnet": "10.77.1.128/25"}]})
    assert refused(plan, "overlaps the pool 10.77.1.10-10.77.1.20")
    assert refused(plan, "10.77.1.128/25 overlaps 10.77.1.0/24")
    assert len(of_kind(plan, "subnet")) == 1


def test_dhcp6_subnets_options_and_delegation(tmp_path):
    plan = kea6(tmp_path, {"valid-lifetime": 4000, "subnet6": [{
        "subnet": "2001:db8:77::/64", "pools": [{"pool": "2001:db8:77::/120"}],
        "pd-pools": [{"prefix": "2001:db8:7700::", "prefix-len": 40, "delegated-len": 56}],
        "option-data": [{"name": "dns-servers", "data": "2001:db8:77::53"},
                        {"name": "sntp-servers", "data": "2001:db8:77::123"}],
        "reservations": [{"duid": "00:03:00:01:02:00:00:00:00:07",
                          "ip-addresses": ["2001:db8:77::7"]}]}]})
    assert bodies(plan, "pool")[0] == {"name": "kea 2001:db8:77::1-2001:db8:77::ff",
                                       "start_ip": "2001:db8:77::1", "end_ip": "2001:db8:77::ff"}
    assert bodies(plan, "pd_pool") == [{"name": "kea 2001:db8:7700::/40",
                                        "prefix": "2001:db8:7700::/40", "delegated_length": 56}]
    assert [body["cidr"] for body in bodies(plan, "prefix")] == [
        "2001:db8:77::/64", "2001:db8:7700::/40"]
    assert bodies(plan, "subnet_option") == [
        {"code": 23, "payload": {"addresses": ["2001:db8:77::53"]}}]
    assert refused(plan, "sntp", "17, 23, 24, 56 and 59")
    assert bodies(plan, "reservation") == [
        {"ip": "2001:db8:77::7", "duid": "00:03:00:01:02:00:00:00:00:07"}]


@pytest.mark.parametrize("test, family, match, value", [
    ("substring(option[60].hex,0,9) == 'PXEClient'", 4, "vendor_class", "PXEClient"),
    ("option[60].text == 'MSFT 5.0'", 4, "vendor_class", "MSFT 5.0"),
    ("option[77].hex == 'iPXE'", 4, "user_class", "iPXE"),
    ("option[93].hex == 0x0007", 4, "arch", "7"),
    ("substring(pkt4.mac, 0, 3) == 0x001122", 4, "mac_prefix", "00:11:22"),
    ("relay4[1].hex == 0x0a0b", 4, "circuit_id", "0a:0b"),
    ("relay4[2].hex == 'port7'", 4, "remote_id", "70:6f:72:74:37"),
    ("substring(option[15].hex, 2, 4) == 'iPXE'", 6, "user_class", "iPXE"),
])
def test_class_tests_that_map(test, family, match, value):
    found = map_test(test, family, {})
    assert (found.match, found.value) == (match, value)


@pytest.mark.parametrize("test, family, words", [
    ("pkt4.msgtype == 1", 4, "no equivalent"),
    ("member('VoIP') and member('KNOWN')", 4, "no equivalent"),
    ("member('KNOWN')", 4, "built-in class KNOWN"),
    ("member('nowhere')", 4, "not mapped"),
    ("substring(option[60].hex,0,9) == 'PXE'", 4, "never matches"),
    ("option[61].hex == 0x0007", 6, "DHCPv4 option 93 only"),
    ("vendor.enterprise == 4491", 6, "no equivalent"),
])
def test_class_tests_that_are_refused_name_why(test, family, words):
    with pytest.raises(Unmappable, match=words.replace("(", r"\(")):
        map_test(test, family, {})


def test_member_of_a_mapped_class_takes_its_match(tmp_path):
    plan = kea4(tmp_path, {"client-classes": [
        {"name": "pxe", "test": "substring(option[60].hex,0,9) == 'PXEClient'"},
        {"name": "also-pxe", "test": "member('pxe')", "boot-file-name": "ipxe.efi",
         "option-data": [{"name": "domain-name-servers", "data": "10.77.1.53"}]},
        {"name": "no-test"}]})
    assert [(b["name"], b["match"], b["value"]) for b in bodies(plan, "client_class")] == [
        ("pxe", "vendor_class", "PXEClient"), ("also-pxe", "vendor_class", "PXEClient")]
    (option,) = of_kind(plan, "class_option")
    assert option.owner == "client_class:also-pxe"
    assert refused(plan, "client-class no-test", "without a test")
