"""The import contract between the rooms: the real tree keeps it, and a break is named."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support import import_contract

SRC = Path(__file__).resolve().parents[2] / "src" / "ipamd"


def _tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "ipamd"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        # every folder on the way is a package
        for parent in path.parents:
            if parent == root:
                break
            (parent / "__init__.py").touch()
    return package


def test_the_real_tree_keeps_the_contract():
    broken = import_contract.check(SRC)
    assert broken == [], "\n".join(map(str, broken))


def test_no_two_way_pairs_among_the_main_rooms():
    graph = import_contract.graph(SRC)
    rooms = ("api", "ipam", "dhcp", "outbox", "db", "runtime", "core", "state", "config")
    for a in rooms:
        for b in rooms:
            assert not (b in graph.get(a, ()) and a in graph.get(b, ())), (a, b)


def test_core_and_db_stand_alone():
    graph = import_contract.graph(SRC)
    assert graph.get("core", set()) == set()
    assert graph.get("db", set()) <= {"core"}


def test_domain_code_importing_the_api_is_named(tmp_path):
    package = _tree(tmp_path, {
        "api/errors.py": "class ApiError(Exception): ...\n",
        "ipam/x.py": """\
            import uuid

            from ipamd.api.errors import ApiError
            """,
    })
    (broken,) = import_contract.check(package)
    assert broken.imp.path == package / "ipam" / "x.py" and broken.imp.line == 3
    assert broken.imp.name == "ipamd.api.errors"
    assert str(broken).endswith("ipam/x.py:3: ipam imports ipamd.api.errors "
                                "(ipam must not import api)")


def test_the_dhcp_path_importing_the_outbox_is_named_even_lazily(tmp_path):
    package = _tree(tmp_path, {
        "outbox/queue.py": "CHANNEL = 'x'\n",
        "dhcp/server.py": """\
            def later():
                from ipamd.outbox import queue
                return queue
            """,
    })
    (broken,) = import_contract.check(package)
    assert (broken.imp.source, broken.imp.target, broken.imp.line) == ("dhcp", "outbox", 2)
    assert "dhcp must not import outbox" in str(broken)


def test_the_dhcpv6_room_keeps_the_dhcp_rules_and_dhcp_never_leans_on_it(tmp_path):
    package = _tree(tmp_path, {
        "outbox/queue.py": "CHANNEL = 'x'\n",
        "dhcp/leasestore.py": "from ipamd.dhcp6 import codec\n",
        "dhcp6/codec.py": "from ipamd.outbox import queue\n",
        "dhcp6/server.py": "from ipamd.dhcp import leasestore\n",
    })
    found = {(b.imp.source, b.imp.target, b.rule) for b in import_contract.check(package)}
    assert ("dhcp6", "outbox", "dhcp6 must not import outbox") in found
    assert ("dhcp", "dhcp6", "dhcp must not import dhcp6") in found
    # dhcp6 -> dhcp alone is the allowed direction; here it is also one end of a two-way pair
    assert ("dhcp6", "dhcp", "two-way pair: dhcp imports dhcp6 too (ipamd.dhcp6)") in found
    assert not any(source == "dhcp6" and target == "dhcp" and "must not" in rule
                   for source, target, rule in found)


def test_type_checking_and_relative_imports_count(tmp_path):
    package = _tree(tmp_path, {
        "db/bridge.py": """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from ipamd.config import Config
            """,
        "config.py": "Config = dict\n",
        "outbox/webhooks.py": "from ..api import errors\n",
        "api/errors.py": "",
    })
    found = {(b.imp.source, b.imp.name) for b in import_contract.check(package)}
    assert found == {("db", "ipamd.config"), ("outbox", "ipamd.api")}


def test_a_two_way_pair_is_named_from_both_ends(tmp_path):
    package = _tree(tmp_path, {
        "ipam/a.py": "from ipamd.outbox import b\n",
        "outbox/b.py": "import ipamd.ipam.a\n",
    })
    broken = import_contract.check(package)
    assert {(b.imp.source, b.imp.target) for b in broken} == {("ipam", "outbox"),
                                                             ("outbox", "ipam")}
    assert all("two-way pair" in str(b) for b in broken)


def test_the_command_fails_with_the_offending_import(tmp_path, capsys):
    package = _tree(tmp_path, {"ipam/x.py": "from ipamd.api.errors import ApiError\n",
                               "api/errors.py": ""})
    assert import_contract.main(["import_contract", str(package)]) == 1
    out = capsys.readouterr().out
    assert "ipam/x.py:1: ipam imports ipamd.api.errors" in out
    assert import_contract.main(["import_contract", str(SRC)]) == 0


def test_the_importer_stands_alone_on_the_http_api(tmp_path):
    package = _tree(tmp_path, {
        "core/errors.py": "class DomainError(Exception): ...\n",
        "importer/model.py": "import json\nimport httpx\nfrom ipamd.importer import cli\n",
        "importer/cli.py": """\
            import trio
            from ipamd.core import errors
            """,
    })
    broken = [str(v).split("/ipamd/", 1)[1] for v in import_contract.check(package)]
    assert sorted(broken) == [
        "importer/cli.py:1: importer imports trio (importer may import only the standard "
        "library and httpx)",
        "importer/cli.py:2: importer imports ipamd.core (importer may import only no "
        "other room)",
    ]
