"""Lanes (one single-connection httpcore pool per worker) and the one-write stream."""

import httpcore
import pytest
import trio

from ipamd.outbox import client as http_client
from ipamd.outbox.backend import OneWriteStream, VettingBackend
from ipamd.outbox.lanes import LanePool
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
    lanes = LanePool(1, lambda: httpcore.AsyncConnectionPool(
        ssl_context=context, max_connections=1, network_backend=backend))

    def request() -> httpcore.Request:
        return httpcore.Request(
            "POST", receiver.url(host="hook.test"), content=b"{}",
            headers=[(b"Host", f"hook.test:{receiver.port}".encode()),
                     (b"Content-Length", b"2")],
            extensions={"timeout": {"pool": 0.2, "connect": 5, "read": 5, "write": 5}})

    receiver.reply_next(Reply(hang=True))
    held: list[httpcore.Response] = []

    async def hold() -> None:
        held.append(await lanes.handle_async_request(request()))

    nursery.start_soon(hold)
    await receiver.wait_for(1)  # the only lane is busy until the receiver answers
    with pytest.raises(httpcore.PoolTimeout, match=r"no free connection within 0\.2 s"):
        await lanes.handle_async_request(request())
    receiver.release()
    with trio.fail_after(5):
        while not held:
            await trio.sleep(0.01)
    assert held[0].status == 200
    await held[0].aread()
    await held[0].aclose()  # gives the lane back
    with trio.fail_after(5):
        response = await lanes.handle_async_request(request())
    assert response.status == 200
    await response.aclose()
    await lanes.aclose()


class Recording(httpcore.AsyncNetworkStream):
    def __init__(self, fail_writes=False):
        self.writes: list[bytes] = []
        self.fail_writes = fail_writes

    async def write(self, buffer, timeout=None):
        if self.fail_writes:
            raise httpcore.WriteError("broken pipe")
        self.writes.append(buffer)

    async def read(self, max_bytes, timeout=None):
        return b"HTTP/1.1 200 OK\r\n"

    async def aclose(self):
        pass


async def test_head_and_body_leave_in_one_write():
    inner = Recording()
    stream = OneWriteStream(inner)
    await stream.write(b"POST / HTTP/1.1\r\n\r\n")
    await stream.write(b"{}")
    assert inner.writes == []
    assert await stream.read(100) == b"HTTP/1.1 200 OK\r\n"
    assert inner.writes == [b"POST / HTTP/1.1\r\n\r\n{}"]
    await stream.read(100)
    assert len(inner.writes) == 1


async def test_a_large_body_is_not_held():
    inner = Recording()
    stream = OneWriteStream(inner)
    await stream.write(b"x" * OneWriteStream.FLUSH_BYTES)
    assert inner.writes == [b"x" * OneWriteStream.FLUSH_BYTES]


async def test_a_failed_write_still_reads_the_reply():
    # A receiver may answer (413, 401) and close before taking the whole request.
    stream = OneWriteStream(Recording(fail_writes=True))
    await stream.write(b"POST / HTTP/1.1\r\n\r\n")
    assert await stream.read(100) == b"HTTP/1.1 200 OK\r\n"
