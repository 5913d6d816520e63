"""The import plan: what `ipamd-import` would create through the API, and what it refuses.

Spec §1 ("Behaviours that hold for data loaded from other DHCP servers"): data from other
DHCP servers is mapped externally and created through the API. A reader (Kea JSON, ISC
dhcpd.conf) turns a file into a `Plan`; `plan` prints it, `apply` POSTs it in order.

- `Planned` is one object to create: its `kind` names the API collection, its `key` is a
  stable identity derived from the source object (`subnet:10.0.0.0/24`), used for the
  references between planned objects and, hashed, as the create's Idempotency-Key, so a
  rerun replays instead of creating twice (docs/api-ipam.md, "Conventions").
- `body` is exactly the JSON the collection's POST takes, except that a reference to
  another planned object is a `Ref(key)`, replaced by that object's id at apply time.
- `owner` is the planned object whose collection the object is created in (the subnet of
  a pool, the class of a class option); `None` for top-level collections.
- Objects are added in dependency order: `Plan.add` refuses one whose owner or references
  are not planned yet, so applying in list order never meets an unknown id.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

Kind = Literal[
    "prefix", "subnet", "pool", "exclude", "reservation", "assignment", "client_class",
    "subnet_option", "class_option", "reservation_option", "shared_network", "pd_pool",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

# Where each kind is created: the collection path; "{}" is the owner's id.
COLLECTIONS: dict[Kind, str] = {
    "prefix": "/prefixes",
    "subnet": "/subnets",
    "pool": "/subnets/{}/pools",
    "exclude": "/subnets/{}/excludes",
    "reservation": "/subnets/{}/reservations",
    "assignment": "/subnets/{}/assignments",
    "client_class": "/client-classes",
    "subnet_option": "/subnets/{}/options",
    "class_option": "/client-classes/{}/options",
    "reservation_option": "/reservations/{}/options",
    "shared_network": "/shared-networks",
    "pd_pool": "/subnets/{}/pd-pools",
}

# The owner's kind for kinds created inside another object.
OWNER_KIND: dict[Kind, Kind] = {
    "pool": "subnet", "exclude": "subnet", "reservation": "subnet", "assignment": "subnet",
    "subnet_option": "subnet", "pd_pool": "subnet", "class_option": "client_class",
    "reservation_option": "reservation",
}

# A function that resolves a DNS name to addresses of a family (4 or 6); raises LookupError
# when the name does not resolve. Readers take one from the caller, so tests need no DNS.
Resolver = Callable[[str, int], list[str]]


class Reader(Protocol):
    """A reader's entry point (`kea.read`, `isc.read`): a file in, a plan out; `ReadError`
    when the file cannot be read at all. Names written where an address belongs are looked
    up with `resolver`; without one they are refused."""

    def __call__(self, path: str, resolver: Resolver | None = None) -> Plan: ...


class ReadError(Exception):
    """The input cannot be read at all: a message naming the file and line, never a traceback."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line
        self.message = message


class PlanError(ValueError):
    """A reader broke the plan's rules (a programming error, not bad input)."""


@dataclass(frozen=True)
class Source:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Ref:
    """A reference to another planned object, replaced by its id at apply time."""

    key: str


@dataclass(frozen=True, eq=True)
class Planned:
    kind: Kind
    key: str
    body: Mapping[str, Any] = field(hash=False)
    source: Source
    owner: str | None = None

    @property
    def parents(self) -> tuple[str, ...]:
        """Keys this object needs created first: its owner, then every `Ref` in its body."""
        refs = tuple(ref.key for ref in _refs(self.body))
        return (self.owner, *refs) if self.owner else refs

    def idempotency_key(self) -> str:
        """The create's Idempotency-Key: stable per source object, within the API's 255."""
        return "ipamd-import:" + hashlib.sha256(self.key.encode()).hexdigest()


@dataclass(frozen=True)
class Refused:
    """A construct of the source that has no equivalent, or cannot be mapped as written."""

    construct: str
    source: Source
    reason: str


@dataclass(frozen=True)
class Note:
    """Something the operator should know that is not a refusal (a default applied, a name
    resolved)."""

    text: str
    source: Source | None = None


