"""Lanes: one keep-alive connection per outbox worker, reused per origin, bounded waits."""

import httpx
import pytest
import trio

from ipamd.outbox import client as http_client
from ipamd.outbox.backend import VettingBackend
from ipamd.outbox.http11 import ResponseHead, request_head
from ipamd.outbox.lanes import Lane, LanePool, Origin, Timeouts
from ipamd.outbox.urlguard import Resolver, check_url
from tests.support.receiver import Reply

HEADERS = {"Content-Type": "application/json"}


def _client(tmp_path, ca_file, connections, timeout=5.0):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 hook.test\n")
    return http_client.Client(Resolver(str(hosts)), http_client.ssl_context(ca_file),
                              connections=connections, timeout=timeout)


async def test_each_origin_keeps_its_connection(tmp_path, ca_file, receiver):
    # Two names for one receiver are two origins; alternating between them over two lanes
    # must reuse each origin's connection instead of replacing one with the other.
    a, b = check_url(receiver.url(host="hook.test")), check_url(receiver.url(host="localhost"))
    async with _client(tmp_path, ca_file, 2) as client:
        for target in (a, b) * 5:
            assert (await client.post(target, HEADERS, b"{}", 100)).status == 200
        assert client.connections_opened == 2
    assert {r.headers["host"].split(":")[0] for r in receiver.received} == {"hook.test",
                                                                            "localhost"}


async def test_a_lane_moves_to_another_origin_when_none_is_free(tmp_path, ca_file, receiver):
    a, b = check_url(receiver.url(host="hook.test")), check_url(receiver.url(host="localhost"))
    async with _client(tmp_path, ca_file, 1) as client:
        for target in (a, a, b, b, a):
            assert (await client.post(target, HEADERS, b"{}", 100)).status == 200
        assert client.connections_opened == 3
        assert client.transport.pool.connections == 1  # the replaced ones were closed


async def test_a_failed_request_gives_its_lane_back(tmp_path, ca_file, receiver):
    port = receiver.port
    async with _client(tmp_path, ca_file, 1) as client:
        with trio.fail_after(5):
            for _ in range(3):
                with pytest.raises(http_client.HttpError, match="Connection refused"):
                    await client.post(check_url(f"https://hook.test:{port + 1}/"), HEADERS,
                                      b"{}", 100)
            assert (await client.post(check_url(receiver.url()), HEADERS, b"{}", 100)
                    ).status == 200


async def test_a_cancelled_request_gives_its_lane_back(tmp_path, ca_file, receiver):
    receiver.reply_next(Reply(hang=True))
    async with _client(tmp_path, ca_file, 1) as client:
        target = check_url(receiver.url())
        with trio.move_on_after(0.3) as scope:
            await client.post(target, HEADERS, b"{}", 100)
        assert scope.cancelled_caught
        with trio.fail_after(5):
            assert (await client.post(target, HEADERS, b"{}", 100)).status == 200
    receiver.release()


async def test_waiting_for_a_lane_is_bounded(tmp_path, ca_file, receiver, nursery):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 hook.test\n")
    backend = VettingBackend(Resolver(str(hosts)))
    context = http_client.ssl_context(ca_file)
    lanes = LanePool(1, backend, context, keepalive_expiry=30.0)
    origin = Origin("https", "hook.test", receiver.port)
    head = request_head(b"POST", b"/", [(b"Host", f"hook.test:{receiver.port}".encode()),
                                        (b"Content-Length", b"2")])
    timeouts = Timeouts(connect=5, read=5, write=5, pool=0.2)

    receiver.reply_next(Reply(hang=True))
    held: list[tuple[ResponseHead, Lane]] = []

    async def hold() -> None:
        held.append(await lanes.send(origin, head, b"{}", timeouts))

    nursery.start_soon(hold)
    await receiver.wait_for(1)  # the only lane is busy until the receiver answers
    with pytest.raises(httpx.PoolTimeout, match=r"no free connection within 0\.2 s"):
        await lanes.send(origin, head, b"{}", timeouts)
    receiver.release()
    with trio.fail_after(5):
        while not held:
            await trio.sleep(0.01)
    reply, lane = held[0]
    assert reply.status == 200
    while await lane.receive_body(5):
        pass
    await lane.release()  # gives the lane back, its connection kept
    with trio.fail_after(5):
        reply, lane = await lanes.send(origin, head, b"{}", timeouts)
    assert reply.status == 200
    while await lane.receive_body(5):
        pass
    await lane.release()
    assert lanes.connections == 1  # the same kept-alive connection served both
    assert backend.connections_opened == 1
    await lanes.aclose()
