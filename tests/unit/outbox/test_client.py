"""The delivery client (httpx over the vetting backend): it connects only to vetted addresses,
keeping the name for TLS and Host; keeps connections alive; never follows redirects; reads
replies up to a cap; keeps no cookies."""

import ssl

import pytest
import trio

from ipamd.outbox import client as http_client
from ipamd.outbox.urlguard import Resolver, UrlRefused, check_url
from tests.support.receiver import Receiver, Reply, trustme_context
from tests.unit.outbox.conftest import SECRET

HEADERS = {"Content-Type": "application/json"}


def _client(tmp_path, ca_file, hosts_text="127.0.0.1 hook.test\n", timeout=5.0, **kw):
    hosts = tmp_path / "hosts"
    hosts.write_text(hosts_text)
    return http_client.Client(Resolver(str(hosts)), http_client.ssl_context(ca_file),
                              connections=4, timeout=timeout, **kw)


async def test_name_resolving_to_a_forbidden_address_is_never_connected(
    tmp_path, ca_file, receiver
):
    async with _client(tmp_path, ca_file, "169.254.169.254 evil.test\n") as client:
        with pytest.raises(UrlRefused, match=r"evil\.test resolves to 169\.254\.169\.254"):
            await client.post(check_url(f"https://evil.test:{receiver.port}/hook"), HEADERS,
                              b"{}", 1000)
        assert client.connections_opened == 0
    assert receiver.received == []


async def test_a_mixed_answer_is_refused_as_a_whole(tmp_path, ca_file, receiver):
    hosts = "127.0.0.1 hook.test\nfe80::1 hook.test\n"
    async with _client(tmp_path, ca_file, hosts) as client:
        with pytest.raises(UrlRefused, match=r"fe80::1, a link-local address"):
            await client.post(check_url(receiver.url(host="hook.test")), HEADERS, b"{}", 1000)
        assert client.connections_opened == 0
    assert receiver.received == []


async def test_vetted_address_with_the_name_kept_for_sni_and_host(tmp_path, ca_file, receiver):
    async with _client(tmp_path, ca_file) as client:
        target = check_url(f"https://hook.test:{receiver.port}/hook?a=1")
        response = await client.post(target, HEADERS, b'{"x":1}', 1000)
    assert response.status == 200 and response.body == b"ok" and not response.truncated
    (got,) = receiver.received
    assert got.headers["host"] == f"hook.test:{receiver.port}"
    assert got.path == "/hook?a=1" and got.body == b'{"x":1}'
    assert got.headers["content-length"] == "7"
    assert got.headers["content-type"] == "application/json"
    # Nothing the receiver could compress (nothing is decompressed), no proxy headers.
    assert "accept-encoding" not in got.headers and "proxy-authorization" not in got.headers


async def test_every_new_connection_is_vetted_again(tmp_path, ca_file, receiver, nursery):
    # DNS rebinding: the name moves to a metadata address between two connections.
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url(host="hook.test"))
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        receiver.stop()  # closes the kept-alive connection: the next needs a new one
        await receiver.start(nursery)
        await trio.sleep(0.05)
        (tmp_path / "hosts").write_text("169.254.169.254 hook.test\n")
        with pytest.raises(UrlRefused, match="a cloud metadata service address"):
            await client.post(target, HEADERS, b"{}", 1000)
        assert client.connections_opened == 1
    assert len(receiver.received) == 1


async def test_certificate_is_checked_against_the_name(tmp_path, ca_file, receiver):
    # other.test reaches the same receiver, whose certificate does not cover that name.
    async with _client(tmp_path, ca_file, "127.0.0.1 other.test\n") as client:
        with pytest.raises(http_client.HttpError, match="TLS certificate not accepted: "
                                                        "Hostname mismatch"):
            await client.post(check_url(f"https://other.test:{receiver.port}/"), HEADERS, b"",
                              1000)
    assert receiver.received == []


async def test_untrusted_ca_is_refused(tmp_path, receiver):
    async with _client(tmp_path, "") as client:
        with pytest.raises(http_client.HttpError, match="unable to get local issuer certificate"):
            await client.post(check_url(receiver.url(host="hook.test")), HEADERS, b"", 1000)


def test_the_operators_ca_is_added_to_the_public_ones(ca_file):
    public = http_client.ssl_context("")
    extended = http_client.ssl_context(ca_file)
    assert len(extended.get_ca_certs()) == len(public.get_ca_certs()) + 1
    assert extended.verify_mode == ssl.CERT_REQUIRED and extended.check_hostname
    with pytest.raises(FileNotFoundError, match=r"outbox\.ca_file /nonexistent\.pem"):
        http_client.ssl_context("/nonexistent.pem")


