import datetime as dt
import email.utils
import random

import pytest

from ipamd.config import OutboxConfig
from ipamd.outbox.backoff import Backoff, next_delay, parse_retry_after


def test_default_schedule_is_about_twelve_attempts_over_a_day():
    config = OutboxConfig()
    schedule = Backoff.from_config(config).schedule(config.max_attempts)
    assert config.max_attempts == 12
    assert len(schedule) == 11
    assert schedule[:4] == [10, 30, 90, 270]
    assert max(schedule) == config.backoff_max_seconds
    assert 20 * 3600 <= sum(schedule) <= 26 * 3600


def test_growth_and_cap():
    b = Backoff(base=1, multiplier=2, cap=10, jitter=0)
    assert [b.delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert b.delay(10_000) == 10  # no overflow


def test_jitter_stays_within_its_band_and_varies():
    b = Backoff(base=100, multiplier=2, cap=10_000, jitter=0.2)
    rng = random.Random(7)
    seen = {round(b.delay(3, rng), 3) for _ in range(200)}
    assert all(320 <= d <= 480 for d in seen)
    assert len(seen) > 50


def test_retry_after_seconds_and_date():
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    assert parse_retry_after("120") == 120
    later = email.utils.format_datetime(now + dt.timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(later, now) == pytest.approx(90)
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_retry_after_wins_only_on_429_and_503_and_is_capped():
    b = Backoff(base=1, multiplier=2, cap=600, jitter=0)
    assert next_delay(b, 1, 429, "30") == 30
    assert next_delay(b, 1, 503, "100000") == 600
    assert next_delay(b, 1, 503, "0") == 1  # never a tight loop
    assert next_delay(b, 3, 500, "30") == 4  # other statuses: the schedule
    assert next_delay(b, 3, 429, "garbage") == 4
