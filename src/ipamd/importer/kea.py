"""The Kea reader: a Kea 2.x configuration (`Dhcp4`, `Dhcp6`) as an import plan.

Every parameter Kea takes is either mapped (docs/migrating.md has the table), reported as not
applicable to the appliance (a note: logging, interfaces, the lease file, high availability),
or refused with its file, line and why. Live leases are never read (spec §1).
"""

from __future__ import annotations

from typing import Any

from ipamd.importer import kea_subnet, kea_syntax
from ipamd.importer.kea_classes import Match, map_test
from ipamd.importer.kea_hosts import pxe
from ipamd.importer.kea_scope import (
    INHERITED,
    KEA_DEFAULT_LIFETIME,
    Opt,
    OptionMapper,
    Scope,
    unset,
)
from ipamd.importer.kea_syntax import KList, KObj
from ipamd.importer.model import (
    Plan,
    Planned,
    ReadError,
    Resolver,
    class_key,
    option_key,
    shared_network_key,
)
from ipamd.importer.options import NAMES4, NAMES6, OTHER6, Unmappable

# Parameters with no meaning on the appliance: reported once each, as notes.
NOT_APPLICABLE: dict[str, str] = {
    "interfaces-config": "the appliance serves the interfaces of its [dhcp]/[dhcp6] settings",
    "lease-database": "live leases are never imported (spec §1)",
    "loggers": "the appliance logs JSON lines (config/ipamd.toml)",
    "control-socket": "the appliance is managed through its HTTP API",
    "sanity-checks": "the appliance checks leases itself", "multi-threading": "Kea tuning",
    "expired-leases-processing": "the appliance's expiry worker", "dhcp-queue-control": "Kea "
    "tuning", "server-tag": "a config-backend tag", "dhcp4o6-port": "DHCPv4-over-DHCPv6",
    "decline-probation-period": "the appliance's probation period (24 h)",
    "echo-client-id": "the appliance echoes option 61 (RFC 6842)",
    "match-client-id": "reservations match by MAC or DUID", "authoritative": "the appliance "
    "is authoritative (it NAKs unknown renewals, spec §1)",
    "host-reservation-identifiers": "reservations match by MAC or DUID",
    "reservation-mode": "reservations are matched in every subnet",
    "reservations-global": "global reservations are placed in their subnets",
    "reservations-in-subnet": "reservations are matched in every subnet",
    "reservations-out-of-pool": "reservations may lie inside pools",
    "early-global-reservations-lookup": "reservations are placed in their subnets",
    "statistic-default-sample-count": "metrics are at /api/v1/metrics",
    "statistic-default-sample-age": "metrics are at /api/v1/metrics",
    "calculate-tee-times": "T1/T2 derive from the lease time", "t1-percent": "T1 is 50 %",
    "t2-percent": "T2 is 87.5 %", "cache-threshold": "lease caching", "cache-max-age": "lease "
    "caching", "store-extended-info": "the appliance keeps option 82 in history",
    "ip-reservations-unique": "an IP is reserved once per subnet",
    "reservations-lookup-first": "Kea tuning", "compatibility": "Kea packet leniency",
    "parked-packet-limit": "Kea hooks", "server-id": "the appliance keeps one server DUID",
    "mac-sources": "the appliance reads the MAC from the packet", "relay-supplied-options":
    "relay options", "data-directory": "Kea's files", "allocator": "Kea's allocator",
    "pd-allocator": "Kea's allocator", "hostname-char-set": "DDNS names",
    "hostname-char-replacement": "DDNS names", "rapid-commit": "DHCPv6 rapid commit",
    "interface": "the appliance picks a subnet by address, not by interface",
    "user-context": "comments", "comment": "comments", "dhcp-ddns": "DDNS: set the subnets' "
    "ddns_* fields to a /dns-servers server and zone (docs/dns.md)",
}
DDNS_PREFIX = "ddns-"  # every ddns-* parameter: the subnet's ddns_* fields instead
HOOKS_NOT_APPLICABLE = {
    "libdhcp_ha.so": "high availability: not applicable (spec §1); the appliance's nodes are "
                     "all active (docs/scale-out.md)",
    "libdhcp_lease_cmds.so": "lease commands: the appliance's API",
    "libdhcp_stat_cmds.so": "statistics: /api/v1/metrics",
}
HANDLED = frozenset({"option-data", "option-def", "client-classes", "subnet4", "subnet6",
                     "shared-networks", "reservations", "hooks-libraries", "valid-lifetime",
                     "min-valid-lifetime", "max-valid-lifetime", "next-server",
                     "boot-file-name", "renew-timer", "rebind-timer", "preferred-lifetime",
                     "min-preferred-lifetime", "max-preferred-lifetime", "server-hostname"})
