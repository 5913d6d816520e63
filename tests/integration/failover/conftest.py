"""Failover tests deliver webhooks too: the outbox tests' CA, receiver and hosts file."""

from tests.integration.outbox.conftest import (  # noqa: F401  (fixtures, used by name)
    ca,
    ca_file,
    hook_secret,
    hosts_file,
    receiver,
)
