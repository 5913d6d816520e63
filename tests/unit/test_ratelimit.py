from ipamd.api.ratelimit import SlidingWindow, retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_window_allows_limit_then_refuses_until_oldest_leaves():
    clock = Clock()
    window = SlidingWindow(clock)
    for _ in range(300):
        assert window.hit("a", 300) is None
        clock.now += 0.1
    wait = window.hit("a", 300)
    assert wait is not None and 0 < wait <= 60
    # Another client is not affected.
    assert window.hit("b", 300) is None
    clock.now += wait + 0.001
    assert window.hit("a", 300) is None


def test_retry_after_is_whole_seconds_at_least_one():
    assert retry_after(0.01) == "1"
    assert retry_after(12.2) == "13"


def test_idle_clients_are_swept():
    clock = Clock()
    window = SlidingWindow(clock)
    window.hit("a", 10)
    clock.now += 120
    window.hit("b", 10)
    assert "a" not in window._events
