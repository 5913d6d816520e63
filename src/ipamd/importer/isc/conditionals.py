"""dhcpd's global `if … { } elsif … { } else { }` on a client test, as client classes
(docs/migrating.md, "From ISC dhcpd").

The common use is a boot file chosen by what the client is (`if exists user-class and option
user-class = "iPXE" { filename "http://…"; } else { filename "undionly.kpxe"; }`). Each `if`
and `elsif` whose test is one a class makes, and whose block holds only `filename`,
`next-server` and options, becomes a class with that block's settings; they are tried in the
file's order (priority 200, 201, …: after the file's own classes, whose scope dhcpd applies
over the global one's). The `else` block's settings are the global scope's, which every
subnet inherits and the classes override. Anything else in a conditional refuses it whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipamd.importer import model
from ipamd.importer.isc import classes
from ipamd.importer.isc import scope as scopes
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.scope import Scope
from ipamd.importer.isc.settings import gather
from ipamd.importer.isc.site import Site
from ipamd.importer.model import Planned

PRIORITY = 200
Branch = tuple[Node, dict[str, str] | None, Scope]  # the block, its test's match, its settings


def plan_conditionals(site: Site) -> None:
    for chain in site.conditionals:
        branches = _branches(site, chain)
        if branches is not None:
            _plan(site, branches)


def _branches(site: Site, chain: list[Node]) -> list[Branch] | None:
    out: list[Branch] = []
    for node in chain:
        held = Scope("class", node, None)
        rest = scopes.collect(held, node.block or [])
        try:
            if rest:
                raise classes.Unmatched(f"its {node.keyword} block holds {rest[0].text()!r}: "
                                        "a conditional is mapped when its blocks set only "
                                        "filename, next-server and options")
            match = None if node.keyword == "else" else classes.test_of(site, node.words[1:])
        except classes.Unmatched as why:
            site.refuse(chain[0], f"conditional statements run per packet: {why}")
            return None
        out.append((node, match, held))
    return out


def _plan(site: Site, branches: list[Branch]) -> None:
    tested = [(node, match, held) for node, match, held in branches if match is not None]
    for number, (node, match, held) in enumerate(tested):
        settings = gather(site, held, "class")
        name = f"if {Path(node.source.file).name}:{node.source.line}"[:100]
        body: dict[str, Any] = {"name": name, **(match or {}), "priority": PRIORITY + number,
                                "description": f"the {node.keyword} at {node.source}",
                                **settings.fields}
        key = site.add_named(Planned("client_class", model.class_key(name), body,
                                     node.source), node)
        if key is None:
            continue
        for code, payload, where in settings.options:
            site.plan.add(Planned("class_option", model.option_key(key, code),
                                  {"code": code, "payload": payload}, where.source, key))
        site.note(node, f"mapped as the client class {name!r}")
    for node, test, held in branches:
        if test is None:
            _else(site, node, held, [t[2] for t in tested])


def _else(site: Site, node: Node, held: Scope, tested: list[Scope]) -> None:
    """The else block's settings join the global scope (it runs after the global statements
    before it, so it wins over them)."""
    for key, setting in held.params.items():
        site.top.params[key] = setting
        if any(key not in scope.params for scope in tested):
            site.note(setting, "from an else block: the appliance gives it to the clients of "
                               "the tests that do not set it too (dhcpd does not)")
    site.note(node, "its settings are the global scope's, overridden by the tests' classes")
