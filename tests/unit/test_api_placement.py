"""Where the API runs (runtime.api_in_main_process, docs/security.md): never in the process of a
server that answers the network, whatever api.workers says."""

from __future__ import annotations

import pytest

from ipamd import runtime
from tests.conftest import make_config


@pytest.mark.parametrize(("workers", "dhcp", "dns", "in_main"), [
    (1, False, False, True),  # nothing there to delay: one process fewer
    (1, True, False, False),
    (1, False, True, False),
    (1, True, True, False),
    (2, False, False, False),
])
def test_the_api_shares_no_process_with_dhcp_or_dns(
    workers: int, dhcp: bool, dns: bool, in_main: bool
) -> None:
    config = make_config("postgresql://ipamd@localhost/unused", api={"workers": workers},
                         dhcp={"enabled": dhcp}, dns={"enabled": dns})
    assert runtime.api_in_main_process(config) is in_main
