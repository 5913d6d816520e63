"""Hypothesis pieces the DHCPv4 and DHCPv6 codec fuzz tests share: the settings and the
seed mutator (tests/unit/test_dhcp_codec_fuzz.py, tests/unit/dhcp6/test_codec_fuzz.py)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=2000,
    deadline=None,
    database=None,  # keep the repo free of .hypothesis/ state
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def mutated(draw: st.DrawFn, seeds: Sequence[bytes], values: Sequence[int],
            focus: int | None = None) -> bytes:
    """A seed after one to six flips, overwrites (with one of ``values``), cuts, insertions
    or deletions. With ``focus``, four edits in five fall at or after that offset (when the
    seed reaches past it), so most mutants get past a fixed header's checks."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("flip", "set", "set", "truncate", "insert", "delete")))
        if focus is not None and draw(st.integers(0, 4)) and len(data) > focus + 1:
            pos = draw(st.integers(focus, len(data) - 1))
        else:
            pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[pos] = draw(st.sampled_from(values))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
    return bytes(data)
