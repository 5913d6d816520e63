"""The one TOML file: shipped defaults, every key documented, bad files named precisely."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from ipamd.config import Config, ConfigError, load, parse

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "ipamd.toml"


def _keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys |= _keys(annotation, f"{prefix}{name}.")
        else:
            keys.add(prefix + name)
    return keys


def _toml_keys(data: dict, prefix: str = "") -> set[str]:
    keys = set()
    for name, value in data.items():
        if isinstance(value, dict):
            keys |= _toml_keys(value, f"{prefix}{name}.")
        else:
            keys.add(prefix + name)
    return keys


def test_shipped_file_documents_every_key_with_its_default():
    data = tomllib.loads(SHIPPED.read_text())
    assert _toml_keys(data) == _keys(Config)
    assert load(SHIPPED) == Config()


def test_every_key_has_a_comment_above_it():
    lines = SHIPPED.read_text().splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if "=" in stripped and not stripped.startswith("#"):
            above = lines[number - 1].strip()
            # A key is commented directly above, or belongs to a commented group of keys.
            assert above.startswith("#") or ("=" in above and not above.startswith("[")), (
                f"line {number + 1} ({stripped}) has no comment"
            )


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match=r"unknown key 'api.listen_everywhere'"):
        parse({"api": {"listen_everywhere": True}})


def test_wrong_type_is_named():
    with pytest.raises(ConfigError, match=r"key 'limits.requests_per_minute'"):
        parse({"limits": {"requests_per_minute": "lots"}})


def test_bad_listen_address_is_named():
    with pytest.raises(ConfigError, match=r"key 'api.loopback_listen'"):
        parse({"api": {"loopback_listen": "0.0.0.0:8080"}})


def test_missing_file_and_bad_toml(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[api\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(broken)


@pytest.mark.parametrize(
    ("text", "named"),
    [("[api]\nbogus = 1\n", "api.bogus"), ("[dhcp]\nenabled = 'yes'\n", "dhcp.enabled")],
)
def test_ipamd_run_refuses_bad_config(tmp_path: Path, text: str, named: str):
    path = tmp_path / "ipamd.toml"
    path.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "ipamd", "--config", str(path), "run"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert named in result.stderr
