"""The delivery client connects only to vetted addresses, keeping the name for TLS and Host;
keeps connections alive; never follows redirects; reads replies up to a cap."""

import pytest
import trio

from ipamd.outbox import http11
from ipamd.outbox.urlguard import Resolver, UrlRefused, check_url
from tests.support.receiver import Reply

HEADERS = [("Content-Type", "application/json")]


def _client(tmp_path, ca_file, hosts_text="127.0.0.1 hook.test\n", **kw):
    hosts = tmp_path / "hosts"
    hosts.write_text(hosts_text)
    return http11.Client(Resolver(str(hosts)), http11.ssl_context(ca_file), **kw)


async def test_name_resolving_to_a_forbidden_address_is_never_connected(
    tmp_path, ca_file, receiver
):
    async with _client(tmp_path, ca_file, "169.254.169.254 evil.test\n") as client:
        with pytest.raises(UrlRefused, match=r"evil\.test resolves to 169\.254\.169\.254"):
            await client.post(check_url(f"https://evil.test:{receiver.port}/hook"), HEADERS,
                              b"{}", 1000)
        assert client.connections_opened == 0
    assert receiver.received == []


async def test_vetted_address_with_the_name_kept_for_sni_and_host(tmp_path, ca_file, receiver):
    async with _client(tmp_path, ca_file) as client:
        target = check_url(f"https://hook.test:{receiver.port}/hook?a=1")
        response = await client.post(target, HEADERS, b'{"x":1}', 1000)
    assert response.status == 200 and response.body == b"ok"
    (got,) = receiver.received
    assert got.headers["host"] == f"hook.test:{receiver.port}"
    assert got.path == "/hook?a=1" and got.body == b'{"x":1}'
    assert got.headers["content-length"] == "7"


async def test_certificate_is_checked_against_the_name(tmp_path, ca_file, receiver):
    # other.test reaches the same receiver, whose certificate does not cover that name.
    async with _client(tmp_path, ca_file, "127.0.0.1 other.test\n") as client:
        with pytest.raises(http11.HttpError, match="Hostname mismatch"):
            await client.post(check_url(f"https://other.test:{receiver.port}/"), HEADERS, b"",
                              1000)


async def test_untrusted_ca_is_refused(tmp_path, receiver):
    async with _client(tmp_path, "") as client:
        with pytest.raises(http11.HttpError, match="unable to get local issuer certificate"):
            await client.post(check_url(receiver.url(host="hook.test")), HEADERS, b"", 1000)


async def test_connection_refused_is_explained(tmp_path, ca_file, receiver):
    port = receiver.port
    receiver.stop()
    await trio.sleep(0.05)
    async with _client(tmp_path, ca_file) as client:
        with pytest.raises(http11.HttpError, match=r"127\.0\.0\.1: Connection refused"):
            await client.post(check_url(f"https://hook.test:{port}/"), HEADERS, b"", 1000)


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


async def test_reply_is_read_up_to_the_cap_and_the_connection_dropped(tmp_path, ca_file,
                                                                      receiver):
    receiver.reply_next(Reply(200, body=b"y" * 200_000))
    async with _client(tmp_path, ca_file) as client:
        target = check_url(receiver.url())
        response = await client.post(target, HEADERS, b"{}", 1000)
        assert response.truncated and response.body == b"y" * 1000
        assert (await client.post(target, HEADERS, b"{}", 1000)).status == 200
        assert client.connections_opened == 2  # the first one had unread bytes


async def test_plain_http_to_localhost(tmp_path, ca_file, nursery):
    # A plain-HTTP receiver on loopback (the only place http is allowed).
    from tests.support.receiver import Receiver

    server = Receiver(None)
    await server.start(nursery)
    try:
        async with _client(tmp_path, ca_file) as client:
            target = check_url(f"http://localhost:{server.port}/plain")
            response = await client.post(target, HEADERS, b"{}", 1000)
        assert response.status == 200 and server.received[0].path == "/plain"
    finally:
        server.stop()