@dataclass
class Plan:
    objects: list[Planned] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    _index: dict[str, Planned] = field(default_factory=dict, repr=False)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: str) -> Planned | None:
        return self._index.get(key)

    def add(self, obj: Planned) -> Planned:
        """Add in dependency order. Adding the same key again with the same body is a no-op
        (a global option inherited twice); with another body it is a `PlanError` — the
        reader must refuse the second one itself, naming why."""
        known = self._index.get(obj.key)
        if known is not None:
            if known.kind == obj.kind and known.body == obj.body and known.owner == obj.owner:
                return known
            raise PlanError(f"{obj.key} planned twice ({known.source} and {obj.source})")
        if obj.kind not in COLLECTIONS:
            raise PlanError(f"{obj.key}: unknown kind {obj.kind!r}")
        _check_owner(obj, self._index)
        for parent in obj.parents:
            if parent not in self._index:
                raise PlanError(f"{obj.key} needs {parent}, which is not planned before it")
        self._index[obj.key] = obj
        self.objects.append(obj)
        return obj

    def refuse(self, construct: str, source: Source, reason: str) -> None:
        self.refused.append(Refused(construct, source, reason))

    def note(self, text: str, source: Source | None = None) -> None:
        self.notes.append(Note(text, source))

    def extend(self, other: Plan) -> None:
        """Take another plan's objects (in its order), refusals and notes."""
        for obj in other.objects:
            self.add(obj)
        self.refused.extend(other.refused)
        self.notes.extend(other.notes)

    def counts(self) -> dict[str, int]:
        """Planned objects by kind, plus `refused` (for tables and summaries)."""
        out: dict[str, int] = {kind: 0 for kind in KINDS}
        for obj in self.objects:
            out[obj.kind] += 1
        out["refused"] = len(self.refused)
        return out


def _check_owner(obj: Planned, index: Mapping[str, Planned]) -> None:
    want = OWNER_KIND.get(obj.kind)
    if want is None:
        if obj.owner is not None:
            raise PlanError(f"{obj.key}: a {obj.kind} has no owner")
        return
    owner = index.get(obj.owner) if obj.owner else None
    if owner is None or owner.kind != want:
        raise PlanError(f"{obj.key}: a {obj.kind} is created inside a planned {want}")


def _refs(value: Any) -> Iterator[Ref]:
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _refs(item)


def resolve(value: Any, ids: Mapping[str, str]) -> Any:
    """The body as sent: every `Ref` replaced by the created object's id."""
    if isinstance(value, Ref):
        return ids[value.key]
    if isinstance(value, Mapping):
        return {name: resolve(item, ids) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(item, ids) for item in value]
    return value


def collection_path(obj: Planned, ids: Mapping[str, str]) -> str:
    """The POST path of a planned object, its owner's id filled in."""
    template = COLLECTIONS[obj.kind]
    return template.format(ids[obj.owner]) if obj.owner else template


# --- stable keys: one function per kind, so both readers derive the same identity -------


def net(cidr: str) -> str:
    """A network in canonical form (`10.0.0.0/24`, `2001:db8::/64`)."""
    return str(ipaddress.ip_network(cidr, strict=True))


def prefix_key(cidr: str) -> str:
    return f"prefix:{net(cidr)}"


def subnet_key(cidr: str) -> str:
    return f"subnet:{net(cidr)}"


def range_key(kind: Literal["pool", "exclude"], cidr: str, start: str, end: str) -> str:
    first, last = ipaddress.ip_address(start), ipaddress.ip_address(end)
    return f"{kind}:{net(cidr)}:{first}-{last}"


def reservation_key(cidr: str, ip: str) -> str:
    return f"reservation:{net(cidr)}:{ipaddress.ip_address(ip)}"


def assignment_key(cidr: str, ip: str) -> str:
    return f"assignment:{net(cidr)}:{ipaddress.ip_address(ip)}"


def class_key(name: str) -> str:
    return f"client_class:{name}"


def shared_network_key(name: str) -> str:
    return f"shared_network:{name}"


def pd_pool_key(cidr: str, prefix: str, delegated_length: int) -> str:
    return f"pd_pool:{net(cidr)}:{net(prefix)}:{delegated_length}"


_OPTION_KINDS: dict[str, Kind] = {
    "subnet": "subnet_option", "client_class": "class_option", "reservation": "reservation_option",
}


