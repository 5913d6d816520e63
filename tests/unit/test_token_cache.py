"""The API's cache of verified tokens (api/token_cache.py): what it may serve, and when not."""

from __future__ import annotations

from ipamd.api.token_cache import MAX_ENTRIES, TTL_SECONDS, TokenCache, Verified


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _token(n: int = 1, role: str = "viewer") -> Verified:
    return Verified(token_id=f"id-{n}", name=f"t{n}", role=role,  # type: ignore[arg-type]
                    digest=n.to_bytes(32, "big"))


def _listening(clock: Clock) -> TokenCache:
    cache = TokenCache(clock)
    cache._set_listening(True)
    return cache


def test_serves_a_verified_token_until_its_ttl() -> None:
    clock = Clock()
    cache = _listening(clock)
    token = _token()
    cache.put(token, cache.generation, None)
    assert cache.get(token.digest) == token
    clock.now += TTL_SECONDS - 0.01
    assert cache.get(token.digest) == token
    clock.now += 0.02
    assert cache.get(token.digest) is None


def test_never_past_the_tokens_expiry() -> None:
    clock = Clock()
    cache = _listening(clock)
    token = _token()
    cache.put(token, cache.generation, 1.0)
    clock.now += 1.0
    assert cache.get(token.digest) is None
    cache.put(token, cache.generation, 0.0)  # expires now: not kept at all
    assert cache.get(token.digest) is None


def test_a_clear_empties_it_and_refuses_lookups_that_began_before() -> None:
    cache = _listening(Clock())
    token = _token()
    began = cache.generation
    cache.put(token, began, None)
    cache.clear()  # a revoke: here, or heard from another node
    assert cache.get(token.digest) is None
    cache.put(token, began, None)  # a lookup that read the row before the revoke
    assert cache.get(token.digest) is None
    cache.put(token, cache.generation, None)
    assert cache.get(token.digest) == token


def test_nothing_served_or_kept_while_not_listening() -> None:
    clock = Clock()
    cache = TokenCache(clock)
    token = _token()
    cache.put(token, cache.generation, None)
    assert cache.get(token.digest) is None
    cache._set_listening(True)
    cache.put(token, cache.generation, None)
    assert cache.get(token.digest) == token
    cache._set_listening(False)  # the listener lost its connection: changes may be missed
    assert cache.get(token.digest) is None
    cache._set_listening(True)
    assert cache.get(token.digest) is None


def test_other_secrets_miss() -> None:
    cache = _listening(Clock())
    cache.put(_token(1), cache.generation, None)
    assert cache.get(_token(2).digest) is None


def test_memory_is_bounded() -> None:
    cache = _listening(Clock())
    for n in range(MAX_ENTRIES + 1):
        cache.put(_token(n), cache.generation, None)
    assert len(cache._entries) <= MAX_ENTRIES
    assert cache.get(_token(MAX_ENTRIES).digest) is not None
