"""Secret references: `env:NAME` or `file:/absolute/path` (docs/security.md, "Where secrets
live").

The reference is stored; the secret is read at delivery time on the node that delivers,
and is never stored, logged or returned. An error's message (an outbox row's last_error, read
by viewers) says what is wrong but neither the secret nor where it lives
(core/secret_locations); the full reason, naming the reference, goes to this node's log.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass
from typing import Literal

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_SECRET_BYTES = 4096
MAX_REF_LENGTH = 1024
log = logging.getLogger("ipamd.secrets")


class SecretError(Exception):
    """The secret cannot be used. ``str()`` is safe to show anyone (no location, no secret);
    ``detail`` names the reference, for the server log only."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"the secret could not be read: {reason} (see the server log)")
        self.detail = detail


@dataclass(frozen=True)
class SecretRef:
    kind: Literal["env", "file"]
    name: str  # variable name or absolute path

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def parse_ref(value: str) -> SecretRef:
    """Check the reference's syntax; ValueError with a message for the API otherwise."""
    if len(value) > MAX_REF_LENGTH:
        raise ValueError(f"at most {MAX_REF_LENGTH} characters")
    scheme, sep, rest = value.partition(":")
    if not sep or scheme not in ("env", "file"):
        raise ValueError("must be env:<VARIABLE_NAME> or file:<absolute_path> (never the secret)")
    if scheme == "env":
        if not _ENV_NAME.match(rest):
            raise ValueError("env: needs a variable name of letters, digits and underscores")
        return SecretRef("env", rest)
    if not rest.startswith("/"):
        raise ValueError("file: needs an absolute path")
    if "\x00" in rest or any(ord(ch) < 0x20 for ch in rest):
        raise ValueError("file: path contains control characters")
    if any(part == ".." for part in rest.split("/")):
        raise ValueError("file: path must not contain '..'")
    return SecretRef("file", rest)


def _read_file(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SecretError("its file does not exist on this node",
                          f"secret file {path} does not exist") from None
    except PermissionError:
        raise SecretError("its file cannot be read by the ipamd user",
                          f"secret file {path} cannot be read by the ipamd user") from None
    except OSError as error:
        raise SecretError(f"its file cannot be opened: {error.strerror}",
                          f"secret file {path} cannot be opened: {error.strerror}") from None
    try:
        # fstat the opened file, not the path: no window for a swap between check and read.
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SecretError("its file is not a regular file",
                              f"secret file {path} is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            must = f"has mode {mode:04o}; it must be 0600 (readable by its owner only)"
            raise SecretError(f"its file {must}", f"secret file {path} {must}")
        data = os.read(fd, MAX_SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_BYTES:
        too_big = f"is larger than {MAX_SECRET_BYTES} bytes"
        raise SecretError(f"its file {too_big}", f"secret file {path} {too_big}")
    return data


def resolve(ref: str | SecretRef) -> bytes:
    """The secret's bytes. A file's trailing newline (echo secret > file) is not part of it."""
    try:
        return _resolve(ref if isinstance(ref, SecretRef) else _parse_or_fail(ref))
    except SecretError as error:
        log.warning("a secret cannot be used: %s", error.detail)
        raise


def _resolve(parsed: SecretRef) -> bytes:
    if parsed.kind == "env":
        value = os.environ.get(parsed.name)
        if value is None:
            raise SecretError("its environment variable is not set on this node",
                              f"environment variable {parsed.name} is not set on this node")
        secret = value.encode()
    else:
        secret = _read_file(parsed.name).rstrip(b"\r\n")
    if not secret:
        raise SecretError("it is empty", f"secret {parsed} is empty")
    return secret


def _parse_or_fail(ref: str) -> SecretRef:
    try:
        return parse_ref(ref)
    except ValueError as error:
        raise SecretError("its reference is not usable",
                          f"secret_ref {ref!r} is not usable: {error}") from None
