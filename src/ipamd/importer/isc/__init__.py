"""The ISC dhcpd reader of `ipamd-import`: a dhcpd.conf (with its includes) as a `Plan`
(docs/migrating.md, "From ISC dhcpd").

`read(path, resolver)` lexes and parses the file (`lexer`, `parser`: a `ReadError` naming
file and line when it is not dhcpd.conf), lays out its scopes and declarations (`site`),
then plans client classes (`classes`, and `conditionals` for a global `if` on a client
test), shared networks, subnets and pools (`subnets`), and hosts (`hosts`), each with the
settings its scopes give it (`settings`, `values`)."""

from __future__ import annotations

from ipamd.importer.isc import classes, conditionals, hosts, parser, site, subnets
from ipamd.importer.model import Plan, Resolver

DHCPD_DEFAULT_LEASE = 43_200  # dhcpd.conf(5), default-lease-time (docs/migrating.md)


def read(path: str, resolver: Resolver | None = None) -> Plan:
    """The plan for the dhcpd.conf at ``path``; names are looked up with ``resolver`` (each
    once), and refused without one."""
    plan = Plan()
    nodes = parser.parse(path)
    layout = site.build(plan, nodes, _once(resolver))
    if not _sets(nodes, "default-lease-time"):
        plan.note(f"no default-lease-time in the file: dhcpd's default, {DHCPD_DEFAULT_LEASE} "
                  "s, is planned (not the appliance's 86400 s); max 86400 s and min 300 s "
                  "likewise")
    class_keys = classes.plan_classes(layout)
    conditionals.plan_conditionals(layout)
    fixed = hosts.fixed_addresses(layout)
    in_use = {address for found in fixed.values() for address in found}
    planted = subnets.plan_subnets(layout, class_keys, in_use)
    hosts.plan_hosts(layout, planted, fixed)
    return plan


def _sets(nodes: list[parser.Node], keyword: str) -> bool:
    """Whether any statement of the tree is ``keyword`` (no recursion: the tree is flat
    enough, but the walk needs no stack either way)."""
    pending = [nodes]
    while pending:
        for node in pending.pop():
            if node.keyword == keyword:
                return True
            if node.block:
                pending.append(node.block)
    return False


def _once(resolver: Resolver | None) -> Resolver | None:
    if resolver is None:
        return None
    known: dict[tuple[str, int], list[str] | LookupError] = {}

    def lookup(name: str, family: int) -> list[str]:
        key = (name.lower(), family)
        if key not in known:
            try:
                known[key] = list(resolver(name, family))
            except LookupError as error:
                known[key] = error
        found = known[key]
        if isinstance(found, LookupError):
            raise found
        return found
    return lookup
