"""The ops room's pure rules: thresholds, destination settings, payload shapes, the probe."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from ipamd.core.errors import Invalid
from ipamd.core.histogram import SIZE_BUCKETS, Histogram
from ipamd.ops import alerts, destinations, status
from ipamd.outbox.alert_delivery import alertmanager_body, mail, pager_body

ALERT: dict[str, Any] = {
    "id": "01a20f50-0000-7000-8000-000000000001", "rule": "pool_utilisation",
    "subject": "p1", "severity": "warning", "summary": "pool p is 95% used", "value": 95.0,
    "threshold": 90.0, "opened_at": "2026-11-24T20:00:00Z", "cleared_at": None,
}


def test_rules_defaults_and_hysteresis() -> None:
    assert alerts.check_rules({}) == alerts.DEFAULTS
    assert alerts.check_rules({"utilisation_percent": 88})["utilisation_percent"] == 88.0
    with pytest.raises(Invalid, match="hysteresis"):  # the clear threshold must move too
        alerts.check_rules({"utilisation_percent": 80})
    with pytest.raises(Invalid, match="hysteresis"):
        alerts.check_rules({"utilisation_clear_percent": 95})
    with pytest.raises(Invalid, match="unknown rule"):
        alerts.check_rules({"bogus": 1})
    with pytest.raises(Invalid, match="between"):
        alerts.check_rules({"utilisation_percent": 101})
    with pytest.raises(Invalid, match="number"):
        alerts.check_rules({"drops_per_minute": True})


def test_destination_settings() -> None:
    smtp = destinations.check_settings("smtp", {"host": "mail.example.net", "from": "a@b.net",
                                                "to": ["c@d.net"]})
    assert smtp == {"host": "mail.example.net", "port": 587, "starttls": True,
                    "from": "a@b.net", "to": ["c@d.net"]}
    pager = destinations.check_settings("pager", {"routing_key_ref": "env:PD_KEY"})
    assert pager["url"] == destinations.PAGERDUTY_URL
    cases = [
        ("webhook", {"url": "http://example.net/x"}, "settings.url"),
        ("webhook", {"url": "https://169.254.169.254/"}, "settings.url"),
        ("webhook", {"url": "https://x.test/", "topic": "t"}, "settings.topic"),
        ("smtp", {"host": "m", "from": "a@b", "to": []}, "settings.to"),
        ("smtp", {"host": "m", "from": "a@b", "to": ["x@y"], "username": "u"},
         "settings.password_ref"),
        ("smtp", {"host": "m", "from": "a@b", "to": ["x@y"], "port": 0}, "settings.port"),
        ("smtp", {"host": "m", "from": "a@b", "to": ["x@y"], "starttls": False, "username": "u",
                  "password_ref": "env:SMTP_PASSWORD"}, "settings.starttls"),
        ("pager", {"routing_key_ref": "the-key-itself"}, "settings.routing_key_ref"),
    ]
    for kind, settings, field in cases:
        with pytest.raises(Invalid) as caught:
            destinations.check_settings(kind, settings)
        assert caught.value.field == field, (kind, settings)


def test_payload_shapes() -> None:
    opened = alertmanager_body(ALERT)[0]
    assert opened["labels"]["alertname"] == "ipamd_pool_utilisation"
    assert "endsAt" not in opened
    cleared = {**ALERT, "cleared_at": "2026-11-24T20:05:00Z"}
    assert alertmanager_body(cleared)[0]["endsAt"] == "2026-11-24T20:05:00Z"
    trigger = pager_body(ALERT, "key")
    assert trigger["event_action"] == "trigger" and trigger["payload"]["severity"] == "warning"
    resolve = pager_body(cleared, "key")
    assert resolve == {"routing_key": "key", "event_action": "resolve",
                       "dedup_key": trigger["dedup_key"]}
    msg = mail(cleared, {"from": "a@b.net", "to": ["c@d.net", "e@f.net"]})
    assert msg["Subject"].startswith("[ipamd] CLEARED:") and msg["To"] == "c@d.net, e@f.net"


def test_status_judge() -> None:
    now = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
    row = {"up": True, "stopped_at": None, "silent_seconds": 1.0,
           "services": {"api": True, "ops": True, "dhcp": False}}
    assert status.judge(row, "n", ["api", "dhcp"], True) == ["service dhcp is not running"]
    healthy = {**row, "services": {"api": True, "ops": True}}
    assert status.judge(healthy, "n", ["api", "ops"], True) == []
    # A service the node reports but the list does not know is judged too.
    extra = {**row, "services": {"api": True, "dns": False}}
    assert status.judge(extra, "n", ["api"], True) == ["service dns is not running"]
    assert "never registered" in status.judge(None, "n", ["api"], True)[0]
    assert "stopped" in status.judge({**row, "up": False, "stopped_at": now}, "n", [], True)[0]
    assert "silent for 99 s" in status.judge(
        {**row, "up": False, "silent_seconds": 99.0}, "n", [], True)[0]
    assert "ops.enabled" in status.judge(row, "n", ["api"], False)[0]


def test_histogram_cumulative() -> None:
    h = Histogram(SIZE_BUCKETS)
    for value in (1, 3, 3, 2000):
        h.observe(value)
    pairs = dict(h.cumulative())
    assert pairs["1.0"] == 1 and pairs["4.0"] == 3 and pairs["1024.0"] == 3
    assert pairs["+Inf"] == 4 and h.total == 2007
