"""The one configuration file, as a pydantic model.

This module is the only place settings are read. Every key is documented in
config/ipamd.toml; an unknown key or a wrong type stops start-up with a message
that names the key (``ConfigError``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

ENV_CONFIG = "IPAMD_CONFIG"


class ConfigError(Exception):
    """The configuration file cannot be used; the message names the key."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _check_listen(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port")
    ipaddress.ip_address(host.strip("[]"))
    return value


Listen = Annotated[str, Field(min_length=3)]


class ApiConfig(Section):
    public_listen: list[Listen] = ["0.0.0.0:8443"]
    public_enabled: bool = True
    tls_cert: str = ""
    tls_key: str = ""
    loopback_listen: Listen = "127.0.0.1:8080"
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    idempotency_ttl_seconds: int = Field(default=86_400, ge=60)
    graceful_timeout_seconds: float = Field(default=3.0, ge=0, le=30)
    console_enabled: bool = True
    # Before the first token: Host names besides loopback ones and the host name (auth.py).
    bootstrap_host_names: list[Annotated[str, Field(min_length=1, max_length=253)]] = []
    # Processes serving the API: that many worker processes on the same sockets; 0 = one per
    # CPU core (see worker_count). With 1 and no DHCP server, the main process itself
    # (runtime.api_in_main_process).
    workers: int = Field(default=0, ge=0, le=64)
    # Connection caps, each API process's own (api/conncap.py): per client address and in
    # all; a connection past either is closed at once.
    max_connections_per_address: int = Field(default=64, ge=1, le=100_000)
    max_connections_per_worker: int = Field(default=1024, ge=1, le=100_000)
    # Deadlines: a TLS handshake; an idle connection (between requests, and for a request's
    # whole head).
    tls_handshake_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    idle_timeout_seconds: float = Field(default=30.0, gt=0, le=300)

    @property
    def worker_count(self) -> int:
        return self.workers or max(1, os.cpu_count() or 1)

    @field_validator("public_listen")
    @classmethod
    def _public(cls, value: list[str]) -> list[str]:
        return [_check_listen(v) for v in value]

    @model_validator(mode="after")
    def _tls_pair(self) -> ApiConfig:
        # Half a pair would silently serve the self-signed certificate instead.
        if bool(self.tls_cert) != bool(self.tls_key):
            missing = "tls_key" if self.tls_cert else "tls_cert"
            raise ValueError(f"tls_cert and tls_key go together: {missing} is empty")
        return self

    @field_validator("loopback_listen")
    @classmethod
    def _loopback(cls, value: str) -> str:
        _check_listen(value)
        if not ipaddress.ip_address(value.rpartition(":")[0].strip("[]")).is_loopback:
            raise ValueError("must be a loopback address (the host's own plain-HTTP face)")
        return value


class DatabaseConfig(Section):
    dsn: str = Field(default="", repr=False)  # may hold a password: see redacted()
    data_dir: str = "var/pgdata"
    socket_dir: str = "var/run"
    bin_dir: str = ""
    name: str = "ipamd"
    user: str = "ipamd"
    pool_min: int = Field(default=2, ge=1, le=100)
    pool_max: int = Field(default=10, ge=1, le=200)
    connect_timeout_seconds: float = Field(default=60.0, gt=0)
    durable: bool = True

    @property
    def bundled(self) -> bool:
        return not self.dsn


class DhcpConfig(Section):
    enabled: bool = True
    listen: list[Listen] = ["0.0.0.0:67"]
    reply_port: int = Field(default=67, ge=1, le=65535)
    client_port: int = Field(default=68, ge=1, le=65535)
    server_id: str = ""
    trusted_relays: list[str] = []
    interfaces: list[str] = []
    offer_hold_seconds: int = Field(default=30, ge=1, le=3600)
    ping_recheck_seconds: int = Field(default=3600, ge=0, le=604_800)
    ping_max_outstanding: int = Field(default=4096, ge=1, le=16_384)
    decline_probation_seconds: int = Field(default=86_400, ge=0)
    expiry_interval_seconds: float = Field(default=5.0, gt=0)
    expiry_batch: int = Field(default=1000, ge=1, le=100_000)
    commit_batch_max: int = Field(default=256, ge=1, le=10_000)
    commit_window_us: int = Field(default=0, ge=0, le=100_000)
    commit_workers: int = Field(default=2, ge=1, le=16)
    overload_wait_ms: int = Field(default=200, ge=1, le=60_000)
    stale_wait_ms: int = Field(default=2000, ge=1, le=60_000)
    plan_refresh_seconds: float = Field(default=300.0, gt=0)
    lease_resync_seconds: float = Field(default=600.0, ge=0)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: list[str]) -> list[str]:
        return [_check_listen(v) for v in value]

    @field_validator("trusted_relays")
    @classmethod
    def _relays(cls, value: list[str]) -> list[str]:
        for item in value:
            ipaddress.ip_network(item, strict=False)
        return value

    @field_validator("server_id")
    @classmethod
    def _server_id(cls, value: str) -> str:
        if value:
            ipaddress.IPv4Address(value)
        return value


