"""Response models of the IPAM resources: they document the API and match what ipam/ returns."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class TenantOut(BaseModel):
    id: uuid.UUID
    name: str
    description: str
    default: bool = Field(description="true for the default tenant (cannot be deleted)")
    created_at: dt.datetime
    updated_at: dt.datetime


class PrefixOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    cidr: str
    family: Literal[4, 6]
    description: str
    created_at: dt.datetime
    updated_at: dt.datetime


class SubnetOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    prefix_id: uuid.UUID
    cidr: str
    name: str
    description: str
    gateway: str | None = Field(description="the router (option 3)")
    lease_time_seconds: int
    min_lease_time_seconds: int | None = Field(
        description="a client's requested lease time (option 51) is raised to this")
    max_lease_time_seconds: int | None = Field(
        description="a client's requested lease time (option 51) is lowered to this")
    dhcp_enabled: bool
    ping_check: bool = Field(description="an ICMP echo to an address before its Offer")
    ping_timeout_ms: int = Field(description="the ping check's wait for an echo reply")
    next_server: str | None = Field(description="PXE next server (siaddr)")
    boot_file: str | None = Field(description="PXE boot file (the file field)")
    ntp_servers: list[str] = Field(description="option 42 unless an option 42 object is set")
    ddns_adapter: Literal["none", "ad_gsstsig", "bind_tsig", "powerdns_http", "embedded"]
    ddns_zone: str | None
    ddns_reverse_zone: str | None
    ddns_ttl: int | None
    ddns_server_id: uuid.UUID | None
    shared_network_id: uuid.UUID | None = Field(
        description="the shared network (several subnets on one link) the subnet is in")
    created_at: dt.datetime
    updated_at: dt.datetime


# An address count: an integer for IPv4, an exact decimal string for IPv6 (docs/api-ipam.md).
Count = Annotated[int | str, Field(
    description="addresses: a JSON integer on IPv4 objects, an exact decimal string on IPv6 "
                "ones (2^64 does not survive a double)")]


class PoolOut(BaseModel):
    id: uuid.UUID
    subnet_id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    start_ip: str
    end_ip: str
    size: Count
    class_id: uuid.UUID | None
    created_at: dt.datetime
    updated_at: dt.datetime


class ExcludeOut(BaseModel):
    id: uuid.UUID
    subnet_id: uuid.UUID
    tenant_id: uuid.UUID
    start_ip: str
    end_ip: str
    size: Count
    created_at: dt.datetime
    updated_at: dt.datetime


class ReservationOut(BaseModel):
    id: uuid.UUID
    subnet_id: uuid.UUID
    tenant_id: uuid.UUID
    ip: str
    mac: str | None
    duid: str | None
    client_id: str | None
    hostname: str | None
    next_server: str | None = Field(description="PXE next server (siaddr), over the subnet's")
    boot_file: str | None = Field(description="PXE boot file, over the classes' and subnet's")
    created_at: dt.datetime
    updated_at: dt.datetime


class AssignmentOut(BaseModel):
    id: uuid.UUID
    subnet_id: uuid.UUID
    tenant_id: uuid.UUID
    ip: str
    hostname: str
    description: str
    created_at: dt.datetime
    updated_at: dt.datetime


class OptionOut(BaseModel):
    id: uuid.UUID
    # Exactly one of the three is set: the option's scope (docs/api-ipam.md, "Option scopes").
    subnet_id: uuid.UUID | None
    class_id: uuid.UUID | None
    reservation_id: uuid.UUID | None
    tenant_id: uuid.UUID
    code: int
    payload: dict[str, Any]
    vendor_class: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


class ScopeOut(BaseModel):
    scope: Literal["subnet", "class", "reservation"]
    scope_id: uuid.UUID
    scope_name: str | None = Field(description="the class's name; the reservation's address")


class EffectiveOption(ScopeOut):
    code: int
    hex: str = Field(description="the option's value as sent, colon-separated hex")
    vendor_class: str | None = Field(description="set when it is sent for this option 60")


class ScopedField(ScopeOut):
    value: str


class EffectiveClass(BaseModel):
    id: uuid.UUID
    name: str
    priority: int


class EffectiveReservation(BaseModel):
    id: uuid.UUID
    ip: str


class EffectiveOptionsOut(BaseModel):
    """What a client would receive on a subnet (docs/api-ipam.md, "Option scopes")."""

    subnet_id: uuid.UUID
    reservation: EffectiveReservation | None
    classes: list[EffectiveClass] = Field(description="matched, the winning one first")
    options: list[EffectiveOption]
    next_server: ScopedField | None
    boot_file: ScopedField | None


class ClientClassOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    match: Literal["vendor_class", "user_class", "mac_prefix", "arch", "circuit_id", "remote_id"]
    value: str
    description: str
    priority: int = Field(description="among matching classes the lowest number's option wins")
    next_server: str | None = Field(description="PXE next server (siaddr), over the subnet's")
    boot_file: str | None = Field(description="PXE boot file, over the subnet's")
    created_at: dt.datetime
    updated_at: dt.datetime


class SharedNetworkMember(BaseModel):
    id: uuid.UUID
    cidr: str
    name: str


class SharedNetworkOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    description: str
    subnets: list[SharedNetworkMember] = Field(
        description="the members, by network address: the order in which the DHCP server "
                    "tries their pools after the subnet the relay's address is in")
    created_at: dt.datetime
    updated_at: dt.datetime


class LeaseSummary(BaseModel):
    lease_id: uuid.UUID
    subnet_id: uuid.UUID
    ip: str
    state: str
    mac: str | None
    duid: str | None
    hostname: str | None
    fqdn: str | None
    starts_at: dt.datetime
    expires_at: dt.datetime


class RangeUtilisation(BaseModel):
    size: Count = Field(description="assignable addresses (a decimal string on IPv6)")
    used: int = Field(description="gateway, reservations, assignments and live leases (each once)")
    free: Count = Field(description="neither used nor excluded (a decimal string on IPv6)")
    excluded: Count = Field(description="inside excludes and not used (a decimal string on IPv6)")
    reserved: int
    assigned: int
    leased: int = Field(description="live leases: offered, active, declined")
    percent_used: float


class SubnetUtilisation(RangeUtilisation):
    subnet_id: uuid.UUID
    cidr: str
    pools: int
    pool_size: Count


class PoolUtilisation(RangeUtilisation):
    pool_id: uuid.UUID
    subnet_id: uuid.UUID
    start_ip: str
    end_ip: str


class PrefixUtilisation(BaseModel):
    prefix_id: uuid.UUID
    cidr: str
    size: Count = Field(description="addresses in the prefix (a decimal string on IPv6)")
    used: Count = Field(description="addresses covered by the tenant's subnets inside it")
    free: Count
    percent_used: float
    subnets: int
    addresses_used: int = Field(description="used addresses inside those subnets")


class SubnetListItem(SubnetOut):
    utilisation: SubnetUtilisation | None = Field(
        default=None, description="only with include=utilisation")


class PrefixListItem(PrefixOut):
    utilisation: PrefixUtilisation | None = Field(
        default=None, description="only with include=utilisation")


class NextFree(BaseModel):
    ip: str | None = Field(description="the lowest free address, or null when the subnet is full")


class LicenseOut(BaseModel):
    tier: str
    max_managed_ips: int
    managed_ips: int
    reservations: int
    assignments: int
    available: int


class _Hit(BaseModel):
    id: uuid.UUID
    match: str = Field(description=(
        "exact, contains, within, address, mac, duid, hostname or hostname_prefix"))
    rank: int = Field(description="lower is a better match")
    summary: str


class PrefixHit(_Hit):
    type: Literal["prefix"]
    object: PrefixOut


class SubnetHit(_Hit):
    type: Literal["subnet"]
    object: SubnetOut


class ReservationHit(_Hit):
    type: Literal["reservation"]
    object: ReservationOut


class AssignmentHit(_Hit):
    type: Literal["assignment"]
    object: AssignmentOut


class LeaseHit(_Hit):
    type: Literal["lease"]
    object: LeaseSummary


SearchHit = Annotated[
    PrefixHit | SubnetHit | ReservationHit | AssignmentHit | LeaseHit,
    Field(discriminator="type"),
]


class SearchPage(BaseModel):
    items: list[SearchHit]
    next_cursor: str | None = Field(description="null when there are no more pages")


class NetboxPrefix(BaseModel):
    prefix: str
    status: str
    tenant: str | None
    vrf: str | None
    is_pool: bool
    mark_utilized: bool
    description: str
    comments: str
    tags: list[str]


class ImportSkipped(BaseModel):
    row: int = Field(description="0-based row of the input (after the CSV header)")
    prefix: str
    tenant: str | None
    reason: str
    id: uuid.UUID | None = Field(description="the existing prefix, when it already exists")


class ImportReport(BaseModel):
    created: list[PrefixOut]
    skipped: list[ImportSkipped]
    created_count: int
    skipped_count: int