SHARED_KEYS = frozenset({"name", "subnet4", "subnet6", "option-data", "relay", *INHERITED})


def read(path: str, resolver: Resolver | None = None) -> Plan:
    """The plan for a Kea configuration file; `ReadError` when it cannot be read at all."""
    top = kea_syntax.load(path)
    plan = Plan()
    for node, key, found in list(kea_syntax.placeholders(top)):
        # An unrendered template: the value means nothing yet, so the parameter is left out.
        plan.refuse(key, node.at(key), f"holds the template placeholder {found}: render the "
                    "template into a configuration first")
        del node[key]
    servers = [name for name in ("Dhcp4", "Dhcp6") if name in top]
    if not servers:
        raise ReadError(path, top.source.line, "no Dhcp4 or Dhcp6 section (a Kea DHCP "
                        "server configuration is { \"Dhcp4\": {...} } or { \"Dhcp6\": {...} })")
    for name, node in top.items():
        if name in ("Dhcp4", "Dhcp6"):
            if not isinstance(node, KObj):
                raise ReadError(path, top.at(name).line, f"{name} is not an object")
            _Server(plan, 4 if name == "Dhcp4" else 6, resolver).read(node)
        else:
            plan.note(f"{name}: another Kea daemon's section, not applicable",
                      top.at(name))
    return plan


