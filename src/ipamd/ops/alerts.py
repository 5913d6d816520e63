"""Alert rules, their evaluation and the alert history (asyncio-side units + the evaluator).

An alert opens when its value reaches the rule's threshold and clears only when the value
falls below the clear threshold (hysteresis), so a value hovering at the edge does not flap.
Each open and each clear is one transaction: the alerts row, an audit entry, and an
``alert.opened`` / ``alert.cleared`` event that the outbox fans out to every enabled alert
destination (migration 0007).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from ipamd.core import audit, jsonutil
from ipamd.core.errors import invalid
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp.options import REASONS as MALFORMED_REASONS
from ipamd.ipam import license as ipam_license
from ipamd.ops import figures, nodes
from ipamd.state import AppState

log = logging.getLogger("ipamd.ops.alerts")

ALERT_LOCK = 0x1BA3F  # one evaluator at a time across nodes (MIGRATION_LOCK is 0x1BA3D)
SETTINGS_KEY = "alert_rules"
ACTOR = "system:alerts"
# Drops that say something is wrong on the wire: an unlisted relay, or packets that do not
# parse (the parser's reasons).
ALARMING_DROPS = frozenset({"untrusted_relay", *MALFORMED_REASONS})

# The thresholds an admin may change (PUT /settings/alert-rules); name → (default, low, high).
RULES: dict[str, tuple[float, float, float]] = {
    "utilisation_percent": (90.0, 1.0, 100.0),
    "utilisation_clear_percent": (85.0, 0.0, 100.0),
    "license_percent": (90.0, 1.0, 100.0),
    "license_clear_percent": (85.0, 0.0, 100.0),
    "outbox_backlog_seconds": (600.0, 10.0, 86_400.0),
    "outbox_failed_hours": (24.0, 1.0, 24.0 * 30),
    "drops_per_minute": (60.0, 1.0, 1e9),
    "drops_clear_per_minute": (30.0, 0.0, 1e9),
    "no_address_quiet_seconds": (600.0, 10.0, 86_400.0),
    # The ping check (docs/api-ipam.md): this many addresses of a subnet answering within
    # the window is a recurring conflict (hosts on the network that IPAM does not know).
    "ping_conflicts": (2.0, 1.0, 1e6),
    "ping_conflict_window_seconds": (3600.0, 60.0, 604_800.0),
}
DEFAULTS = {name: spec[0] for name, spec in RULES.items()}


def check_rules(values: dict[str, Any]) -> dict[str, float]:
    """A complete, consistent rule set from a partial one (unknown names refused)."""
    merged = dict(DEFAULTS)
    for name, value in values.items():
        if name not in RULES:
            raise invalid(name, f"unknown rule; known: {', '.join(RULES)}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise invalid(name, "must be a number")
        low, high = RULES[name][1], RULES[name][2]
        if not low <= value <= high:
            raise invalid(name, f"must be between {low:g} and {high:g}")
        merged[name] = float(value)
    for opener, clearer in (("utilisation_percent", "utilisation_clear_percent"),
                            ("license_percent", "license_clear_percent"),
                            ("drops_per_minute", "drops_clear_per_minute")):
        if merged[clearer] >= merged[opener]:
            raise invalid(clearer, f"must be below {opener} (hysteresis)")
    return merged


async def get_rules(conn: asyncpg.Connection) -> dict[str, float]:
    raw = await conn.fetchval("SELECT value FROM settings WHERE key = $1", SETTINGS_KEY)
    stored = json.loads(raw) if isinstance(raw, str) else (raw or {})
    return {**DEFAULTS, **{k: float(v) for k, v in stored.items() if k in RULES}}


async def set_rules(conn: asyncpg.Connection, actor: str, values: dict[str, Any]
                    ) -> dict[str, float]:
    before = await get_rules(conn)
    after = check_rules({**before, **values})
    await conn.execute(
        """INSERT INTO settings (key, value) VALUES ($1, $2::jsonb)
           ON CONFLICT (key) DO UPDATE SET value = $2::jsonb, updated_at = now()""",
        SETTINGS_KEY, after,
    )
    await audit.record(conn, actor, "update", "alert_rules", SETTINGS_KEY, before, after)
    return after


@dataclass(frozen=True)
class Check:
    """One rule judged for one subject now."""

    rule: str
    subject: str
    severity: str
    summary: str
    value: float
    threshold: float  # opens at or above
    clear_below: float  # an open alert clears below this


@dataclass
class Memory:
    """What the evaluator needs from its previous tick (rates, recent refusals)."""

    drops: dict[str, tuple[float, int]] = field(default_factory=dict)  # node → (time, total)
    refused: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, subnet) → n
    refused_at: dict[str, float] = field(default_factory=dict)  # subnet → last rise
    conflicts: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, subnet) → n
    conflict_at: dict[str, list[float]] = field(default_factory=dict)  # subnet → when each


def _node_checks(rows: list[dict[str, Any]], rules: dict[str, float], memory: Memory,
                 now: float) -> list[Check]:
    checks = []
    for n in rows:
        down = 1.0 if n["status"] == "down" else 0.0
        checks.append(Check("node_down", n["name"], "critical",
                            f"node {n['name']} is down (last seen {n['last_seen_at']:%H:%M:%S})",
                            down, 1.0, 1.0))
        snap = n["dhcp"] or {}
        if n["status"] != "up" or not snap:
            continue
        total = sum(v for k, v in snap.get("drops", {}).items() if k in ALARMING_DROPS)
        before = memory.drops.get(n["name"])
        memory.drops[n["name"]] = (now, total)
        if before is not None and now > before[0]:
            delta = total - before[1] if total >= before[1] else total  # restarted: from 0
            rate = delta * 60.0 / (now - before[0])
            checks.append(Check(
                "dhcp_drops", n["name"], "warning",
                f"node {n['name']} drops {rate:.0f} packets/min (untrusted relay, malformed)",
                round(rate, 2), rules["drops_per_minute"], rules["drops_clear_per_minute"]))
        for subnet, count in snap.get("refused_by_subnet", {}).items():
            key = (n["name"], subnet)
            seen = memory.refused.get(key)
            memory.refused[key] = count
            # A node seen for the first time brings counts from before: not a rise.
            if count != (seen if seen is not None else 0 if before is not None else count):
                memory.refused_at[subnet] = now
        _conflict_rises(n["name"], snap, memory, now, first=before is None)
    return checks


# Rises counted per tick at most: the window's list stays bounded.
_MAX_RISE = 1000


def _conflict_rises(node: str, snap: dict[str, Any], memory: Memory, now: float,
                    first: bool) -> None:
    """Note when the node's ping check conflicts rose, per subnet (a node seen for the first
    time brings counts from before: not a rise)."""
    for subnet, count in snap.get("ping_conflicts_by_subnet", {}).items():
        key = (node, subnet)
        seen = memory.conflicts.get(key)
        memory.conflicts[key] = count
        rise = count - seen if seen is not None and count >= seen else 0 if first else count
        if rise > 0:
            memory.conflict_at.setdefault(subnet, []).extend([now] * min(rise, _MAX_RISE))


def _conflict_checks(rules: dict[str, float], memory: Memory, cidrs: dict[str, str],
                     now: float) -> list[Check]:
    """One check per subnet with ping check conflicts in the window; it clears at none."""
    window = rules["ping_conflict_window_seconds"]
    checks = []
    for subnet, times in list(memory.conflict_at.items()):
        recent = [t for t in times if now - t < window][-_MAX_RISE:]
        checks.append(Check(
            "ping_conflict", subnet, "warning",
            f"subnet {cidrs.get(subnet, subnet)}: {len(recent)} addresses answered the ping "
            f"check before an Offer in the last {window:g} s (hosts IPAM does not know)",
            float(len(recent)), rules["ping_conflicts"], 1.0))
        if recent:
            memory.conflict_at[subnet] = recent
        else:
            memory.conflict_at.pop(subnet)
    return checks


async def _checks(conn: asyncpg.Connection, rules: dict[str, float], cap: ipam_license.Entitlement,
                  down_seconds: float, memory: Memory, now: float) -> list[Check]:
    util_open, util_clear = rules["utilisation_percent"], rules["utilisation_clear_percent"]
    pools = await figures.pool_use(conn)
    subnets = await figures.subnet_utilisation(conn)
    checks = [Check("pool_utilisation", str(p["pool_id"]), "warning",
                    f"pool {p['name']} in {p['cidr']} is {p['percent_used']:g}% in use "
                    f"({p['used']} of {p['size']})", p["percent_used"], util_open, util_clear)
              for p in pools]
    checks += [Check("subnet_utilisation", str(s["subnet_id"]), "warning",
                     f"subnet {s['cidr']} is {s['percent_used']:g}% utilised "
                     f"({s['used']} of {s['size']})", s["percent_used"], util_open, util_clear)
               for s in subnets]
    lic = await ipam_license.status(conn, cap)
    if cap.cap:
        pct = round(100.0 * lic["managed_ips"] / cap.cap, 2)
        checks.append(Check("license", "managed_ips", "warning",
                            f"license: {lic['managed_ips']} of {cap.cap} managed IPs in use",
                            pct, rules["license_percent"], rules["license_clear_percent"]))
    rows = await conn.fetch(
        """SELECT kind,
                  count(*) FILTER (WHERE state = 'failed'
                                   AND updated_at > now() - make_interval(hours => $1)) AS failed,
                  coalesce(extract(epoch FROM now() - min(created_at)
                                   FILTER (WHERE state IN ('pending', 'retrying'))), 0) AS age
           FROM outbox GROUP BY kind""",
        int(rules["outbox_failed_hours"]),
    )
    for r in rows:
        kind = r["kind"]
        # DNS deliveries have a rule of their own name: the operator looks in Work → DNS.
        rule = "dns_delivery_failed" if kind == "dns" else "outbox_failed"
        checks.append(Check(rule, kind, "warning",
                            f"{r['failed']} {kind} deliveries failed in the last "
                            f"{rules['outbox_failed_hours']:g} h", float(r["failed"]), 1.0, 1.0))
        checks.append(Check("outbox_backlog", kind, "warning",
                            f"the oldest queued {kind} delivery waits {float(r['age']):.0f} s",
                            round(float(r["age"]), 1), rules["outbox_backlog_seconds"],
                            rules["outbox_backlog_seconds"]))
    node_rows = await nodes.list_all(conn, down_seconds)
    checks += _node_checks(node_rows, rules, memory, now)
    quiet = rules["no_address_quiet_seconds"]
    cidrs = {str(s["subnet_id"]): s["cidr"] for s in subnets}
    for subnet, at in list(memory.refused_at.items()):
        recent = 1.0 if now - at < quiet else 0.0
        checks.append(Check("no_address", subnet, "critical",
                            f"subnet {cidrs.get(subnet, subnet)} refused clients: no free "
                            "address", recent, 1.0, 1.0))
        if not recent:
            memory.refused_at.pop(subnet)
    return checks + _conflict_checks(rules, memory, cidrs, now)


def alert_out(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["status"] = "open" if out["cleared_at"] is None else "cleared"
    return out


_OPEN = """INSERT INTO alerts (rule, subject, severity, summary, value, threshold)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (rule, subject) WHERE cleared_at IS NULL DO NOTHING RETURNING *"""
_CLEAR = """UPDATE alerts SET cleared_at = now(), updated_at = now(), value = $2
            WHERE id = $1 AND cleared_at IS NULL RETURNING *"""
_EVENT = "INSERT INTO events (topic, payload) VALUES ($1, $2::jsonb)"


async def _announce(conn: asyncpg.Connection, row: asyncpg.Record, action: str) -> None:
    alert = alert_out(row)
    plain = jsonutil.plain(alert)
    await audit.record(conn, ACTOR, action, "alert", alert["id"], None, plain)
    await conn.execute(_EVENT, f"alert.{'opened' if action == 'open' else 'cleared'}",
                       plain)


async def evaluate(conn: asyncpg.Connection, cap: ipam_license.Entitlement, down_seconds: float,
                   memory: Memory, now: float) -> tuple[int, int] | None:
    """Judge every rule; open and clear alerts. None when another node is evaluating."""
    if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", ALERT_LOCK):
        return None
    rules = await get_rules(conn)
    checks = await _checks(conn, rules, cap, down_seconds, memory, now)
    open_rows = {(r["rule"], r["subject"]): r for r in await conn.fetch(
        "SELECT * FROM alerts WHERE cleared_at IS NULL")}
    opened = cleared = 0
    judged = set()
    for c in checks:
        key = (c.rule, c.subject)
        judged.add(key)
        current = open_rows.get(key)
        if current is None and c.value >= c.threshold:
            row = await conn.fetchrow(_OPEN, c.rule, c.subject, c.severity, c.summary, c.value,
                                      c.threshold)
            if row is not None:
                await _announce(conn, row, "open")
                opened += 1
        elif current is not None and c.value < c.clear_below:
            row = await conn.fetchrow(_CLEAR, current["id"], c.value)
            if row is not None:
                await _announce(conn, row, "clear")
                cleared += 1
    for key, current in open_rows.items():
        if key not in judged:  # the subject is gone (pool deleted, node retired): clear
            row = await conn.fetchrow(_CLEAR, current["id"], None)
            if row is not None:
                await _announce(conn, row, "clear")
                cleared += 1
    return opened, cleared


async def list_page(conn: asyncpg.Connection, status: str | None, before: uuid.UUID | None,
                    limit: int) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT * FROM alerts
           WHERE ($1::text IS NULL OR ($1 = 'open') = (cleared_at IS NULL))
             AND ($2::uuid IS NULL OR id < $2)
           ORDER BY id DESC LIMIT $3""",
        status, before, limit + 1,
    )
    return [alert_out(r) for r in rows]


async def open_alerts(conn: asyncpg.Connection, limit: int = 100) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT * FROM alerts WHERE cleared_at IS NULL ORDER BY id DESC LIMIT $1", limit)
    return [alert_out(r) for r in rows]


class Evaluator:
    def __init__(self, state: AppState) -> None:
        self.state = state
        self.memory = Memory()
        self._log = Throttle(log)

    async def tick(self) -> None:
        config = self.state.config
        cap = ipam_license.Entitlement(config.license.tier, config.license.max_managed_ips)
        try:
            result = await self.state.db.transaction(
                evaluate, cap, config.ops.node_down_seconds, self.memory, time.monotonic())
        except DB_ERRORS as error:
            log_failure(self._log, error, "alert evaluation failed: %s", error)
            return
        if result and any(result):
            log.info("alerts: %d opened, %d cleared", *result)
