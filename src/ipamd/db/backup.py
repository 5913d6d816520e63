"""`ipamd backup FILE` / `ipamd restore FILE`: one archive, restored all or nothing.

The archive is a tar file (mode 0600) holding ``manifest.json`` (format, ipamd version,
schema version, node, created time, the dump's SHA-256), ``ipamd.dump`` (``pg_dump
--format=custom``) and, when the appliance has one, the TLS pair under ``tls/``.

Restore is one psql transaction: drop the public schema, replay the dump; any error rolls
everything back, so the database is either the old one or the backup, never a mix. The TLS
pair is written beside its final place first and renamed only after the commit. A backup
from a newer schema than this ipamd knows is refused before anything is touched.

Plain subprocesses of the PostgreSQL client tools (the same major version as the bundled
server); the password of an external DSN goes to them in PGPASSWORD, never in argv.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

FORMAT = 1
MANIFEST, DUMP = "manifest.json", "ipamd.dump"
TLS_FILES = ("cert.pem", "key.pem")
_MEMBERS = {MANIFEST, DUMP} | {f"tls/{name}" for name in TLS_FILES}
_KEYWORD_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


class BackupError(Exception):
    """A backup or restore that could not be done; the message says why and what to do."""


@dataclass(frozen=True)
class Manifest:
    format: int
    ipamd_version: str
    schema_version: int
    node: str
    created_at: str
    dump_sha256: str
    tls: bool

    @classmethod
    def parse(cls, raw: bytes) -> Manifest:
        try:
            data = json.loads(raw)
            manifest = cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (ValueError, KeyError, TypeError) as error:
            raise BackupError(f"not an ipamd backup: bad manifest ({error})") from None
        if manifest.format != FORMAT:
            raise BackupError(
                f"backup format {manifest.format!r} is not known to this ipamd (knows {FORMAT})"
            )
        if not isinstance(manifest.schema_version, int):
            raise BackupError("not an ipamd backup: schema_version is not a number")
        return manifest


def libpq_target(dsn: str) -> tuple[str, dict[str, str]]:
    """(the DSN without its password, the environment that carries it) for the client tools."""
    env: dict[str, str] = {}
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password is not None:
            env["PGPASSWORD"] = unquote(parts.password)
            netloc = parts.netloc.rsplit("@", 1)
            user = netloc[0].split(":", 1)[0]
            parts = parts._replace(netloc=f"{user}@{netloc[1]}")
        query = [p for p in parts.query.split("&") if p and not p.startswith("password=")]
        for item in parts.query.split("&"):
            if item.startswith("password="):
                env["PGPASSWORD"] = unquote(item.split("=", 1)[1])
        return urlunsplit(parts._replace(query="&".join(query))), env
    match = _KEYWORD_PASSWORD.search(dsn)
    if match:
        value = match[1]
        if value.startswith("'"):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        env["PGPASSWORD"] = value
        dsn = (dsn[: match.start()] + dsn[match.end():]).strip()
    return dsn, env


def _run(argv: list[str], env: dict[str, str], what: str) -> str:
    result = subprocess.run(  # noqa: S603 - fixed argv of the PostgreSQL client tools
        argv, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise BackupError(f"{what} failed: " + " / ".join(detail))
    return result.stdout


def schema_version(dsn: str, bin_dir: Path) -> int:
    target, env = libpq_target(dsn)
    out = _run(
        [str(bin_dir / "psql"), "-X", "-At", "-d", target, "-c",
         "SELECT coalesce(max(version), 0) FROM schema_migrations"],
        env, "reading the schema version",
    )
    return int(out.strip())


def _member(data: bytes, name: str, mode: int = 0o600) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    return info, io.BytesIO(data)


def write(
    path: Path, *, dsn: str, bin_dir: Path, ipamd_version: str, node: str,
    tls_dir: Path | None,
) -> Manifest:
    """Dump the database and the TLS pair into ``path`` (mode 0600, replaced atomically)."""
    target, env = libpq_target(dsn)
    version = schema_version(dsn, bin_dir)
    tls = {}
    if tls_dir is not None and all((tls_dir / name).is_file() for name in TLS_FILES):
        tls = {name: (tls_dir / name).read_bytes() for name in TLS_FILES}
    path = path.absolute()
    with tempfile.TemporaryDirectory(prefix="ipamd-backup-") as work:
        dump = Path(work) / DUMP
        _run([str(bin_dir / "pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
              "--file", str(dump), "--dbname", target], env, "pg_dump")
        dumped = dump.read_bytes()
        manifest = Manifest(
            format=FORMAT, ipamd_version=ipamd_version, schema_version=version, node=node,
            created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            dump_sha256=hashlib.sha256(dumped).hexdigest(), tls=bool(tls),
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as handle:
                with tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    tar.addfile(*_member(
                        json.dumps(asdict(manifest), indent=2).encode() + b"\n", MANIFEST))
                    tar.addfile(*_member(dumped, DUMP))
                    for name, data in tls.items():
                        tar.addfile(*_member(data, f"tls/{name}"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return manifest


def read(path: Path, known_schema: int) -> tuple[Manifest, dict[str, bytes]]:
    """The manifest and members, checked: format, schema not newer, dump intact."""
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(path, mode="r:") as tar:
            for info in tar:
                if info.name not in _MEMBERS or not info.isfile():
                    raise BackupError(
                        f"{path}: unexpected entry {info.name!r}; not an ipamd backup")
                extracted = tar.extractfile(info)
                assert extracted is not None  # a regular file, checked above
                members[info.name] = extracted.read()
    except (OSError, tarfile.TarError) as error:
        raise BackupError(f"{path}: not a readable ipamd backup ({error})") from None
    if MANIFEST not in members or DUMP not in members:
        raise BackupError(f"{path}: not an ipamd backup (no {MANIFEST} or {DUMP})")
    manifest = Manifest.parse(members[MANIFEST])
    if manifest.schema_version > known_schema:
        raise BackupError(
            f"{path} holds schema version {manifest.schema_version} (ipamd "
            f"{manifest.ipamd_version}); this ipamd knows up to {known_schema}: install that "
            "ipamd version or newer, then restore. Nothing was changed."
        )
    if hashlib.sha256(members[DUMP]).hexdigest() != manifest.dump_sha256:
        raise BackupError(f"{path}: the database dump does not match its manifest (damaged)")
    return manifest, members


# Runs first, in the same transaction as the dump's replay.
_PRELUDE = """\
SET lock_timeout = '10s';
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
             AND pid <> pg_backend_pid() AND backend_type = 'client backend') THEN
    RAISE EXCEPTION 'other sessions are connected to this database: stop ipamd first '
                    '(supervisorctl stop ipamd)';
  END IF;
