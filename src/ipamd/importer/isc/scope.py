"""dhcpd.conf's scopes: which parameters hold where, and what dhcpd applies first.

dhcpd.conf(5) ("scope"): a client's parameters come from its host declaration, then its
classes, then the pool, subnet and shared network of its address, each with the lexical
scopes around it (groups, the global scope); the most specific scope that sets a parameter
wins, and no scope is consulted twice. The appliance has three option scopes
(reservation > class > subnet, docs/api-ipam.md "Option scopes"), so the importer folds
dhcpd's: the global scope, shared networks and the groups around a subnet into the
subnet; the groups around a host (below its subnet's scopes) into the reservation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ipamd.importer.isc.lexer import Kind
from ipamd.importer.isc.parser import Node

# Parameters a scope holds, by keyword (the value is the statement; the last one wins,
# as dhcpd reads them). Options are held as "option NAME".
PARAMETERS = frozenset({
    "default-lease-time", "max-lease-time", "min-lease-time", "filename", "next-server",
    "server-name", "use-host-decl-names", "fixed-address", "hardware", "host-identifier",
    "vendor-option-space",
})

# Statements with no equivalent and nothing to carry over: a note says why they go.
NOTED: dict[str, str] = {
    "authoritative": "the appliance is always authoritative: a renewal of an address it "
                     "never acknowledged gets a NAK (spec §1, rule 1)",
    "log-facility": "the appliance logs JSON lines of its own",
    "lease-file-name": "a setting of the dhcpd process; leases are never imported (spec §1)",
    "pid-file-name": "a setting of the dhcpd process",
    "omapi-port": "a setting of the dhcpd process; the appliance is managed through its API",
    "omapi-key": "a setting of the dhcpd process; the appliance is managed through its API",
    "local-port": "a setting of the dhcpd process; see the [dhcp] section of ipamd.toml",
    "local-address": "a setting of the dhcpd process; see the [dhcp] section of ipamd.toml",
    "one-lease-per-client": "the appliance keeps one lease per client and subnet",
    "ping-check": "a setting of the dhcpd process",
    "ping-timeout": "a setting of the dhcpd process",
    "update-static-leases": "DDNS is set per subnet (ddns_* fields)",
    "db-time-format": "a setting of the dhcpd process",
    "min-secs": "the appliance answers at once",
    "get-lease-hostnames": "the appliance sends a reservation's hostname",
    "stash-agent-options": "the appliance keeps relay information with each lease",
    "always-broadcast": "the appliance answers as RFC 2131 §4.1 says",
    "always-reply-rfc1048": "the appliance answers DHCP clients with options always",
    "dynamic-bootp-lease-length": "plain BOOTP clients are not served",
    "dynamic-bootp-lease-cutoff": "plain BOOTP clients are not served",
}
DDNS_WHY = ("DDNS is configured per subnet (ddns_* fields) with a /dns-servers object whose "
            "key is a secret_ref (docs/dns.md); dhcpd's DDNS settings, keys and zones are not "
            "carried over, so the secret never passes through the plan")


@dataclass
class Scope:
    kind: str  # global, shared-network, group, subnet, pool, host, class
    node: Node | None
    parent: Scope | None
    params: dict[str, Node] = field(default_factory=dict)

    def chain(self) -> Iterator[Scope]:
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def lookup(self, key: str, below: Scope | None = None) -> Node | None:
        """The most specific setting of ``key`` from here outward, stopping before
        ``below`` (a scope dhcpd consults on its own, so not twice)."""
        for scope in self.chain():
            if scope is below:
                return None
            if key in scope.params:
                return scope.params[key]
        return None

    def held(self, below: Scope | None = None) -> list[str]:
        """Every parameter key set from here outward (stopping before ``below``)."""
        seen: dict[str, None] = {}
        for scope in self.chain():
            if scope is below:
                break
            seen.update(dict.fromkeys(scope.params))
        return list(seen)


def option_key(node: Node) -> str | None:
    """`option NAME value;` held as "option NAME" (definitions and spaces are not)."""
    words = node.words
    if node.keyword != "option" or len(words) < 2 or node.block is not None:
        return None
    if words[1].is_word("space") or (len(words) > 2 and words[2].is_word("code")):
        return None
    return "option " + words[1].text.lower()


def collect(scope: Scope, body: list[Node]) -> list[Node]:
    """Hold ``body``'s parameters in ``scope``; the rest (declarations, statements to judge)
    is returned in order. Order does not matter: a dhcpd group's parameters apply to all of
    its declarations."""
    rest = []
    for node in body:
        key = option_key(node) or (node.keyword if node.keyword in PARAMETERS else None)
        if key is not None and node.block is None:
            scope.params[key] = node
        else:
            rest.append(node)
    return rest


def integer(node: Node) -> int | None:
    """The one integer argument of a parameter (`default-lease-time 600;`), else None."""
    words = node.words
    if len(words) == 2 and words[1].kind is Kind.WORD and words[1].text.isdigit():
        return int(words[1].text)
    return None


def flag(node: Node) -> bool | None:
    words = node.words
    if len(words) == 2 and words[1].kind is Kind.WORD:
        return {"on": True, "true": True, "off": False, "false": False}.get(
            words[1].text.lower())
    return None