class Dhcp6Config(Section):
    """The DHCPv6 server (dhcp6/server.py): relay-served, RFC 8415; lifetimes from the subnet."""

    enabled: bool = False
    listen: list[Listen] = ["[::]:547"]
    # Where Relay-replies go on the relay: RFC 8415 §7.2 says port 547; 0 = back to the port
    # the Relay-forward came from.
    reply_port: int = Field(default=547, ge=0, le=65535)
    trusted_relays: list[str] = []
    # Directly attached links: clients multicasting to ff02::1:2 on these interfaces.
    interfaces: list[Annotated[str, Field(min_length=1, max_length=15)]] = []
    rapid_commit: bool = True
    decline_probation_seconds: int = Field(default=86_400, ge=0)
    commit_batch_max: int = Field(default=256, ge=1, le=10_000)
    commit_window_us: int = Field(default=0, ge=0, le=100_000)
    commit_workers: int = Field(default=1, ge=1, le=16)
    overload_wait_ms: int = Field(default=200, ge=1, le=60_000)
    stale_wait_ms: int = Field(default=2000, ge=1, le=60_000)
    lease_resync_seconds: float = Field(default=600.0, ge=0)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_listen(item)
            if ipaddress.ip_address(item.rpartition(":")[0].strip("[]")).version != 6:
                raise ValueError(f"{item!r}: DHCPv6 listens on an IPv6 address ([::]:547)")
        return value

    @field_validator("trusted_relays")
    @classmethod
    def _relays(cls, value: list[str]) -> list[str]:
        for item in value:
            if ipaddress.ip_network(item, strict=False).version != 6:
                raise ValueError(f"{item!r} is not an IPv6 address or network")
        return value


class DnsConfig(Section):
    """The embedded authoritative DNS server (zones of DNS servers with adapter embedded)."""

    enabled: bool = False
    listen: list[Listen] = ["0.0.0.0:53"]
    ns_name: str = "ns1.ipamd.invalid"
    hostmaster: str = "hostmaster.ipamd.invalid"
    secondaries: list[Listen] = []
    refresh_seconds: float = Field(default=30.0, gt=0)
    tcp_idle_seconds: float = Field(default=10.0, gt=0)
    tcp_connections_max: int = Field(default=64, ge=1, le=10_000)

    @field_validator("listen", "secondaries")
    @classmethod
    def _listen(cls, value: list[str]) -> list[str]:
        return [_check_listen(v) for v in value]


class OutboxConfig(Section):
    enabled: bool = True
    workers: int = Field(default=16, ge=1, le=256)
    max_attempts: int = Field(default=12, ge=1, le=100)
    backoff_base_seconds: float = Field(default=10.0, gt=0)
    backoff_multiplier: float = Field(default=3.0, ge=1.0, le=10.0)
    backoff_max_seconds: float = Field(default=18_000.0, gt=0)
    backoff_jitter: float = Field(default=0.2, ge=0.0, lt=1.0)
    request_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    claim_timeout_seconds: float = Field(default=60.0, gt=0)
    poll_interval_seconds: float = Field(default=5.0, gt=0)
    ca_file: str = ""
    max_response_bytes: int = Field(default=65_536, ge=0)
    hosts_file: str = ""
    retention_days: int = Field(default=30, ge=1)
    dns_delivery_nice: int = Field(default=10, ge=0, le=19)
    dns_storm_updates_per_second: float = Field(default=5.0, ge=0, le=10_000)

    @model_validator(mode="after")
    def _claim_outlives_request(self) -> OutboxConfig:
        # A claim that expires while its request may still run would deliver twice.
        if self.claim_timeout_seconds <= self.request_timeout_seconds:
            raise ValueError("claim_timeout_seconds must exceed request_timeout_seconds")
        return self


class LimitsConfig(Section):
    requests_per_minute: int = Field(default=300, ge=1)
    token_creations_per_minute: int = Field(default=10, ge=1)
    page_default: int = Field(default=50, ge=1)
    page_max: int = Field(default=1000, ge=1)


