"""The busy signal the DNS delivery process is told (runtime.DhcpAtCeiling): busy once every
commit worker was busy half a sample or more; idle again only after a calm second. The DHCP
server here is a stand-in whose saturated seconds the test sets (a storm cannot be made to
order in a unit test; the bench makes real ones)."""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from ipamd.runtime import DhcpAtCeiling


class Dhcp:
    def __init__(self) -> None:
        self.saturated = 0.0
        self.receiving = 0.0

    def saturated_seconds(self) -> float:
        return self.saturated

    def receiving_seconds(self) -> float:
        return self.receiving


async def _step(signal: DhcpAtCeiling, dhcp: Dhcp, share: float) -> bool:
    """0.1 s pass with every commit worker busy for ``share`` of them."""
    dhcp.saturated += 0.1 * share
    await trio.sleep(0.1)
    return signal()


async def test_busy_at_the_ceiling_then_idle_after_a_calm_second(
        autojump_clock: trio.testing.MockClock) -> None:
    dhcp = Dhcp()
    signal = DhcpAtCeiling(SimpleNamespace(dhcp=dhcp))  # type: ignore[arg-type]
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
    signal = DhcpAtCeiling(SimpleNamespace(dhcp=dhcp))  # type: ignore[arg-type]
    signal()
    dhcp.receiving += 0.08  # the process is the limit; the commit workers keep up
    await trio.sleep(0.1)
    assert signal() is True


async def test_no_dhcp_server_is_never_busy(autojump_clock: trio.testing.MockClock) -> None:
    state = SimpleNamespace(dhcp=None)
    signal = DhcpAtCeiling(state)  # type: ignore[arg-type]
    assert signal() is False
    state.dhcp = Dhcp()
    assert signal() is False
