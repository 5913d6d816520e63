"""One rule for secrets (docs/security.md, "The one rule for secrets"): which fields name
where a secret lives, and who may read them.

Objects that make the appliance use or send a secret (webhooks, DNS servers of every adapter,
alert destinations, anything later) hold only a *location*: a reference (``env:NAME`` or
``file:/path``, fields named ``*_ref``) or a key file's path (``keytab_path``, fields named
``*_path``). A location is what an attacker needs to aim the appliance at a secret (a DNS
server's X-API-Key read from a webhook's secret file, say), so:

- only admins create, change or read the objects' locations (``sees_locations``);
- every other answer shows the object with its locations ``redacted``: object reads by
  operators and viewers, and, for every role, audit entries (viewers read them, and they go
  out as ``ipam.audit`` event bodies to receivers outside the box) and outbox payloads;
- text others can read (an outbox row's ``last_error``) never holds one: secret errors say what
  is wrong without where (``outbox.secrets.SecretError``), and ``scrub`` takes a known
  location out of a third party's message (a Kerberos library naming the keytab).

The rule is by field name, so a field added later and named like one is covered without a
change here; tests/unit/test_secret_locations.py checks every field of the OpenAPI document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "(redacted)"
# The one role that sees where secrets live (api/router.ROLES).
ROLE = "admin"
SUFFIXES = ("_ref", "_path")


def is_location(field: str) -> bool:
    """Does a field of that name hold where a secret lives?"""
    return field.endswith(SUFFIXES)


def sees_locations(role: str) -> bool:
    return role == ROLE


def redacted(value: Any) -> Any:
    """``value`` with every location field (at any depth) that is set replaced by REDACTED;
    a null stays null, so a reader still sees whether one is set."""
    if isinstance(value, dict):
        return {key: (REDACTED if item is not None and is_location(key) else redacted(item))
                for key, item in value.items()}
    if isinstance(value, list):
        return [redacted(item) for item in value]
    return value


def shown_to(role: str, value: Any) -> Any:
    """``value`` as the given role may read it."""
    return value if sees_locations(role) else redacted(value)


def _forms(location: str) -> list[str]:
    """The texts that would give a location away: the reference and what it points at."""
    scheme, sep, rest = location.partition(":")
    forms = [location]
    if sep and scheme in ("env", "file") and rest:
        forms.append(rest)
    return forms


def scrub(text: str, locations: Iterable[str | None]) -> str:
    """``text`` (a message someone else wrote) with the given locations taken out."""
    for location in locations:
        if not location:
            continue
        for form in sorted(_forms(location), key=len, reverse=True):
            if len(form) < 3:  # too short to find without mangling words
                continue
            text = re.sub(rf"(?<![\w/]){re.escape(form)}(?![\w])", REDACTED, text)
    return text
