"""The ISC reader's worked site (dhcpd.conf with hosts.conf) and Debian's dhcpd example, and
the table of names both resolve with, shared by the unit and integration tests."""

from __future__ import annotations

import re
from pathlib import Path

SITE = Path(__file__).resolve().parent / "dhcpd.conf"
EXAMPLE = Path("/usr/share/doc/isc-dhcp-server/examples/dhcpd.conf.example")
NAMES = {"ns1.example.org": ["10.0.0.53"], "ns2.example.org": ["10.0.0.54"],
         "rtr-239-0-1.example.org": ["10.254.239.1"], "rtr-239-0-2.example.org": ["10.254.239.2"],
         "rtr-239-32-1.example.org": ["10.254.239.33"], "fantasia.example.com": ["10.5.5.20"],
         "ns1.internal.example.org": ["10.5.5.2"], "rtr-224.example.org": ["10.17.224.1"],
         "rtr-29.example.org": ["10.0.29.1"], "ncd-booter": ["10.5.5.3"],
         "ns1.site.example": ["10.77.0.53"], "scanner.site.example": ["10.77.3.11"]}


def resolver(name: str, family: int) -> list[str]:
    """The tests' DNS: a table, so no test depends on a real resolver."""
    assert family == 4
    if name not in NAMES:
        raise LookupError(f"{name}: no such name")
    return NAMES[name]


def uncommented_example(folder: Path) -> str:
    """Debian's example with its commented-out statements turned on (prose comments start
    with '# ', statements with '#' and no space or two spaces), written into ``folder``."""
    text = re.sub(r"(?m)^#(?=[^ ]|  |$)", "", EXAMPLE.read_text())
    path = folder / "dhcpd.conf.example"
    path.write_text(text)
    return str(path)
