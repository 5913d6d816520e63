"""The busy signal the DNS delivery process is told (runtime.dhcp_at_ceiling): busy once every
commit worker was busy half a sample or more; idle again only after a calm second. And the
gc pacer's other signal (runtime.lease_churn): many lease changes a second; both are one
hysteresis sampler (runtime/sampler.py). The DHCP
server here is a stand-in whose saturated seconds the test sets (a storm cannot be made to
order in a unit test; the bench makes real ones). Last, which signal holds what in the
appliance (runtime.services): the lease journal's deriver and the gc pacer each at its own
rate of lease changes."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import trio
import trio.testing

from ipamd import runtime
from ipamd.runtime import (
    DERIVE_CHURN_PER_SECOND,
    GC_CHURN_PER_SECOND,
    Hysteresis,
    dhcp_at_ceiling,
    either,
    lease_churn,
)


class Dhcp:
    def __init__(self) -> None:
        self.saturated = 0.0
        self.receiving = 0.0

    def saturated_seconds(self) -> float:
        return self.saturated

    def receiving_seconds(self) -> float:
        return self.receiving


async def _step(signal: Hysteresis, dhcp: Dhcp, share: float) -> bool:
    """0.1 s pass with every commit worker busy for ``share`` of them."""
    dhcp.saturated += 0.1 * share
    await trio.sleep(0.1)
    return signal()


async def test_busy_at_the_ceiling_then_idle_after_a_calm_second(
        autojump_clock: trio.testing.MockClock) -> None:
    dhcp = Dhcp()
    signal = dhcp_at_ceiling(SimpleNamespace(dhcp=dhcp, dhcp6=None))  # type: ignore[arg-type]
    assert signal() is False  # the first sample has nothing to compare with
    assert [await _step(signal, dhcp, 0.1) for _ in range(5)] == [False] * 5
    assert await _step(signal, dhcp, 0.6) is True
    # A lull (below the idle mark) shorter than a second keeps it busy...
    assert [await _step(signal, dhcp, 0.0) for _ in range(5)] == [True] * 5
    assert await _step(signal, dhcp, 0.9) is True
    # ...between the marks it stays as it is...
    assert [await _step(signal, dhcp, 0.4) for _ in range(20)] == [True] * 20
    # ...and a calm second ends it.
    calm = [await _step(signal, dhcp, 0.1) for _ in range(12)]
    assert calm[:9] == [True] * 9 and calm[-1] is False


async def test_a_receive_loop_that_never_waits_is_busy_too(
        autojump_clock: trio.testing.MockClock) -> None:
    dhcp = Dhcp()
    signal = dhcp_at_ceiling(SimpleNamespace(dhcp=dhcp, dhcp6=None))  # type: ignore[arg-type]
    signal()
    dhcp.receiving += 0.08  # the process is the limit; the commit workers keep up
    await trio.sleep(0.1)
    assert signal() is True


async def test_no_dhcp_server_is_never_busy(autojump_clock: trio.testing.MockClock) -> None:
    state = SimpleNamespace(dhcp=None, dhcp6=None)
    signal = dhcp_at_ceiling(state)  # type: ignore[arg-type]
    assert signal() is False
    state.dhcp = Dhcp()
    assert signal() is False


class Churn:
    def __init__(self) -> None:
        self.changes = 0

    def lease_changes(self) -> int:
        return self.changes


async def _churn(signal: Hysteresis, dhcp: Churn, per_second: float) -> bool:
    """0.25 s pass (the gc pacer's look) with ``per_second`` lease changes committed."""
    dhcp.changes += int(per_second / 4)
    await trio.sleep(0.25)
    return signal()


async def test_lease_changes_below_the_ceiling_then_a_calm_second(
        autojump_clock: trio.testing.MockClock) -> None:
    dhcp = Churn()
    signal = lease_churn(SimpleNamespace(dhcp=dhcp, dhcp6=None), GC_CHURN_PER_SECOND)  # type: ignore[arg-type]
    assert signal() is False
    steady = GC_CHURN_PER_SECOND / 2  # a network's renewals
    assert [await _churn(signal, dhcp, steady) for _ in range(8)] == [False] * 8
    assert await _churn(signal, dhcp, 8_000) is True  # a storm
    # A short lull keeps it on; a calm second ends it.
    assert [await _churn(signal, dhcp, 0) for _ in range(3)] == [True] * 3
    assert await _churn(signal, dhcp, 8_000) is True
    calm = [await _churn(signal, dhcp, steady) for _ in range(5)]
    assert calm[:3] == [True] * 3 and calm[-1] is False


async def test_no_dhcp_server_means_no_churn(autojump_clock: trio.testing.MockClock) -> None:
    state = SimpleNamespace(dhcp=Churn(), dhcp6=None)
    signal = lease_churn(state, GC_CHURN_PER_SECOND)  # type: ignore[arg-type]
    signal()
    state.dhcp.changes += 10_000
    await trio.sleep(0.25)
    assert signal() is True
    state.dhcp = None  # the server stopped
    assert signal() is False


async def test_a_dhcpv6_storm_counts_too(autojump_clock: trio.testing.MockClock) -> None:
    """The DHCPv6 server shares the process and the database: its changes count alone, and
    with the DHCPv4 server's (a server starting is not a storm)."""
    state = SimpleNamespace(dhcp=None, dhcp6=Churn())
    signal = lease_churn(state, GC_CHURN_PER_SECOND)  # type: ignore[arg-type]
    signal()
    state.dhcp6.changes += 10_000
    await trio.sleep(0.25)
    assert signal() is True
    calm = []
    for _ in range(6):
        await trio.sleep(0.25)
        calm.append(signal())
    assert calm[-1] is False  # calm for a second
    state.dhcp = Churn()
    state.dhcp.changes = 50_000  # its count so far, not a change since the last look
    assert signal() is False
    state.dhcp.changes += 1_000
    state.dhcp6.changes += 1_000
    await trio.sleep(0.25)
    assert signal() is True  # 8,000 a second between them


def test_either_asks_every_signal() -> None:
    asked: list[str] = []

    def signal(name: str, answer: bool) -> Callable[[], bool]:
        def ask() -> bool:
            asked.append(name)
            return answer
        return ask

    assert either(signal("a", True), signal("b", False))() is True
    assert asked == ["a", "b"]  # the second sampled too, though the first said yes
    assert either(signal("c", False), signal("d", False))() is False


class Server(Dhcp, Churn):
    """Both figures: the ceiling's and the lease changes'."""

    def __init__(self) -> None:
        Dhcp.__init__(self)
        Churn.__init__(self)


def _holds(state: SimpleNamespace) -> dict[str, Callable[[], bool]]:
    """The storm signal each holding service of the appliance is given."""
    return {name: service.keywords["at_ceiling"]  # type: ignore[attr-defined]
            for name, service in runtime.services(state)  # type: ignore[arg-type]
            if name in ("lease_journal", "gc_pacer")}


async def test_the_deriver_waits_out_a_storm_below_the_ceiling_from_its_own_rate(
        autojump_clock: trio.testing.MockClock) -> None:
    off = SimpleNamespace(enabled=False)
    dhcp = Server()
    state = SimpleNamespace(dhcp=dhcp, dhcp6=None,
                            config=SimpleNamespace(outbox=off, dns=off, dhcp=off, dhcp6=off,
                                                   ops=off))
    holds = _holds(state)
    assert sorted(holds) == ["gc_pacer", "lease_journal"]
    assert [hold() for hold in holds.values()] == [False, False]

    async def look(per_second: float) -> dict[str, bool]:
        dhcp.changes += int(per_second / 4)
        await trio.sleep(0.25)
        return {name: hold() for name, hold in holds.items()}

    # Between the two rates: the collections wait, the history rows and events do not (the
    # deriver's cost is then a few per cent of a core).
    between = (GC_CHURN_PER_SECOND + DERIVE_CHURN_PER_SECOND) / 2
    assert await look(between) == {"lease_journal": False, "gc_pacer": True}
    # A storm the server keeps up with (its saturated and receiving seconds stay 0: never at
    # its ceiling): both wait.
    assert await look(DERIVE_CHURN_PER_SECOND * 4) == {"lease_journal": True, "gc_pacer": True}
    # Calm for a second: both go on.
    assert [await look(0) for _ in range(5)][-1] == {"lease_journal": False, "gc_pacer": False}
