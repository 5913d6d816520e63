"""Storm signals: is this node's DHCP server so busy that work which can wait should?

One class, ``Hysteresis``, built twice: ``dhcp_at_ceiling`` (the server is at its ceiling)
and ``lease_churn`` (it commits lease changes fast, below the ceiling). Each consumer gets
an instance of its own, since a sample is the change since that consumer's last look.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from ipamd.state import AppState, DhcpControl

# A DHCP server's running totals that a signal watches (seconds, or lease changes).
Figures = Callable[[DhcpControl], Sequence[float]]

# Lease changes a second that make a storm below the ceiling, for what waits one out.
# Full garbage collections: each walks the whole lease cache (lease_churn's docstring).
GC_CHURN_PER_SECOND = 500.0
# The lease journal's deriver: it costs PostgreSQL 35-40 µs of CPU a change, as much as the
# change's own commit, so from this rate on it would take a tenth of a core from the storm's
# clients. In lab runs at 9,000 DORA/s, still under the ceiling, it ran through the storm in
# 50 ms rounds and took a third of the database's CPU (2026-11-29).
DERIVE_CHURN_PER_SECOND = 2_000.0
IDLE_AFTER_SECONDS = 1.0


def running_dhcp(state: AppState) -> list[DhcpControl]:
    """This node's running DHCP servers: DHCPv4's and DHCPv6's, either or both."""
    return [server for server in (state.dhcp, state.dhcp6) if server is not None]


class Hysteresis:
    """Busy once the fastest-growing of ``figures`` (summed over the running DHCP servers:
    they share this process and the database) grew at ``busy_above`` a second or more since
    the last look; idle again only after ``idle_after`` seconds below ``idle_below``, so a
    storm's short lulls do not let the held-back work in. A server starting or stopping is
    no storm: its totals so far are not a change since the last look."""

    def __init__(self, state: AppState, figures: Figures, *, busy_above: float,
                 idle_below: float, idle_after: float = IDLE_AFTER_SECONDS) -> None:
        self.state = state
        self.figures = figures
        self.busy_above, self.idle_below, self.idle_after = busy_above, idle_below, idle_after
        self.busy = False
        # (time, the totals, how many servers gave them)
        self._last: tuple[float, tuple[float, ...], int] | None = None
        self._calm_since: float | None = None

    def __call__(self) -> bool:
        servers, now = running_dhcp(self.state), trio.current_time()
        if not servers:
            self._last, self.busy, self._calm_since = None, False, None
            return False
        totals = tuple(map(sum, zip(*(self.figures(server) for server in servers),
                                    strict=True)))
        last, self._last = self._last, (now, totals, len(servers))
        if last is None or now <= last[0] or last[2] != len(servers):
            return self.busy
        rate = max(b - a for a, b in zip(last[1], totals, strict=True)) / (now - last[0])
        self._judge(rate, now)
        return self.busy

    def _judge(self, rate: float, now: float) -> None:
        if rate >= self.busy_above:
            self.busy, self._calm_since = True, None
        elif self.busy and rate < self.idle_below:
            self._calm_since = self._calm_since or now
            if now - self._calm_since >= self.idle_after:
                self.busy, self._calm_since = False, None
        else:
            self._calm_since = None


def _ceiling_figures(server: DhcpControl) -> tuple[float, float]:
    return server.saturated_seconds(), server.receiving_seconds()


def dhcp_at_ceiling(state: AppState) -> Hysteresis:
    """Is this node's DHCP server at its ceiling? Busy once, for at least half a sample
    interval, every commit worker was busy while ops waited for one (the database is the
    limit) or its receive loop never waited for a packet (the process is); idle again only
    after a second below a quarter."""
    return Hysteresis(state, _ceiling_figures, busy_above=0.5, idle_below=0.25)


def _lease_changes(server: DhcpControl) -> tuple[float]:
    return (float(server.lease_changes()),)


def lease_churn(state: AppState, per_second: float) -> Hysteresis:
    """Is this node's DHCP server writing lease changes fast: at least ``per_second``
    committed since the last look; calm again only after a second below it.

    A storm below the ceiling (dhcp_at_ceiling says no) still grows the lease cache, and every
    25 % it grows sets off a full garbage collection that walks all of it: 19-60 ms at
    40,000-80,000 leases, the receive loop stopped, in lab runs at 8,000-9,000 DORA/s, and
    perfdhcp's socket overflowed within 80 ms of each (gc.callbacks against the relay
    namespace's RcvbufErrors, 2026-11-29). Held while only the cache grew, the collection ran
    as soon as the clients came back for the addresses they had (renewals: no growth, the
    same load) and overflowed it again; so the signal is the rate of changes, whatever they
    are. A network's steady renewals stay far below it (100,000 clients on one-hour leases
    renew ~60 a second): GC_CHURN_PER_SECOND for the gc pacer, DERIVE_CHURN_PER_SECOND for
    the lease journal's deriver.
    """
    return Hysteresis(state, _lease_changes, busy_above=per_second, idle_below=per_second)


def either(*signals: Callable[[], bool]) -> Callable[[], bool]:
    """True when any signal is; each is asked every time (each samples what it watches)."""
    def ask() -> bool:
        answers = [signal() for signal in signals]
        return any(answers)

    return ask
