"""Event topics (docs/webhooks.md) and the webhook `topics` field: a comma list of topics, or
`*`."""

from __future__ import annotations

LEASE_TOPICS = (
    "lease.granted",
    "lease.renewed",
    "lease.released",
    "lease.expired",
    "lease.declined",
)
AUDIT_TOPIC = "ipam.audit"
KNOWN = (*LEASE_TOPICS, AUDIT_TOPIC)
ALL = "*"


def parse(value: str) -> list[str]:
    """`"lease.granted, ipam.audit"` → `["lease.granted", "ipam.audit"]`; `"*"` → `["*"]`.

    Raises ValueError naming the offending item; duplicates are dropped, order is kept.
    """
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        raise ValueError(f"give a comma-separated list of topics or {ALL!r}")
    found: list[str] = []
    for item in items:
        if not item:
            raise ValueError("empty item in the comma-separated list")
        if item != ALL and item not in KNOWN:
            raise ValueError(f"unknown topic {item!r}; known topics: {', '.join(KNOWN)} (or *)")
        if item not in found:
            found.append(item)
    if ALL in found and len(found) > 1:
        raise ValueError("'*' means every topic and stands alone")
    return found


def render(topics: list[str]) -> str:
    return ",".join(topics)


def matches(topics: list[str], topic: str) -> bool:
    return topics == [ALL] or topic in topics