class _Server:
    """One `Dhcp4` or `Dhcp6` section."""

    def __init__(self, plan: Plan, family: int, resolver: Resolver | None) -> None:
        self.plan, self.family, self.resolver = plan, family, resolver
        self.mapper = OptionMapper(plan, family, resolver)
        self.defs: dict[str, tuple[int, str]] = {}  # option-def name -> (code, type)
        self.def_codes: dict[int, str] = {}  # option-def code -> type
        self.classes: dict[str, Match] = {}  # mapped classes by name
        self.subnets = kea_subnet.Subnets(self)

    def read(self, node: KObj) -> None:
        self.report_keys(node, HANDLED, "Dhcp4" if self.family == 4 else "Dhcp6")
        self.hooks(node)
        if "option-def" in node:
            self.option_defs(node["option-def"])
        scope = Scope().child(node, self.option_data(node))
        if "valid-lifetime" not in node:
            self.plan.note(f"no valid-lifetime: Kea's default of {KEA_DEFAULT_LIFETIME} s "
                           "is used (not the appliance's 86400 s)", node.source)
        for entry in self.items(node, "client-classes"):
            self.client_class(entry)
        for entry in self.items(node, "shared-networks"):
            self.shared_network(entry, scope)
        self.subnets.read_list(node, scope, None)
        for entry in self.items(node, "reservations"):
            self.subnets.global_reservation(entry, scope)
        self.precedence_notes()

    def precedence_notes(self) -> None:
        """Kea 2.2 ranks a class's option data below the subnet's; the appliance above it
        (docs/api-ipam.md, "Option scopes"): say so wherever both set one code."""
        codes = {kind: {obj.body["code"] for obj in self.plan.objects if obj.kind == kind}
                 for kind in ("class_option", "subnet_option")}
        for code in sorted(codes["class_option"] & codes["subnet_option"]):
            self.plan.note(f"option {code} is set on a client class and on subnets: Kea gives "
                           "class members the subnet's value, the appliance the class's")

    def report_keys(self, node: KObj, handled: frozenset[str], where: str) -> None:
        """Notes for parameters that do not apply; refusals for unknown ones."""
        for key in node:
            if key in handled:
                continue
            if key in NOT_APPLICABLE:
                self.plan.note(f"{key}: not applicable: {NOT_APPLICABLE[key]}", node.at(key))
            elif key.startswith(DDNS_PREFIX):
                self.plan.note(f"{key}: not applicable (DDNS is the subnets' ddns_* fields, "
                               "docs/dns.md)", node.at(key))
            elif key in ("hosts-database", "hosts-databases"):
                self.plan.refuse(key, node.at(key), "reservations kept in a database are not "
                                 "in this file: export them into it first")
            else:
                self.plan.refuse(key, node.at(key), f"{where} parameter {key!r} has no "
                                 "equivalent on the appliance")

    def hooks(self, node: KObj) -> None:
        for hook in self.items(node, "hooks-libraries"):
            library = str(hook.get("library", ""))
            base = library.rsplit("/", 1)[-1]
            if base in HOOKS_NOT_APPLICABLE:
                self.plan.note(f"hook {base}: not applicable ({HOOKS_NOT_APPLICABLE[base]})",
                               hook.source)
            else:
                self.plan.refuse(f"hook {base or '?'}", hook.source, "a hook library changes "
                                 "how Kea answers; the plan cannot know how")

    def items(self, node: KObj, key: str) -> list[KObj]:
        """A list of objects; anything else in it is refused by its line."""
        value = node.get(key)
        if value is None:
            return []
        if not isinstance(value, KList):
            self.plan.refuse(key, node.at(key), f"{key} is not a list")
            return []
        out = []
        for item, source in zip(value, value.sources, strict=True):
            if isinstance(item, KObj):
                out.append(item)
            else:
                self.plan.refuse(key, source, f"an entry of {key} is not an object")
        return out

    # --- options ------------------------------------------------------------------------

    def option_defs(self, defs: Any) -> None:
        for entry in defs if isinstance(defs, KList) else []:
            if not isinstance(entry, KObj):
                continue
            name, code, kind = entry.get("name"), entry.get("code"), entry.get("type", "")
            space = entry.get("space", f"dhcp{self.family}")
            if space != f"dhcp{self.family}" or kind in ("record", "empty", "") or not isinstance(
                    code, int) or not isinstance(name, str):
                self.plan.refuse(f"option-def {name}", entry.source, "only simple types of "
                                 f"the dhcp{self.family} space are mapped (by code, as hex); "
                                 f"this one is {kind or 'untyped'} in space {space}")
                continue
            if (self.family == 4 and code in NAMES4.values()) or self.family == 6:
                self.plan.refuse(f"option-def {name}", entry.source, f"code {code} "
                                 "redefines a standard option" if self.family == 4 else
                                 "custom DHCPv6 options are not taken (17, 23, 24, 56, 59)")
                continue
            full = f"{kind}[]" if entry.get("array") is True else str(kind)
            self.defs[name], self.def_codes[code] = (code, full), full

    def option_data(self, node: KObj) -> list[Opt]:
        out: list[Opt] = []
        for entry in self.items(node, "option-data"):
            try:
                out.append(self.option(entry))
            except Unmappable as why:
                label = entry.get("name", entry.get("code", "?"))
                self.plan.refuse(f"option-data {label}", entry.source, str(why))
        return out

    def option(self, entry: KObj) -> Opt:
        space = entry.get("space", f"dhcp{self.family}")
        if space != f"dhcp{self.family}":
            raise Unmappable(f"option space {space!r} (encapsulated suboptions) has no "
                             "equivalent; give the encapsulating option as hex")
        names = NAMES4 if self.family == 4 else {**OTHER6, **NAMES6}
        name, code = entry.get("name"), entry.get("code")
        if not isinstance(name, str | None) or isinstance(code, bool) or not isinstance(
                code, int | None):
            raise Unmappable("an option's name is text and its code a number")
        custom = None
        if name in self.defs:
            code, custom = self.defs[name]
        elif isinstance(code, int) and code in self.def_codes:
            custom = self.def_codes[code]
        elif isinstance(name, str) and code is None:
            if name not in names:
                raise Unmappable(f"option {name!r} is not a DHCPv{self.family} option known "
                                 "here")
            code = names[name]
        if not isinstance(code, int) or not 1 <= code <= 254:
            raise Unmappable("an option needs a name or a code of 1 to 254")
        data = entry.get("data")
        if not isinstance(data, str) or not data.strip():
            raise Unmappable(f"option {name or code} has no data")
        csv = entry.get("csv-format", True) is not False
        return Opt(code, str(name or code), data, csv, entry.source, custom)

    # --- classes and shared networks ----------------------------------------------------

    def client_class(self, entry: KObj) -> None:
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            self.plan.refuse("client-class", entry.source, "a class without a name")
            return
        test = entry.get("test")
        try:
            if not isinstance(test, str):
                raise Unmappable("a class without a test is given only by reservations or "
                                 "hooks; the appliance's classes match what clients send")
            found = map_test(test, self.family, self.classes)
        except Unmappable as why:
            self.plan.refuse(f"client-class {name}", entry.source, str(why))
            return
        if found.note:
            self.plan.note(f"client-class {name}: {found.note}", entry.source)
        self.classes[name] = found
        self.add_class(name, found, entry)

    def add_class(self, name: str, found: Match, entry: KObj) -> None:
        for key in entry:
            if key not in ("name", "test", "option-data", "next-server", "boot-file-name",
                           "option-def", "user-context", "comment"):
                self.plan.refuse(f"client-class {name}: {key}", entry.at(key),
                                 f"{key!r} has no equivalent on a client class")
        mapped = self.mapper.map(self.option_data(entry), "class")
        body: dict[str, Any] = {"name": name[:100], "match": found.match, "value": found.value,
                                **pxe(self.plan, entry, f"client-class {name}"),
                                **mapped.fields}
        if self.family == 6 and mapped.bodies:
            self.plan.refuse(f"client-class {name}: option-data", entry.at("option-data"),
                             "class options are DHCPv4 options only")
            mapped.bodies = []
        if "option-def" in entry:
            self.plan.refuse(f"client-class {name}: option-def", entry.at("option-def"),
                             "options defined inside a class are not mapped")
        key = class_key(name)
        if key in self.plan:
            self.plan.refuse(f"client-class {name}", entry.source, "a class of this name is "
                             "already planned (Dhcp4 and Dhcp6 share class names)")
            return
        self.plan.add(Planned("client_class", key, body, entry.source))
        for option, source in mapped.bodies:
            self.plan.add(Planned("class_option", option_key(key, option["code"]), option,
                                  source, owner=key))

    def shared_network(self, entry: KObj, scope: Scope) -> None:
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            self.plan.refuse("shared-network", entry.source, "a shared network without a name")
            return
        key: str | None = shared_network_key(name)
        if self.family == 6:
            self.plan.refuse(f"shared-network {name}", entry.source, "shared networks group "
                             "IPv4 subnets; its IPv6 subnets are planned on their own")
            key = None
        elif key and key not in self.plan:
            self.plan.add(Planned("shared_network", key, {"name": name[:100]}, entry.source))
        self.report_keys(entry, SHARED_KEYS, f"shared-network {name}")
        relay = entry.get("relay")
        if isinstance(relay, KObj):
            found = relay.get("ip-addresses", [relay.get("ip-address")])
            for item in [i for i in found if not unset(i)] if isinstance(found, list) else []:
                self.plan.note(f"relay {item}: list it in the trusted relays setting (spec §1, "
                               "rule 3); each member is picked by the relay's address",
                               entry.at("relay"))
        inner = scope.child(entry, self.option_data(entry))
        self.subnets.read_list(entry, inner, key)
