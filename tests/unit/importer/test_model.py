"""The plan model: dependency order, stable keys, rendering; and the tables the importer
mirrors from the service (it imports nothing of ipamd, so a test keeps them equal)."""

from __future__ import annotations

import json

import pytest

from ipamd.core import identifiers, option6_shapes, option_shapes, validate
from ipamd.importer import identity, options
from ipamd.importer.cli import detect, main
from ipamd.importer.model import (
    Plan,
    PlanError,
    Planned,
    Ref,
    Source,
    add_scope,
    class_key,
    option_key,
    range_key,
    render_text,
    resolve,
    to_json,
)
from tests.unit.importer.helpers import EXAMPLES, kea4, refused, write

HERE = Source("site.json", 7)


def small_plan() -> Plan:
    plan = Plan()
    subnet = add_scope(plan, "10.77.1.0/24", {"lease_time_seconds": 7200}, HERE)
    plan.add(Planned("client_class", class_key("pxe"),
                     {"name": "pxe", "match": "vendor_class", "value": "PXEClient"}, HERE))
    plan.add(Planned("pool", range_key("pool", "10.77.1.0/24", "10.77.1.10", "10.77.1.20"),
                     {"name": "p", "start_ip": "10.77.1.10", "end_ip": "10.77.1.20",
                      "class_id": Ref(class_key("pxe"))}, Source("site.json", 9), owner=subnet))
    plan.refuse("hooks-libraries", Source("site.json", 3), "a hook")
    plan.note("Kea's default lease time")
    return plan


def test_objects_come_in_dependency_order_and_refs_resolve():
    plan = small_plan()
    assert [obj.kind for obj in plan.objects] == ["prefix", "subnet", "client_class", "pool"]
    pool = plan.objects[-1]
    assert pool.parents == ("subnet:10.77.1.0/24", "client_class:pxe")
    ids = {"subnet:10.77.1.0/24": "S", "client_class:pxe": "C"}
    assert resolve(pool.body, ids)["class_id"] == "C"


def test_a_child_before_its_parent_or_outside_its_owner_kind_is_a_plan_error():
    plan = Plan()
    with pytest.raises(PlanError, match="needs client_class:x"):
        plan.add(Planned("client_class", "client_class:y", {"a": Ref("client_class:x")}, HERE))
    with pytest.raises(PlanError, match="inside a planned subnet"):
        plan.add(Planned("pool", "pool:x", {}, HERE, owner="client_class:y"))
    add_scope(plan, "10.77.1.0/24", {}, HERE)
    with pytest.raises(PlanError, match="planned twice"):
        add_scope(plan, "10.77.1.0/24", {"gateway": "10.77.1.1"}, HERE)
    # the same object again (a global option inherited twice) is one object
    add_scope(plan, "10.77.1.0/24", {}, HERE)
    assert len(plan.objects) == 2


def test_keys_are_stable_and_the_idempotency_key_fits_the_api():
    assert option_key("subnet:10.77.1.0/24", 43, "PXEClient") == \
        "subnet_option:10.77.1.0/24:43:PXEClient"
    assert range_key("pool", "2001:db8::/64", "2001:DB8::10", "2001:db8::0:20") == \
        "pool:2001:db8::/64:2001:db8::10-2001:db8::20"
    key = Planned("client_class", "client_class:" + "x" * 500, {}, HERE).idempotency_key()
    assert key.startswith("ipamd-import:") and len(key) <= 255 and key.isprintable()


def test_text_groups_by_scope_and_json_keeps_refs_and_sources():
    plan = small_plan()
    text = render_text(plan)
    # a pool is shown in its subnet, wherever its class is
    assert text.index("subnet 10.77.1.0/24") < text.index("+ prefix") < text.index(
        "+ subnet") < text.index("+ pool") < text.index("client class pxe")
    assert "  - site.json:3: hooks-libraries: a hook" in text
    assert text.endswith("total: 4 to create (1 prefix, 1 subnet, 1 pool, 1 client_class), "
                         "1 refused\n")
    data = json.loads(json.dumps(to_json(plan)))
    assert data["objects"][-1]["body"]["class_id"] == {"$ref": "client_class:pxe"}
    assert data["objects"][-1]["source"] == {"file": "site.json", "line": 9}
    assert data["objects"][-1]["scope"] == "subnet:10.77.1.0/24"
    assert data["refused"] == [{"construct": "hooks-libraries", "reason": "a hook",
                                "source": {"file": "site.json", "line": 3}}]


