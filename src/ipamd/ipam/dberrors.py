"""Database refusals as domain errors: a constraint the database enforces is never a 500.

The domain code checks every rule first for a precise message; the constraints are
the final judge under concurrency, and ``guarded`` turns their errors into Conflict/Invalid.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

import asyncpg

from ipamd.core.errors import Conflict, DomainError, Invalid

P = ParamSpec("P")
T = TypeVar("T")

# constraint name -> (status, message); messages name the field.
CONSTRAINTS: dict[str, tuple[int, str]] = {
    "tenants_name": (409, "name: a tenant with this name already exists"),
    "prefixes_tenant_cidr": (409, "cidr: this tenant already has this prefix"),
    "client_classes_tenant_name": (409, "name: this tenant already has a client class so named"),
    "subnets_no_overlap": (409, "cidr: overlaps another subnet of the same tenant"),
    "shared_networks_tenant_name": (
        409, "name: this tenant already has a shared network so named"
    ),
    "subnets_shared_network": (
        409, "shared_network_id: the shared network was deleted, or still has subnets"
    ),
    "subnets_v6_fields": (
        422, "gateway: an IPv6 subnet has no gateway, next_server or boot_file"
    ),
    "pools_one_family": (422, "start_ip/end_ip: both ends must be of one address family"),
    "excludes_one_family": (422, "start_ip/end_ip: both ends must be of one address family"),
    "pd_pools_ipv6": (422, "prefix: a delegation pool is an IPv6 prefix"),
    "pd_pools_length": (
        422, "delegated_length: longer than the pool's prefix length and at most 128"
    ),
    "pd_pools_no_overlap": (409, "prefix: overlaps another delegation pool of the tenant"),
    "pd_excludes_no_overlap": (409, "prefix: overlaps another exclude of the delegation pool"),
    "pd_reservations_pool_prefix": (
        409, "prefix: the delegation pool already has a reservation for this prefix"
    ),
    "pd_reservations_pool_duid": (
        409, "duid: the delegation pool already has a reservation for this DUID"
    ),
    "pools_no_overlap": (409, "start_ip/end_ip: the range overlaps another pool of the subnet"),
    "excludes_no_overlap": (
        409, "start_ip/end_ip: the range overlaps another exclude of the subnet"
    ),
    "reservations_subnet_ip": (409, "ip: the subnet already has a reservation for this address"),
    "reservations_subnet_mac": (409, "mac: the subnet already has a reservation for this MAC"),
    "reservations_subnet_duid": (409, "duid: the subnet already has a reservation for this DUID"),
    "reservations_identity": (422, "mac/duid: a reservation needs a mac or a duid"),
    "assignments_subnet_ip": (409, "ip: the subnet already has an assignment for this address"),
    "dhcp_options_unique": (
        409, "code: the subnet already has this option (for this vendor_class)"
    ),
    "dhcp_options_class_unique": (
        409, "code: the client class already has this option (for this vendor_class)"
    ),
    "dhcp_options_reservation_unique": (
        409, "code: the reservation already has this option (for this vendor_class)"
    ),
    "leases_live_ip": (409, "ip: the address is leased"),
}


def _refusal(status: int, message: str) -> DomainError:
    if status == 409:
        return Conflict(message)
    field, colon, text = message.partition(": ")  # 422 messages start with the field
    return Invalid(field, text) if colon else Invalid("", message)


def translate(error: asyncpg.PostgresError) -> DomainError:
    name = getattr(error, "constraint_name", None) or ""
    if name in CONSTRAINTS:
        status, message = CONSTRAINTS[name]
        return _refusal(status, message)
    if isinstance(error, asyncpg.ForeignKeyViolationError):
        table = getattr(error, "table_name", None) or "object"
        return Conflict(f"{table}: still referenced by, or refers to, a missing object "
                        f"({name or 'foreign key'})")
    if isinstance(error, asyncpg.UniqueViolationError | asyncpg.ExclusionViolationError):
        return Conflict(f"conflicts with an existing object ({name or 'unique'})")
    if isinstance(error, asyncpg.CheckViolationError | asyncpg.NotNullViolationError):
        column = getattr(error, "column_name", None) or name or "value"
        return Invalid(column, f"not accepted by the database rule {name or column}")
    if isinstance(error, asyncpg.TransactionRollbackError):
        return Conflict("a concurrent change got in the way; retry the request")
    return _refusal(422, "a value is out of the range the database accepts")


def guarded(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Wrap a unit of database work so constraint and data errors become domain errors."""

    @functools.wraps(fn)
    async def unit(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except (
            asyncpg.IntegrityConstraintViolationError,
            asyncpg.DataError,
            asyncpg.TransactionRollbackError,
        ) as error:
            raise translate(error) from None

    return unit


def affected(status: str) -> int:
    """The row count of an asyncpg command status such as 'DELETE 1'."""
    return int(status.split()[-1])
