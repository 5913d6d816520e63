"""The configuration is never shown with a password in it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipamd.config import REDACTED, parse, redact_dsn, redacted

SECRET = "hunter2-S3cr3t"


@pytest.mark.parametrize(("dsn", "shown"), [
    (f"postgresql://ipamd:{SECRET}@db.example:5432/ipamd?sslmode=require",
     "postgresql://ipamd:***@db.example:5432/ipamd?sslmode=require"),
    (f"postgres://u:{SECRET}@h1,h2/db", "postgres://u:***@h1,h2/db"),
    (f"postgresql://u:p@ss{SECRET}@h/db", "postgresql://u:***@h/db"),  # unencoded '@'
    (f"postgresql://u@h/db?password={SECRET}&application_name=ipamd",
     "postgresql://u@h/db?password=***&application_name=ipamd"),
    (f"postgresql://h/db?sslpassword={SECRET}", "postgresql://h/db?sslpassword=***"),
    (f"host=db user=ipamd password={SECRET} dbname=ipamd",
     "host=db user=ipamd password=*** dbname=ipamd"),
    (f"host=db password = '{SECRET} with \\' quote' dbname=x", "host=db password = *** dbname=x"),
    (f"PASSWORD={SECRET}", "PASSWORD=***"),
    ("postgresql://ipamd@localhost/ipamd", "postgresql://ipamd@localhost/ipamd"),
    ("host=/run/postgresql dbname=ipamd", "host=/run/postgresql dbname=ipamd"),
    ("", ""),
])
def test_redact_dsn(dsn: str, shown: str) -> None:
    assert redact_dsn(dsn) == shown
    assert SECRET not in redact_dsn(dsn)


def test_redacted_config_keeps_everything_else() -> None:
    config = parse({"database": {"dsn": f"postgresql://u:{SECRET}@h/db", "pool_max": 7},
                    "api": {"tls_cert": "/etc/ipamd/cert.pem",
                            "tls_key": "/etc/ipamd/key.pem"}})
    shown = redacted(config)
    assert shown["database"]["dsn"] == f"postgresql://u:{REDACTED}@h/db"
    assert shown["database"]["pool_max"] == 7
    assert shown["api"]["tls_key"] == "/etc/ipamd/key.pem"  # a path, not a secret
    assert shown["limits"]["token_creations_per_minute"] == 10  # "token" in a name is no secret
    assert SECRET not in json.dumps(shown)
    assert SECRET not in repr(config) and SECRET not in str(config.database)


def test_check_config_prints_no_password(tmp_path: Path) -> None:
    path = tmp_path / "ipamd.toml"
    path.write_text(f'[database]\ndsn = "host=db user=ipamd password={SECRET} dbname=ipamd"\n')
    result = subprocess.run(
        [sys.executable, "-m", "ipamd", "--config", str(path), "check-config"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    shown = json.loads(result.stdout)
    assert shown["database"]["dsn"] == "host=db user=ipamd password=*** dbname=ipamd"
