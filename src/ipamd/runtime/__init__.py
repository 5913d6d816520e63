"""The runtime: trio.run → one nursery per node process, hosting the API, the DHCP servers,
the outbox and the periodic workers (docs/DEVELOPING.md, "The process model").

Start-up order: asyncio loop (for asyncpg) → database (wait, create, migrate) →
nursery: API (started with nursery.start, so readiness is real) → services.

The pieces: ``appliance`` (the main process: ``run``, ``services``), ``node`` (the skeleton
every node process shares), ``database`` (bootstrap), ``supervision`` (restart with
backoff), ``sampler`` (the storm signals), ``serving`` (hypercorn and TLS),
``api_processes`` (the API workers, both sides), ``children`` (the DNS delivery child's side).
The names below are what the entry points (cli.py) and the tests use.
"""

from ipamd.child import API_WORKER, DNS_DELIVERY
from ipamd.runtime.api_processes import api_in_main_process, run_api_worker
from ipamd.runtime.appliance import Running, run, services
from ipamd.runtime.children import run_child
from ipamd.runtime.database import bundled_cluster, database_dsn, prepare_database
from ipamd.runtime.sampler import (
    DERIVE_CHURN_PER_SECOND,
    GC_CHURN_PER_SECOND,
    Hysteresis,
    dhcp_at_ceiling,
    either,
    lease_churn,
)
from ipamd.runtime.serving import hypercorn_config
from ipamd.runtime.supervision import supervise

__all__ = [
    "API_WORKER", "DERIVE_CHURN_PER_SECOND", "DNS_DELIVERY", "GC_CHURN_PER_SECOND",
    "Hysteresis", "Running", "api_in_main_process", "bundled_cluster", "database_dsn",
    "dhcp_at_ceiling", "either", "hypercorn_config", "lease_churn", "prepare_database",
    "run", "run_api_worker", "run_child", "services", "supervise",
]