class LicenseConfig(Section):
    tier: str = "community"
    max_managed_ips: int = Field(default=1000, ge=0)


class AuditConfig(Section):
    retention_days: int = Field(default=365, ge=1)
    sweep_interval_seconds: float = Field(default=3600.0, gt=0)


class HistoryConfig(Section):
    retention_days: int = Field(default=365, ge=1)
    sweep_interval_seconds: float = Field(default=3600.0, gt=0)


class OpsConfig(Section):
    """Node heartbeats, the alert evaluator and the pool use sampler (ops room)."""

    enabled: bool = True
    heartbeat_seconds: float = Field(default=10.0, gt=0, le=3600)
    node_down_seconds: float = Field(default=60.0, gt=0)
    alert_interval_seconds: float = Field(default=30.0, gt=0, le=3600)
    pool_sample_seconds: float = Field(default=60.0, ge=1, le=3600)
    pool_sample_retention_days: int = Field(default=7, ge=1, le=366)

    @model_validator(mode="after")
    def _down_outlives_heartbeat(self) -> OpsConfig:
        # A node must miss more than one heartbeat before it is called down.
        if self.node_down_seconds <= self.heartbeat_seconds:
            raise ValueError("node_down_seconds must exceed heartbeat_seconds")
        return self


class LoggingConfig(Section):
    level: str = "INFO"
    access_log: bool = True

    @field_validator("level")
    @classmethod
    def _level(cls, value: str) -> str:
        if value.upper() not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("one of DEBUG, INFO, WARNING, ERROR")
        return value.upper()


class Config(Section):
    state_dir: str = "var"
    node_name: str = ""
    api: ApiConfig = ApiConfig()
    database: DatabaseConfig = DatabaseConfig()
    dhcp: DhcpConfig = DhcpConfig()
    dhcp6: Dhcp6Config = Dhcp6Config()
    outbox: OutboxConfig = OutboxConfig()
    dns: DnsConfig = DnsConfig()
    limits: LimitsConfig = LimitsConfig()
    license: LicenseConfig = LicenseConfig()
    audit: AuditConfig = AuditConfig()
    history: HistoryConfig = HistoryConfig()
    ops: OpsConfig = OpsConfig()
    logging: LoggingConfig = LoggingConfig()

    def path(self, value: str) -> Path:
        """A configured path; relative ones are taken from the working directory."""
        return Path(value).expanduser().resolve()


REDACTED = "***"
# Keys whose whole value is a secret (today none is configured; a future one is covered).
_SECRET_KEY = re.compile(r"(^|_)(password|passphrase|secret|token|api_key)$", re.I)
# libpq DSNs: postgresql://user:PASSWORD@host/db?password=PASSWORD, or password=PASSWORD ...
# Greedy up to the last '@': an unencoded '@' in the password must not leak its tail.
_URL_PASSWORD = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/@?#]*:).*(@)", re.I | re.S)
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&#]*", re.I)
_KV_PASSWORD = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)", re.I)


def redact_dsn(dsn: str) -> str:
    """The DSN with every password replaced by ***, in URL and key=value form."""
    if "://" in dsn:
        dsn = _URL_PASSWORD.sub(r"\1" + REDACTED + r"\2", dsn)
        return _QUERY_PASSWORD.sub(r"\1" + REDACTED, dsn)
    return _KV_PASSWORD.sub(r"\1" + REDACTED, dsn)


def redacted(config: Config) -> dict[str, Any]:
    """The configuration as data with secrets replaced: the ONE form in which it is shown.

    Everything that prints or logs the configuration goes through here (check-config).
    """

    def scrub(value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v, key) for v in value]
        if isinstance(value, str) and value and _SECRET_KEY.search(key):
            return REDACTED
        if key == "dsn" and isinstance(value, str):
            return redact_dsn(value)
        return value

    shown: dict[str, Any] = scrub(config.model_dump(mode="json"), "")
    return shown


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {key!r}")
        else:
            lines.append(f"key {key!r}: {item['msg']}")
    return "; ".join(lines)


def parse(data: dict[str, Any]) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def load(path: str | os.PathLike[str] | None = None) -> Config:
    """Load the TOML file named by ``path`` or $IPAMD_CONFIG; defaults when neither is set."""
    chosen = path or os.environ.get(ENV_CONFIG)
    if not chosen:
        return Config()
    try:
        with open(chosen, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {chosen} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{chosen}: not valid TOML: {error}") from None
    try:
        return parse(data)
    except ConfigError as error:
        raise ConfigError(f"{chosen}: {error}") from None
