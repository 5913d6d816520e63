"""The network lab library itself: names, the 10.77.0.0/16 rule, and teardown on any exit."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import netns

pytestmark = pytest.mark.netns


def namespaces() -> set[str]:
    folder = Path("/run/netns")
    return set(os.listdir(folder)) if folder.is_dir() else set()


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def rule_tables() -> set[str]:
    out = subprocess.run(["ip", "rule"], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if "lookup" in line}


@pytest.fixture(autouse=True)
def _need_netns() -> None:
    reason = netns.require_tools("busybox")
    if reason:
        pytest.skip(reason)


def test_addresses_outside_the_test_range_are_refused(lab: netns.Lab) -> None:
    ns = lab.namespace("a")
    pair = lab.veth("x", None, ns)
    for bad in ("192.0.2.1/24", "10.78.0.1/24", "10.0.0.0/8"):
        with pytest.raises(ValueError, match=r"10\.77\.0\.0/16"):
            lab.address(ns, pair.b, bad)
    with pytest.raises(ValueError):
        lab.policy_route("10.77.0.1", "0.0.0.0/0", "10.77.0.2")
    with pytest.raises(ValueError):
        lab.ifname("much-too-long-role")


def test_lab_builds_connected_namespaces_and_removes_everything(tmp_path: Path) -> None:
    with netns.lab() as lab:
        root_ip, peer_ip = lab.free_pair("10.77.9.0/24")
        ns = lab.namespace("a")
        other = lab.namespace("b")
        pair = lab.veth("x", None, ns, f"{root_ip}/30", f"{peer_ip}/30")
        inner = lab.veth("y", ns, other, "10.77.5.1/24", "10.77.5.2/24")
        lab.route(other, "default", "10.77.5.1")
        lab.sysctl(ns, "net.ipv4.ip_forward", "1")
        lab.policy_route(root_ip, "10.77.5.0/24", peer_ip)
        assert all(name.startswith("ipt") and len(name) <= 15
                   for name in (pair.a, pair.b, inner.a, inner.b))
        # Two hops: root → ns → other and back, through the policy route.
        ping = lab.run(other, ["busybox", "ping", "-c", "1", "-W", "2", root_ip], check=False)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        sleeper = lab.spawn(ns, ["sleep", "300"])
        # `ip netns exec` enters the namespace just after it starts: wait for it (bounded).
        for _ in range(50):
            if sleeper.pid in lab.pids(ns):
                break
            time.sleep(0.1)
        assert sleeper.pid in lab.pids(ns)
        registry = json.loads((netns.REGISTRY / f"{lab.base}.json").read_text())
        assert set(registry["namespaces"]) == {ns, other}
        table = str(lab.rules[0]["table"])
        assert table in rule_tables()
    assert sleeper.poll() is not None
    assert not {ns, other} & namespaces()
    assert not link_exists(pair.a)
    assert table not in rule_tables()
    assert not (netns.REGISTRY / f"{lab.base}.json").exists()


def test_teardown_runs_when_the_test_body_fails() -> None:
    made: list[netns.Lab] = []
    with pytest.raises(RuntimeError, match="boom"), netns.lab() as lab:
        made.append(lab)
        lab.namespace("a")
        lab.veth("x", None, lab.namespaces[0], "10.77.8.1/30", "10.77.8.2/30")
        raise RuntimeError("boom")
    assert not set(made[0].namespaces) & namespaces()
    assert not link_exists(made[0].ifname("xa"))


def test_a_killed_run_is_swept_by_the_next_lab() -> None:
    # A child process builds a lab and dies by SIGKILL: nothing of it may survive the next lab.
    root = str(Path(__file__).resolve().parents[2])
    code = (
        f"import os, signal, sys; sys.path[:0] = [{root!r}]\n"
        "from tests.support import netns\n"
        "lab = netns.Lab(); ns = lab.namespace('k'); lab.veth('x', None, ns)\n"
        "print(lab.base, ns, flush=True); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.run(["python3", "-c", code], capture_output=True, text=True, timeout=30,
                           check=False, env={**os.environ, "PYTHONPATH": ""})
    base, ns = child.stdout.split()
    assert ns in namespaces() and link_exists(base + "xa")
    with netns.lab():
        pass
    assert ns not in namespaces()
    assert not link_exists(base + "xa")
    assert not (netns.REGISTRY / f"{base}.json").exists()
