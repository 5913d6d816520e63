"""The statement tree as dhcpd sees it: scopes and the declarations in them (subnets,
ranges and pools, hosts, classes, shared networks, option definitions), every other
statement judged once — a note, or a refusal naming file:line and why (docs/migrating.md).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field

from ipamd.importer.isc import scope as scopes
from ipamd.importer.isc.lexer import Kind
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.scope import Scope
from ipamd.importer.isc.values import Definition, definition_types
from ipamd.importer.model import Plan, Planned, Resolver, Source
from ipamd.importer.options import Unmappable

NOT_APPLICABLE = "not applicable: failover partners and split scopes have no equivalent " \
                 "(spec §1); every appliance node serves the whole plan from one database"
V6_WHY = "DHCPv6 declarations of `dhcpd -6` are not read by this importer: create IPv6 " \
         "subnets, pools and DUID reservations through the API (docs/dhcpv6.md)"
V6_KEYWORDS = frozenset({"subnet6", "range6", "prefix6", "fixed-address6", "fixed-prefix6",
                         "server-duid", "dhcpv6-lease-file-name", "dhcpv6-pid-file-name",
                         "preferred-lifetime", "temporary"})


@dataclass
class Range:
    node: Node
    pool: Scope | None  # the pool declaration around it, if any (its permits, failover)


@dataclass
class SubnetDecl:
    scope: Scope
    network: ipaddress.IPv4Network
    shared: Scope | None
    ranges: list[Range] = field(default_factory=list)


@dataclass
class Site:
    plan: Plan
    top: Scope
    subnets: list[SubnetDecl] = field(default_factory=list)
    subnet_of: dict[int, SubnetDecl] = field(default_factory=dict)  # id(scope) -> its decl
    hosts: list[Scope] = field(default_factory=list)
    classes: list[Scope] = field(default_factory=list)
    shared: list[Scope] = field(default_factory=list)
    loose_ranges: list[Range] = field(default_factory=list)  # pools of a shared network
    definitions: dict[str, Definition] = field(default_factory=dict)  # "space.name" too
    spaces: set[str] = field(default_factory=set)  # option spaces that can make option 43
    conditionals: list[list[Node]] = field(default_factory=list)  # global if/elsif/else
    permits: dict[int, list[Node]] = field(default_factory=dict)  # id(pool scope) -> rules
    resolver: Resolver | None = None
    _said: set[tuple[str, str]] = field(default_factory=set)

    def refuse(self, node: Node, reason: str) -> None:
        """Refuse a statement once, however many scopes inherit it."""
        if (str(node.source), reason) not in self._said:
            self._said.add((str(node.source), reason))
            self.plan.refuse(node.text(), node.source, reason)

    def add_named(self, obj: Planned, node: Node) -> str | None:
        """Plan a top-level object known by its name (a class, a shared network); a second
        declaration of the name is refused, the first kept."""
        first = self.plan.get(obj.key)
        if first is not None:
            self.refuse(node, f"{obj.key.split(':', 1)[1]!r} is declared at {first.source} "
                              "already; the first declaration is planned")
            return None
        return self.plan.add(obj).key

    def note_at(self, source: Source, text: str) -> None:
        if (str(source), text) not in self._said:
            self._said.add((str(source), text))
            self.plan.note(text, source)

    def note(self, node: Node, text: str) -> None:
        if (str(node.source), text) not in self._said:
            self._said.add((str(node.source), text))
            self.plan.note(f"{node.text()}: {text}", node.source)


def build(plan: Plan, body: list[Node], resolver: Resolver | None) -> Site:
    top = Scope("global", None, None)
    site = Site(plan, top, resolver=resolver)
    _walk(site, body, top)
    return site


def _walk(site: Site, body: list[Node], scope: Scope) -> None:
    rest = scopes.collect(scope, body)
    for at, node in enumerate(rest):
        keyword = node.keyword
        if scope.kind == "global" and keyword == "if" and node.block is not None:
            site.conditionals.append(_branches(rest, at))
        elif scope.kind == "global" and keyword in ("elsif", "else") and any(
                node is taken for chain in site.conditionals for taken in chain):
            continue  # taken with its if
        elif node.block is not None and keyword in _BLOCKS:
            _BLOCKS[keyword](site, node, scope)
        elif keyword == "range":
            _range(site, node, scope)
        else:
            _statement(site, node, scope)


def _branches(rest: list[Node], at: int) -> list[Node]:
    """An `if` and the `elsif`/`else` blocks that follow it."""
    chain = [rest[at]]
    for node in rest[at + 1:]:
        if node.block is None or node.keyword not in ("elsif", "else"):
            break
        chain.append(node)
        if node.keyword == "else":
            break
    return chain


def _shared_network(site: Site, node: Node, outer: Scope) -> None:
    if outer.kind not in ("global", "group"):
        site.refuse(node, f"a shared-network inside a {outer.kind} (dhcpd refuses it too)")
        return
    inner = Scope("shared-network", node, outer)
    site.shared.append(inner)
    _walk(site, node.block or [], inner)


def _subnet(site: Site, node: Node, outer: Scope) -> None:
    words = node.words
    if outer.kind not in ("global", "group", "shared-network"):
        site.refuse(node, f"a subnet inside a {outer.kind}")
        return
    try:
        if len(words) != 4 or not words[2].is_word("netmask"):
            raise ValueError("write it as: subnet ADDRESS netmask MASK { ... }")
        network = ipaddress.IPv4Network(f"{words[1].text}/{words[3].text}", strict=True)
    except ValueError as error:
        site.refuse(node, f"not a subnet the importer reads ({error})")
        return
    inner = Scope("subnet", node, outer)
    shared = next((s for s in outer.chain() if s.kind == "shared-network"), None)
    decl = SubnetDecl(inner, network, shared)
    site.subnets.append(decl)
    site.subnet_of[id(inner)] = decl
    _walk(site, node.block or [], inner)


def _group(site: Site, node: Node, outer: Scope) -> None:
    if len(node.words) > 1:
        site.note(node, "the group's name is not kept (groups fold into their subnets and "
                        "hosts)")
    _walk(site, node.block or [], Scope("group", node, outer))


def _pool(site: Site, node: Node, outer: Scope) -> None:
    if outer.kind not in ("subnet", "shared-network"):
        site.refuse(node, f"a pool inside a {outer.kind}")
        return
    pool = Scope("pool", node, outer)
    rules: list[Node] = []
    site.permits[id(pool)] = rules
    for inner in scopes.collect(pool, node.block or []):
        if inner.keyword == "range" and inner.block is None:
            _range(site, inner, pool)
        elif inner.keyword in ("allow", "deny", "ignore", "failover") and inner.block is None:
            rules.append(inner)
        else:
            _statement(site, inner, pool)
    for key in pool.params:
        site.refuse(pool.params[key], "a parameter of a pool: the appliance's options and "
                                      "lease times are per subnet, class or reservation")


def _host(site: Site, node: Node, outer: Scope) -> None:
    if outer.kind not in ("global", "group", "subnet", "shared-network"):
        site.refuse(node, f"a host inside a {outer.kind}")
        return
    host = Scope("host", node, outer)
    site.hosts.append(host)
    for inner in scopes.collect(host, node.block or []):
        _statement(site, inner, host)


def _class(site: Site, node: Node, outer: Scope) -> None:
    """A class is known everywhere wherever it is declared (a subnet's PXE class, say); it
    carries its own statements only, its outer scopes reach clients through their subnet."""
    if outer.kind not in ("global", "group", "shared-network", "subnet"):
        site.refuse(node, f"a class inside a {outer.kind}")
        return
    site.classes.append(Scope("class", node, outer))


Handler = Callable[[Site, Node, Scope], None]


def _refused_block(why: str) -> Handler:
    def handler(site: Site, node: Node, outer: Scope) -> None:
        site.refuse(node, why)
    return handler


def _noted_block(why: str) -> Handler:
    def handler(site: Site, node: Node, outer: Scope) -> None:
        site.note(node, why)
    return handler


_SUBCLASS_WHY = ("subclasses (hashed class membership) have no equivalent: write one class "
                 "per match")
_COND_WHY = ("conditional statements (dhcp-eval(5)) run per packet: no equivalent; classes "
             "with a simple match are mapped instead")
_BLOCKS: dict[str, Handler] = {
    "shared-network": _shared_network, "subnet": _subnet, "group": _group, "pool": _pool,
    "host": _host, "class": _class,
    "subclass": _refused_block(_SUBCLASS_WHY),
    "failover": _noted_block(NOT_APPLICABLE),
    "key": _noted_block(scopes.DDNS_WHY),
    "zone": _noted_block(scopes.DDNS_WHY),
    "if": _refused_block(_COND_WHY), "elsif": _refused_block(_COND_WHY),
    "else": _refused_block(_COND_WHY),
    "on": _refused_block("event statements (on commit/release/expiry) have no equivalent"),
    "subnet6": _refused_block(V6_WHY),
}


def _range(site: Site, node: Node, scope: Scope) -> None:
    where = next((s for s in scope.chain() if s.kind in ("subnet", "shared-network")), None)
    if where is None:
        site.refuse(node, "a range outside a subnet or shared-network")
        return
    rng = Range(node, scope if scope.kind == "pool" else None)
    if where.kind == "subnet":
        site.subnet_of[id(where)].ranges.append(rng)
    else:
        site.loose_ranges.append(rng)


def _statement(site: Site, node: Node, scope: Scope) -> None:
    keyword = node.keyword
    words = node.words
    if node.block is not None:
        site.refuse(node, f"{keyword!r} declarations are not dhcpd.conf the importer knows")
    elif keyword == "option" and len(words) > 2 and words[1].is_word("space"):
        _space(site, node)
    elif keyword == "option" and len(words) > 3 and words[2].is_word("code"):
        _definition(site, node)
    elif keyword in scopes.NOTED:
        site.note(node, scopes.NOTED[keyword])
    elif keyword == "not" and len(words) == 2 and words[1].is_word("authoritative"):
        site.note(node, "the appliance is always authoritative (spec §1, rule 1)")
    elif keyword == "ddns-update-style" and len(words) == 2 and words[1].is_word("none"):
        site.note(node, "no DDNS, as on the appliance unless a subnet sets ddns_adapter")
    elif keyword.startswith("ddns-") or keyword in _DDNS_WORDS:
        site.note(node, scopes.DDNS_WHY)
    elif keyword in ("allow", "deny", "ignore"):
        _permit(site, node, scope)
    elif keyword == "failover":
        site.note(node, NOT_APPLICABLE)
    elif keyword == "subclass":
        site.refuse(node, _SUBCLASS_WHY)
    elif keyword == "site-option-space":
        site.refuse(node, "options built from a site option space are not mapped: give each "
                          "site option (224-254) by its code")
    elif keyword == "server-identifier":
        site.refuse(node, "the server identifier is the appliance's dhcp.server_id setting")
    elif keyword in V6_KEYWORDS or keyword.startswith("dhcpv6"):
        site.refuse(node, V6_WHY)
    else:
        site.refuse(node, f"{keyword or words[0].text!r}: not a statement the importer "
                          "maps (no equivalent known)")


_DDNS_WORDS = frozenset({"update-optimization", "update-conflict-detection",
                         "do-forward-updates", "client-updates", "update-static-leases"})


def _permit(site: Site, node: Node, scope: Scope) -> None:
    """allow/deny/ignore in a scope (not a pool's permit list: dhcpd.conf(5) "ALLOW AND
    DENY WITHIN POOL DECLARATIONS" is judged with its pool)."""
    what = " ".join(w.text.lower() for w in node.words[1:] if w.kind is Kind.WORD)
    harmless = {("allow", "unknown-clients"), ("allow", "booting"), ("deny", "bootp"),
                ("ignore", "bootp"), ("allow", "known-clients")}
    if (node.keyword, what) in harmless:
        site.note(node, "as the appliance behaves (DHCP clients, known or not, are served; "
                        "plain BOOTP is not)")
    elif what in ("client-updates",):
        site.note(node, "DDNS is not carried over")
    elif node.keyword in ("deny", "ignore") and what == "unknown-clients":
        site.refuse(node, "no equivalent: the appliance serves every client of a subnet with "
                          "pools; serve only known clients with reservations and no pools")
    else:
        site.refuse(node, f"{node.keyword} {what}: no equivalent on the appliance")


def _space(site: Site, node: Node) -> None:
    """`option space NAME;` with dhcpd's default one-octet codes and lengths: its options
    can make option 43 (`vendor-option-space NAME;`, RFC 2132 §8.4). Other widths are
    DHCPv6's or a vendor's own layout."""
    words = [w.text.lower() for w in node.words]
    widths = " ".join(words[3:]).split(" hash size")[0]
    if len(words) >= 3 and widths in ("", "code width 1 length width 1"):
        site.spaces.add(words[2])
        site.note(node, "its options make option 43 where vendor-option-space names it")
    else:
        site.note(node, "an option space without one-octet codes and lengths: its options "
                        "are refused where set")


def _definition(site: Site, node: Node) -> None:
    words = node.words
    name = words[1].text.lower()
    try:
        if not words[3].text.isdigit() or len(words) < 6 or words[4].text != "=":
            raise Unmappable("write it as: option NAME code N = TYPE;")
        code = int(words[3].text)
        if "." in name and name.split(".")[0] not in site.spaces:
            raise Unmappable(f"an option of space {name.split('.')[0]!r}, which is not an "
                             "option space of one-octet codes and lengths declared before it")
        if not 1 <= code <= 254:
            raise Unmappable(f"code {code} is outside 1..254")
        types = definition_types(words[5:])
    except Unmappable as why:
        site.note(node, f"this definition is not used ({why}); options set with it are "
                        "refused where set")
        return
    site.definitions[name] = Definition(name, code, types, node.source)