END $$;
DROP SCHEMA IF EXISTS public CASCADE;
CREATE SCHEMA public;
"""


def restore(
    path: Path, *, dsn: str, bin_dir: Path, known_schema: int, tls_dir: Path | None
) -> Manifest:
    """Replace the database (and the TLS pair) with the backup's, all or nothing."""
    manifest, members = read(path, known_schema)
    target, env = libpq_target(dsn)
    staged: list[tuple[Path, Path]] = []
    with tempfile.TemporaryDirectory(prefix="ipamd-restore-") as work:
        dump, script, prelude = (Path(work) / n for n in (DUMP, "restore.sql", "prelude.sql"))
        dump.write_bytes(members[DUMP])
        prelude.write_text(_PRELUDE)
        _run([str(bin_dir / "pg_restore"), "--no-owner", "--no-privileges",
              "--file", str(script), str(dump)], {}, "pg_restore (reading the dump)")
        try:
            if manifest.tls and tls_dir is not None:
                tls_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                owner = tls_dir.stat()
                for name in TLS_FILES:
                    final, temp = tls_dir / name, tls_dir / f".{name}.restore"
                    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    staged.append((temp, final))
                    with os.fdopen(fd, "wb") as handle:
                        if os.geteuid() == 0:  # root restoring: the service user keeps its key
                            os.fchown(handle.fileno(), owner.st_uid, owner.st_gid)
                        handle.write(members[f"tls/{name}"])
            _run([str(bin_dir / "psql"), "-X", "-q", "--single-transaction",
                  "-v", "ON_ERROR_STOP=1", "-d", target, "-f", str(prelude), "-f", str(script)],
                 env, "restore (rolled back, nothing changed)")
        except BaseException:
            for temp, _ in staged:
                temp.unlink(missing_ok=True)
            raise
    for temp, final in staged:
        os.replace(temp, final)
    return manifest
