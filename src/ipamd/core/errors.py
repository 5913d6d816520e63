"""Domain errors: what the domain rooms raise when a request cannot be done.

They say what went wrong in the domain's terms; they know nothing of HTTP. The API turns
each into the error envelope in one place (``ipamd.api.errors.from_domain``)::

    DomainError            every refusal; ``message`` is shown to the caller as is
    ├── BadRequest         the request itself is malformed (a query value, a cursor)  → 400
    ├── LicenseLimit       the licensed number of managed IPs would be exceeded        → 402
    ├── NotFound           the object named does not exist (or no longer does)        → 404
    ├── Conflict           refused by the current state: overlaps, duplicates, a row
    │                      in the wrong state, a concurrent change                     → 409
    └── Invalid            a field's value breaks a rule; ``field`` names it and the
                           message starts with it ("cidr: must be an IPv4 network")   → 422

Messages name the field they are about. The small constructors below (``not_found``,
``conflict``, ``invalid``, ``bad_request``) keep the wording uniform.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of every refusal the domain rooms raise."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(DomainError):
    """The request is malformed (a query parameter, a cursor), not merely refused."""


class LicenseLimit(DomainError):
    """The change would exceed the licensed number of managed IPs."""


class NotFound(DomainError):
    """The object named does not exist."""


class Conflict(DomainError):
    """The current state refuses the change (overlap, duplicate, wrong state, a race)."""


class Invalid(DomainError):
    """A field's value breaks a rule; the message is ``"<field>: <what is wrong>"``.

    ``field`` is empty only when no single field is to blame (the message stands alone).
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


def bad_request(message: str) -> BadRequest:
    return BadRequest(message)


def not_found(what: str, ident: str) -> NotFound:
    return NotFound(f"{what} {ident} does not exist")


def conflict(message: str) -> Conflict:
    return Conflict(message)


def invalid(field: str, message: str) -> Invalid:
    return Invalid(field, message)