async def test_connection_refused_is_explained(tmp_path, ca_file, receiver):
    port = receiver.port
    receiver.stop()
    await trio.sleep(0.05)
    async with _client(tmp_path, ca_file) as client:
        with pytest.raises(http_client.HttpError,
                           match=r"^cannot connect: 127\.0\.0\.1: Connection refused$"):
            await client.post(check_url(f"https://hook.test:{port}/"), HEADERS, b"", 1000)


async def test_the_next_vetted_address_is_tried(tmp_path, ca, ca_file, nursery):
    # A name with two addresses: nothing listens on the first, the receiver on the second.
    server = Receiver(trustme_context(ca), [SECRET], host="127.0.0.2")
    await server.start(nursery)
    try:
        async with _client(tmp_path, ca_file, "127.0.0.3 hook.test\n127.0.0.2 hook.test\n"
                           ) as client:
            response = await client.post(check_url(server.url(host="hook.test")), HEADERS,
                                         b"{}", 1000)
        assert response.status == 200 and len(server.received) == 1
    finally:
        server.stop()


async def test_redirects_are_returned_not_followed(tmp_path, ca_file, receiver):
    receiver.reply_next(Reply(302, [("Location", "https://169.254.169.254/")]))
    async with _client(tmp_path, ca_file) as client:
        response = await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
    assert response.status == 302 and response.headers["location"] == "https://169.254.169.254/"
    assert len(receiver.received) == 1


async def test_keep_alive_reuses_one_connection(tmp_path, ca_file, receiver):
    async with _client(tmp_path, ca_file) as client:
        for _ in range(5):
            response = await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
            assert response.status == 200
        assert client.connections_opened == 1
    assert receiver.connections == 1


async def test_connections_are_bounded_by_the_pool(tmp_path, ca_file, receiver):
    # 12 concurrent deliveries over a pool of 4: never more than 4 connections.
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url())

        async def one() -> None:
            assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200

        async with trio.open_nursery() as nursery:
            for _ in range(12):
                nursery.start_soon(one)
        assert client.connections_opened <= 4
    assert len(receiver.received) == 12 and receiver.connections <= 4


async def test_a_connection_closed_by_the_receiver_is_replaced(tmp_path, ca_file, receiver,
                                                                nursery):
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url())
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        receiver.stop()  # closes the kept-alive connection
        await receiver.start(nursery)
        await trio.sleep(0.05)
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        assert client.connections_opened == 2


async def test_a_kept_alive_connection_dropped_as_the_request_goes_out_is_retried_once(
    tmp_path, ca_file, receiver
):
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url())
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        receiver.reply_next(Reply(drop=True))  # the receiver's idle timeout, just then
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        assert client.connections_opened == 2
        # Dropped again on the new connection: that failure is the answer (no third try).
        receiver.reply_next(Reply(drop=True), Reply(drop=True))
        with pytest.raises(http_client.HttpError,
                           match=r"^the receiver closed the connection before replying$"):
            await client.post(target, HEADERS, b"{}", 1000)
        assert client.connections_opened == 3
    assert len(receiver.received) == 5


async def test_reply_is_read_up_to_the_cap_and_the_connection_dropped(tmp_path, ca_file,
                                                                      receiver):
    receiver.reply_next(Reply(200, body=b"y" * 200_000))
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url())
        response = await client.post(target, HEADERS, b"{}", 1000)
        assert response.truncated and response.body == b"y" * 1000
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        assert client.connections_opened == 2  # the first one had unread bytes


async def test_a_reply_exactly_at_the_cap_is_whole(tmp_path, ca_file, receiver):
    receiver.reply_next(Reply(200, body=b"z" * 1000))
    async with _client(tmp_path, ca_file) as client:
        response = await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
        assert response.body == b"z" * 1000 and not response.truncated
        assert (await client.post(check_url(receiver.url()), HEADERS, b"{}", 0)).body == b""


async def test_a_silent_receiver_times_out(tmp_path, ca_file, receiver):
    receiver.reply_next(Reply(hang=True))
    async with _client(tmp_path, ca_file, timeout=0.3) as client:
        with pytest.raises(http_client.HttpError, match=r"^timed out \(ReadTimeout\)$"):
            await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
    receiver.release()


async def test_cookies_are_never_kept(tmp_path, ca_file, receiver):
    receiver.reply_next(Reply(200, [("Set-Cookie", "session=abc; Path=/")]))
    async with _client(tmp_path, ca_file) as client:
        await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
        await client.post(check_url(receiver.url()), HEADERS, b"{}", 1000)
    assert "cookie" not in receiver.received[1].headers


async def test_plain_http_to_localhost(tmp_path, ca_file, nursery):
    # A plain-HTTP receiver on loopback (the only place http is allowed).
    server = Receiver(None)
    await server.start(nursery)
    try:
        async with _client(tmp_path, ca_file) as client:
            target = check_url(f"http://localhost:{server.port}/plain")
            response = await client.post(target, HEADERS, b"{}", 1000)
        assert response.status == 200 and server.received[0].path == "/plain"
    finally:
        server.stop()