def test_the_option_tables_are_the_services():
    assert set(options.OWNED4) == set(option_shapes.SERVER_OWNED)
    assert options.ADDRESS4 == option_shapes.ADDRESS_CODES
    assert options.TEXT4 == option_shapes.TEXT_CODES
    assert {code: (low, high) for code, (_, _, low, high)
                                in option_shapes.INTEGER_CODES.items()} == options.INTEGER4
    assert set(option6_shapes.CODES) == options.CODES6


@pytest.mark.parametrize("text", ["02:00:00:00:00:01", "02-AB-00-00-00-01", "0200.0000.0001",
                                  "020000000001", "01:00:5e:00:00:01", "00:00:00:00:00:00",
                                  "02:00:00:00:00", "zz:00:00:00:00:01"])
def test_mac_rules_are_the_services(text):
    try:
        expected = identifiers.mac(text)
    except ValueError:
        with pytest.raises(options.Unmappable):
            identity.mac(text)
    else:
        assert identity.mac(text) == expected


@pytest.mark.parametrize("text", ["00:01:00:01:aa:bb:cc:dd:ee:ff", "00:03:00:01:02:00:00:00:00:07",
                                  "00:02:00:00:00:09:01", "01:02:03:04:05", "00:04:" + "11:" * 15
                                  + "11", "00:03:00:01"])
def test_duid_rules_are_the_services(text):
    try:
        expected = identifiers.duid(text)
    except ValueError:
        with pytest.raises(options.Unmappable):
            identity.duid(text)
    else:
        assert identity.duid(text) == expected


@pytest.mark.parametrize("text", ["pc1", "pc1.lab.example.", "-bad", "a" * 64, "ok_no", ""])
def test_hostname_rules_are_the_services(text):
    try:
        expected = validate.hostname(text)
    except ValueError:
        with pytest.raises(options.Unmappable):
            identity.hostname(text)
    else:
        assert identity.hostname(text) == expected


def test_the_format_is_detected_from_the_first_statement(tmp_path):
    assert detect(str(EXAMPLES / "kea4/comments.json")) == "kea"
    assert detect(write(tmp_path, "# dhcpd\nsubnet 10.77.1.0 netmask 255.255.255.0 {}\n",
                        "dhcpd.conf")) == "isc"
    assert detect(write(tmp_path, '/* x */ <?include "a.json"?>', "inc.json")) == "kea"


def test_plan_prints_writes_json_and_nothing_else(tmp_path, capsys):
    out_file = tmp_path / "plan.json"
    assert main(["plan", str(EXAMPLES / "kea4/several-subnets.json"),
                 "--json", str(out_file)]) == 0
    printed = capsys.readouterr().out
    assert "subnet 192.0.3.0/24" in printed and "2 refused" in printed
    assert json.loads(out_file.read_text())["counts"]["subnet"] == 3
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plan.json"]


def test_apply_without_a_token_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("IPAMD_TOKEN", raising=False)
    assert main(["apply", str(EXAMPLES / "kea4/single-subnet.json"),
                 "--url", "http://127.0.0.1:9"]) == 2
    assert "no token: give --token-file or set IPAMD_TOKEN" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["pxelinux.0", "x" * 127, "x" * 128, "", "caf\u00e9.efi",
                                  "tab\there"])
def test_boot_file_rules_are_the_apis(text):
    from ipamd.api.routes.ipam_fields import _boot_file  # the API's own rule

    try:
        expected = _boot_file(text)
    except ValueError:
        with pytest.raises(options.Unmappable):
            identity.boot_file(text)
    else:
        assert identity.boot_file(text) == expected


def test_a_boot_file_the_api_would_refuse_is_refused_by_line(tmp_path):
    plan = kea4(tmp_path, {"subnet4": [{"subnet": "10.77.1.0/24",
                                        "boot-file-name": "b" * 200}],
                           "client-classes": [{"name": "c", "test": "option[93].hex == 0x0007",
                                               "next-server": "boot.lab"}]})
    assert "boot_file" not in plan.objects[1].body
    assert refused(plan, "boot-file-name", "not 1 to 127 printable ASCII")
    assert refused(plan, "client-class c next-server", "'boot.lab' is not an IPv4 address")
