"""A role of the appliance run in a child process of the runtime's nursery.

Why a process: work that may be heavy and is never urgent (the DNS updates of a lease
storm) must not take the CPU from the DHCP server, and the API must never share the DHCP
server's event loop. In a child at a lower CPU priority (nice) the kernel gives the DHCP
process the cores first; an API worker answers HTTP while the DHCP process answers DHCP.

The parent side (``keep_running``, parent.py) is a service of the runtime: it starts
``python -m ipamd child ROLE`` for a role's configuration object (roles.py:
``DnsDeliveryRole``, ``ApiWorkerRole``), keeps its stdin open, and reads its stdout. The
child stops when that pipe closes, so it never outlives its parent, even one killed with
SIGKILL. An unexpected exit is ``ChildExited``: the runtime's supervise restarts it.

Both pipes carry typed messages (ipamd/messages.py), one JSON line each, dispatched by an
``Inbox`` on each side: parent → child ``Configure`` (first: never on the command line or
in the environment, it may hold a DSN password), ``Busy``, ``Push``, ``Answer``; child →
parent ``Report`` and ``Call``. docs/DEVELOPING.md, "The process model", has the table.

The child side (link.py: ``read_config``, ``lower_priority``, ``ParentLink``, ``Reporter``)
is used by the runtime's ``run_child`` and ``run_api_worker``.
"""

from ipamd.child.link import ParentLink, Reporter, lower_priority, read_config
from ipamd.child.parent import ChildExited, keep_running
from ipamd.child.roles import (
    API_WORKER,
    DNS_DELIVERY,
    ApiWorkerRole,
    ChildRole,
    DnsDeliveryRole,
    ParentRefused,
)

__all__ = [
    "API_WORKER", "DNS_DELIVERY", "ApiWorkerRole", "ChildExited", "ChildRole",
    "DnsDeliveryRole", "ParentLink", "ParentRefused", "Reporter", "keep_running",
    "lower_priority", "read_config",
]
