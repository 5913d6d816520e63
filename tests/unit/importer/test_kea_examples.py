"""Every example configuration Debian ships with kea-doc is planned without a crash, and the
plans of the main ones hold what Kea would serve (docs/migrating.md)."""

from __future__ import annotations

import ipaddress
import json

import pytest

from ipamd.importer import kea
from ipamd.importer.model import KINDS, Plan, to_json
from tests.unit.importer.helpers import EXAMPLES, bodies, noted, of_kind, refused

ALL = sorted(str(path.relative_to(EXAMPLES)) for family in ("kea4", "kea6")
             for path in (EXAMPLES / family).glob("*.json"))


def test_the_examples_are_there():
    assert len(ALL) >= 50, "install kea-doc (Makefile TEST_PACKAGES)"


@pytest.mark.parametrize("example", ALL)
def test_every_example_is_planned_and_every_line_is_its_own(example):
    path = str(EXAMPLES / example)
    plan = kea.read(path)
    lines = (EXAMPLES / example).read_text().count("\n") + 1
    for item in [*plan.objects, *plan.refused]:
        assert item.source.file == path and 1 <= item.source.line <= lines
    for refusal in plan.refused:
        assert refusal.reason and refusal.construct
    assert json.loads(json.dumps(to_json(plan)))["counts"] == plan.counts()
    _no_two_subnets_overlap(plan)


def _no_two_subnets_overlap(plan: Plan) -> None:
    nets = [ipaddress.ip_network(body["cidr"]) for body in bodies(plan, "subnet")]
    for i, a in enumerate(nets):
        assert not any(a.overlaps(b) for b in nets[i + 1:])


def test_reservations_by_mac_and_client_id_the_rest_refused_by_name():
    plan = kea.read(str(EXAMPLES / "kea4/reservations.json"))
    assert bodies(plan, "reservation") == [
        {"ip": "192.0.2.201", "mac": "1a:1b:1c:1d:1e:1f"},
        {"ip": "192.0.2.205", "mac": "0a:0b:0c:0d:0e:0f", "next_server": "192.0.2.1",
         "boot_file": "/dev/null"},
    ]
    # 01:11:22:33:44:55:66 is the 01 + MAC form, but 11:... is a multicast MAC
    assert refused(plan, "special-snowflake", "multicast")
    assert refused(plan, "DUID 01:02:03:04:05", "type 258")
    assert refused(plan, "circuit-id")
    assert refused(plan, "flexible identifier")
    assert refused(plan, "server-hostname", "sname")
    assert bodies(plan, "subnet")[0]["lease_time_seconds"] == 4000


def test_several_subnets_each_a_prefix_and_a_subnet_with_their_pools():
    plan = kea.read(str(EXAMPLES / "kea4/several-subnets.json"))
    assert [body["cidr"] for body in bodies(plan, "prefix")] == [
        "192.0.2.0/24", "192.0.3.0/24", "192.0.4.0/24"]
    assert [(b["start_ip"], b["end_ip"]) for b in bodies(plan, "pool")] == [
        ("192.0.2.1", "192.0.2.200"), ("192.0.3.100", "192.0.3.200"),
        ("192.0.4.1", "192.0.4.254")]
    # Kea's renew/rebind timers differ from the derived T1/T2: refused, once each
    assert refused(plan, "renew-timer", "1000 s") and refused(plan, "rebind-timer", "2000 s")
    assert len(plan.refused) == 2


def test_classify_maps_the_vendor_class_and_refuses_message_type_tests():
    plan = kea.read(str(EXAMPLES / "kea4/classify.json"))
    classes = {body["name"]: body for body in bodies(plan, "client_class")}
    assert classes["VoIP"] == {"name": "VoIP", "match": "vendor_class", "value": "Aastra",
                               "next_server": "192.0.2.254", "boot_file": "/dev/null"}
    assert classes["special_snowflake"]["match"] == "mac_prefix"
    assert refused(plan, "client-class discovers", "pkt4.msgtype == 1")
    assert refused(plan, "client-class broken", "pkt4.transid == 0")
    # the subnet restricted to VoIP: its pool goes to the class
    pools = {obj.body["start_ip"]: obj.body.get("class_id") for obj in of_kind(plan, "pool")}
    assert pools["192.0.2.1"].key == "client_class:VoIP"
    assert pools["192.0.3.1"] is None and pools["192.0.5.1"] is None
    assert pools["192.0.4.1"].key == "client_class:VoIP"


def test_a_shared_network_groups_its_subnets_with_their_inherited_lifetimes():
    plan = kea.read(str(EXAMPLES / "kea4/shared-network.json"))
    assert bodies(plan, "shared_network") == [{"name": "frog"}]
    subnets = {body["cidr"]: body for body in bodies(plan, "subnet")}
    assert subnets["10.0.0.0/8"]["shared_network_id"].key == "shared_network:frog"
    assert subnets["10.0.0.0/8"]["lease_time_seconds"] == 30
    assert "shared_network_id" not in subnets["192.0.3.0/24"]
    # no valid-lifetime at the top: Kea's 7200 s, never the appliance's 86400 s
    assert subnets["192.0.3.0/24"]["lease_time_seconds"] == 7200
    assert noted(plan, "Kea's default of 7200 s")


def test_ipv6_reservations_need_a_duid_and_delegation_pools_stay_off_the_link():
    plan = kea.read(str(EXAMPLES / "kea6/reservations.json"))
    assert refused(plan, "needs a DUID")
    assert refused(plan, "pd-pool", "overlaps the subnet 2001:db8:1::/48")
    assert refused(plan, "preferred-lifetime")
    several = kea.read(str(EXAMPLES / "kea6/several-subnets.json"))
    assert [body["cidr"] for body in bodies(several, "subnet")] == [
        "2001:db8:1::/64", "2001:db8:2::/64", "2001:db8:3::/64", "2001:db8:4::/64"]


def test_all_options_maps_each_standard_option_or_names_why_not():
    plan = kea.read(str(EXAMPLES / "kea4/all-options.json"))
    subnet = bodies(plan, "subnet")[0]
    assert subnet["gateway"] == "192.0.2.2"
    assert subnet["ntp_servers"] == ["192.0.2.28", "192.0.2.29"]
    options = {body["code"]: body["payload"] for body in bodies(plan, "subnet_option")}
    assert options[6] == {"addresses": ["192.0.2.8", "192.0.2.9"]}
    assert options[15] == {"value": "my.example.org"}
    assert options[119] == {"domains": ["example.com", "example.org"]}
    assert options[100] == {"value": "EST5EDT4,M3.2.0/02:00,M11.1.0/02:00"}
    assert options[93] == {"hex": "18:00:1c:00"}
    assert refused(plan, "routers", "192.0.2.3", "one gateway")
    assert refused(plan, "dhcp-server-identifier", "dhcp.server_id")
    assert 1 not in options and 3 not in options and 54 not in options


def count_table() -> list[tuple[str, int, int, int]]:
    """(example, mapped, refused, notes) for every example: the table of docs/migrating.md."""
    out = []
    for example in ALL:
        plan = kea.read(str(EXAMPLES / example))
        out.append((example, len(plan.objects), len(plan.refused), len(plan.notes)))
    return out


def test_the_count_table_covers_every_kind_somewhere():
    kinds = set()
    for example in ALL:
        kinds |= {obj.kind for obj in kea.read(str(EXAMPLES / example)).objects}
    assert kinds >= set(KINDS) - {"exclude", "assignment", "reservation_option"}
