"""A DNS server answering garbage never crashes the bind_tsig adapter: every reply that is
not a usable DNS message becomes a DnsFailure the Work view can show (and the row retries)."""

from __future__ import annotations

import base64
import os
import random
import struct
import uuid

import pytest
import trio

from ipamd.dns.adapter import DnsFailure, Server
from ipamd.dns.bind_tsig import BindTsig
from ipamd.dns.change import Record, StaticChange

SECRET_ENV = "IPAMD_TEST_TSIG_GARBAGE"


def _server(port: int) -> Server:
    return Server(id=uuid.uuid4(), name="garbage", adapter="bind_tsig", address="127.0.0.1",
                  port=port, tsig_key_name="k", tsig_algorithm="hmac-sha256", api_url=None,
                  pdns_server_id="localhost", secret_ref=f"env:{SECRET_ENV}")


def _replies(query: bytes, rng: random.Random) -> list[bytes]:
    qid = query[:2]
    return [
        rng.randbytes(rng.randrange(0, 40)),  # noise
        qid + b"\x80",  # cut inside the header
        qid + struct.pack("!HHHHH", 0xA800, 1, 0, 0, 0) + b"\x07example",  # cut in a name
        qid + struct.pack("!HHHHH", 0xA800, 0, 5, 0, 0),  # promises records it lacks
        qid + struct.pack("!HHHHH", 0xA800, 0, 0, 0, 0),  # answer with no TSIG: unverifiable
        qid + struct.pack("!HHHHH", 0xAA00, 0, 0, 0, 0),  # truncated: TCP, where nobody listens
        qid + rng.randbytes(rng.randrange(10, 200)),
    ]


async def test_garbage_replies_are_failures_not_crashes() -> None:
    os.environ[SECRET_ENV] = base64.b64encode(b"k" * 32).decode()
    rng = random.Random(4701)
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
    await sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    change = StaticChange("lan.example", None, Record("www.lan.example", "A", "10.0.0.1", 60))
    answers: list[str] = []
    plan: list[int] = []

    async def serve() -> None:
        while True:
            query, peer = await sock.recvfrom(4096)
            replies = _replies(query, rng)
            await sock.sendto(replies[plan.pop(0) % len(replies)], peer)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        for case in range(40):
            plan.append(case)
            with pytest.raises(DnsFailure) as caught:
                await BindTsig().apply(_server(port), change, timeout=0.5)
            answers.append(caught.value.answer)
        nursery.cancel_scope.cancel()
    sock.close()
    assert set(answers) <= {"MALFORMED", "TIMEOUT", "UNREACHABLE", "FORMERR", "TSIG"}
    assert "MALFORMED" in answers, answers
    print(sorted(set(answers)))
