"""[dhcp6] in the one TOML file: what it refuses, with the key named."""

from __future__ import annotations

import pytest

from ipamd.config import ConfigError, parse


def test_defaults_keep_the_server_off_on_the_standard_port() -> None:
    config = parse({}).dhcp6
    assert config.enabled is False and config.listen == ["[::]:547"]
    assert config.reply_port == 547 and config.trusted_relays == []


@pytest.mark.parametrize(("values", "named"), [
    ({"listen": ["0.0.0.0:547"]}, "dhcp6.listen"),
    ({"listen": ["[::]:70000"]}, "dhcp6.listen"),
    ({"trusted_relays": ["10.77.0.1"]}, "dhcp6.trusted_relays"),
    ({"trusted_relays": ["not-an-address"]}, "dhcp6.trusted_relays"),
    ({"reply_port": 65536}, "dhcp6.reply_port"),
    ({"interfaces": [""]}, "dhcp6.interfaces"),
    ({"interfaces": ["a-name-too-long-for-linux"]}, "dhcp6.interfaces"),
])
def test_bad_values_are_refused_naming_the_key(values: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse({"dhcp6": values})


def test_ipv6_relays_and_listeners_are_taken() -> None:
    config = parse({"dhcp6": {"listen": ["[2001:db8::10]:547", "[::1]:0"],
                              "trusted_relays": ["2001:db8:77::/48", "fe80::1"]}}).dhcp6
    assert config.listen == ["[2001:db8::10]:547", "[::1]:0"]
