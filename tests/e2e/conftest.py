"""Fixtures of the end-to-end tests: a network lab that is always torn down, and the API
seen from a client in a namespace of its own (a genuine non-loopback peer)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ipamd import runtime
from tests.support import netns

PROBE = Path(__file__).resolve().parents[1] / "support" / "api_probe.py"


@pytest.fixture
def lab() -> Iterator[netns.Lab]:
    """Namespaces and links for one test; skipped (with the reason) without root or netns."""
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.lab() as made:
        yield made


@dataclass
class ApiNet:
    ns: str
    root_ip: str
    peer_ip: str


@pytest.fixture
def api_net(lab: netns.Lab) -> ApiNet:
    root_ip, peer_ip = lab.free_pair("10.77.9.0/24")
    ns = lab.namespace("cli")
    lab.veth("api", None, ns, f"{root_ip}/30", f"{peer_ip}/30")
    return ApiNet(ns=ns, root_ip=root_ip, peer_ip=peer_ip)


class Prober:
    """Runs api_probe.py inside the namespace against the public listener."""

    def __init__(self, lab: netns.Lab, net: ApiNet, appliance: runtime.Running,
                 workdir: Path) -> None:
        self.lab, self.net, self.workdir = lab, net, workdir
        self.base = appliance.url("https") + "/api/v1"
        assert self.base.startswith(f"https://{net.root_ip}:"), appliance.binds
        config = appliance.state.config
        self.ca = str(config.path(config.state_dir) / "tls" / "cert.pem")
        self.count = 0

    async def __call__(self, *steps: dict[str, Any]) -> list[dict[str, Any]]:
        self.count += 1
        plan = self.workdir / f"plan{self.count}.json"
        plan.write_text(json.dumps({"base": self.base, "ca": self.ca, "steps": list(steps)}))
        done = await self.lab.run_async(
            self.net.ns, [sys.executable, str(PROBE), str(plan)], timeout=120
        )
        return json.loads(done.stdout)["steps"]


@pytest.fixture
def probe(lab: netns.Lab, api_net: ApiNet, appliance: runtime.Running,
          tmp_path: Path) -> Prober:
    return Prober(lab, api_net, appliance, tmp_path)
