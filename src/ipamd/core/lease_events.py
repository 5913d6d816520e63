"""The SQL piece every lease state change ends with: its history row and its outbox event."""

from __future__ import annotations


def event_ctes(source: str, event: str) -> str:
    """CTEs writing the lease_events row and the outbox ``events`` row of each changed lease.

    ``source`` has the lease columns and ``event`` (NULL: a change that is no event).
    """
    return f"""
, le AS (
    INSERT INTO lease_events (lease_id, event, subnet_id, ip, mac, client_id, duid, hostname,
                              fqdn, circuit_id, remote_id, giaddr, expires_at)
    SELECT lease_id, {event}, subnet_id, ip, mac, client_id, duid, hostname, fqdn, circuit_id,
           remote_id, giaddr, expires_at FROM {source} WHERE {event} IS NOT NULL
), ev AS (
    INSERT INTO events (topic, payload)
    SELECT 'lease.' || {event}, lease_event_payload(lease_id, ip, subnet_id, hostname, fqdn, state,
           mac, client_id, circuit_id, remote_id, giaddr, starts_at, expires_at)
    FROM {source} WHERE {event} IS NOT NULL
)"""