def option_kind(owner: str) -> Kind:
    """The option kind created inside `owner` (a subnet, client class or reservation key)."""
    return _OPTION_KINDS[owner.split(":", 1)[0]]


def option_key(owner: str, code: int, vendor_class: str | None = None) -> str:
    """An option's identity is its scope, code and vendor class (one per scope: 409)."""
    tail = f":{vendor_class}" if vendor_class is not None else ""
    return f"{option_kind(owner)}:{owner.split(':', 1)[1]}:{code}{tail}"


def add_scope(plan: Plan, cidr: str, fields: Mapping[str, Any], source: Source) -> str:
    """Spec §1's first row: a scope is a prefix (the plan) plus a subnet (the L3 network).
    The prefix is the scope's own CIDR, so the subnet fits it exactly; an appliance that
    already holds a wider prefix still gets this one (prefixes nest). Returns the subnet key."""
    pkey = plan.add(Planned("prefix", prefix_key(cidr), {"cidr": net(cidr)}, source)).key
    body = {"prefix_id": Ref(pkey), "cidr": net(cidr), **fields}
    return plan.add(Planned("subnet", subnet_key(cidr), body, source)).key


# --- rendering: the plan as text (grouped by scope) and as JSON ---------------------------


def _plain(value: Any, ref: Callable[[Ref], Any]) -> Any:
    if isinstance(value, Ref):
        return ref(value)
    if isinstance(value, Mapping):
        return {name: _plain(item, ref) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, ref) for item in value]
    return value


def _source_json(source: Source | None) -> dict[str, Any] | None:
    return None if source is None else {"file": source.file, "line": source.line}


def to_json(plan: Plan) -> dict[str, Any]:
    """The plan as JSON (`ipamd-import plan --json`): references are `{"$ref": key}`."""
    objects = [{
        "kind": obj.kind, "key": obj.key, "owner": obj.owner, "scope": scope_of(plan, obj),
        "collection": COLLECTIONS[obj.kind],
        "body": _plain(obj.body, lambda ref: {"$ref": ref.key}),
        "source": _source_json(obj.source),
    } for obj in plan.objects]
    refused = [{"construct": item.construct, "reason": item.reason,
                "source": _source_json(item.source)} for item in plan.refused]
    notes = [{"text": note.text, "source": _source_json(note.source)} for note in plan.notes]
    return {"objects": objects, "refused": refused, "notes": notes, "counts": plan.counts()}


def scope_of(plan: Plan, obj: Planned) -> str:
    """The scope an object is shown under: its subnet (a prefix: the subnet of the same
    CIDR), else its client class, else itself."""
    if obj.kind == "prefix":
        cidr = obj.key.split(":", 1)[1]
        return subnet_key(cidr) if subnet_key(cidr) in plan else obj.key
    current = obj
    while current.owner is not None and current.kind not in ("subnet", "client_class"):
        owner = plan.get(current.owner)
        if owner is None:
            break
        current = owner
    return current.key


def _heading(key: str) -> str:
    kind, _, name = key.partition(":")
    return f"{kind.replace('_', ' ')} {name}"


def render_text(plan: Plan) -> str:
    """Every object grouped by scope, then every refusal with file:line and why, then notes."""
    groups: dict[str, list[Planned]] = {}
    for obj in plan.objects:
        groups.setdefault(scope_of(plan, obj), []).append(obj)
    lines: list[str] = []
    for scope, members in groups.items():
        lines.append(_heading(scope))
        for obj in members:
            body = _plain(obj.body, lambda ref: f"<{ref.key}>")
            shown = ", ".join(f"{name}={value!r}" for name, value in body.items())
            lines.append(f"  + {obj.kind:<18} {shown}  [{obj.source}]")
    lines.append(f"refused ({len(plan.refused)}):")
    lines.extend(f"  - {item.source}: {item.construct}: {item.reason}" for item in plan.refused)
    if plan.notes:
        lines.append(f"notes ({len(plan.notes)}):")
        lines.extend(f"  * {note.source}: {note.text}" if note.source else f"  * {note.text}"
                     for note in plan.notes)
    counts = plan.counts()
    summary = ", ".join(f"{count} {kind}" for kind, count in counts.items()
                        if count and kind != "refused")
    lines.append(f"total: {len(plan.objects)} to create ({summary or 'nothing'}), "
                 f"{counts['refused']} refused")
    return "\n".join(lines) + "\n"
