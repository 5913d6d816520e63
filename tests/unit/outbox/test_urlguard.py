import ipaddress

import pytest
import trio

from ipamd.outbox.urlguard import (
    HostsFile,
    ResolveError,
    Resolver,
    UrlRefused,
    check_url,
    embedded_ipv4,
    forbidden_reason,
)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/ipamd",
        "https://hooks.example.com:8443/a?b=c",
        "https://10.1.2.3/hook",  # internal receivers are normal for an appliance
        "https://[2001:db8::1]/hook",
        "https://localhost:9000/x",
        "http://localhost:9000/x",
        "http://127.0.0.1:8000/x",
        "http://[::1]:8000/x",
        "https://münchen.example/x",
        "https://receiver_1.internal/x",
    ],
)
def test_allowed(url):
    check_url(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "scheme must be https"),
        ("example.com/x", "scheme must be https"),
        ("http://example.com/x", "plain http is allowed only for localhost"),
        ("http://10.0.0.1/x", "plain http is allowed only for localhost"),
        ("https://user:pw@example.com/x", "credentials"),
        ("https://example.com/x#frag", "fragment"),
        ("https:///x", "host is required"),
        ("https://exa mple.com/", "spaces"),
        ("https://example.com/\x00", "control characters"),
        ("https://" + "a" * 2100 + ".com/", "at most 2048"),
        # link-local and metadata
        ("https://169.254.169.254/latest/meta-data", "cloud metadata"),
        ("https://169.254.10.1/", "link-local"),
        ("https://[fe80::1]/", "link-local"),
        ("https://[fe80::1%25eth0]/", "link-local"),
        ("https://[fd00:ec2::254]/", "cloud metadata"),
        ("https://[fd20:ce::254]/", "cloud metadata"),
        ("https://100.100.100.200/", "cloud metadata"),
        ("https://168.63.129.16/", "cloud metadata"),
        ("https://metadata.google.internal/computeMetadata/v1/", "cloud metadata"),
        ("https://METADATA.google.internal./", "cloud metadata"),
        # unspecified, multicast, broadcast
        ("https://0.0.0.0/", "unspecified"),
        ("https://0.1.2.3/", "unspecified"),
        ("https://[::]/", "unspecified"),
        ("https://224.0.0.1/", "multicast"),
        ("https://[ff02::1]/", "multicast"),
        ("https://255.255.255.255/", "broadcast"),
        # IPv6 forms that embed a forbidden IPv4 address
        ("https://[::ffff:169.254.169.254]/", "IPv6 form of 169.254.169.254"),
        ("https://[::169.254.169.254]/", "IPv6 form of 169.254.169.254"),
        ("https://[::ffff:0:169.254.169.254]/", "IPv6 form of 169.254.169.254"),
        ("https://[64:ff9b::a9fe:a9fe]/", "IPv6 form of 169.254.169.254"),
        ("https://[64:ff9b:1::a9fe:a9fe]/", "IPv6 form of 169.254.169.254"),
        ("https://[2002:a9fe:a9fe::1]/", "IPv6 form of 169.254.169.254"),
        ("https://[2001:0:4136:e378:8000:63bf:5601:5601]/", "IPv6 form of 169.254.169.254"),
        ("https://[fe90::5efe:a9fe:a9fe]/", "link-local"),
        ("https://[2001:db8::5efe:a9fe:a9fe]/", "IPv6 form of 169.254.169.254"),
        ("https://[::ffff:0.0.0.0]/", "IPv6 form of 0.0.0.0"),
        ("https://[::ffff:224.0.0.1]/", "multicast"),
        # numeric shorthands that resolvers turn into addresses
        ("https://2852039166/", "numeric host"),
        ("https://0xa9.0xfe.0xa9.0xfe/", "numeric host"),
        ("https://0251.0376.0251.0376/", "not a valid URL"),  # httpx refuses it first
        ("https://169.254.43518/", "numeric host"),
        ("https://127.1/", "numeric host"),
    ],
)
def test_refused(url, message):
    with pytest.raises(UrlRefused) as caught:
        check_url(url)
    assert message in str(caught.value), str(caught.value)


def test_teredo_client_is_the_inverted_ipv4():
    # Teredo client 169.254.169.254 is stored as its bitwise inverse (0x5601 5601).
    address = ipaddress.ip_address("2001:0:4136:e378:8000:63bf:5601:5601")
    assert ipaddress.ip_address("169.254.169.254") in embedded_ipv4(address)


def test_allowed_embedded_forms_pass():
    assert forbidden_reason(ipaddress.ip_address("::ffff:10.1.2.3")) is None
    assert forbidden_reason(ipaddress.ip_address("2002:0a01:0203::1")) is None
    assert forbidden_reason(ipaddress.ip_address("::1")) is None
    assert forbidden_reason(ipaddress.ip_address("127.0.0.1")) is None


def test_hosts_file_is_reread_when_it_changes(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("127.0.0.1 hook.test  # comment\n::1 six.test\n")
    hosts = HostsFile(str(path))
    assert hosts.lookup("hook.test") == [ipaddress.ip_address("127.0.0.1")]
    path.write_text("169.254.169.254 hook.test other.test\n")
    assert hosts.lookup("hook.test") == [ipaddress.ip_address("169.254.169.254")]
    assert hosts.lookup("six.test") is None


async def test_resolver_vets_every_answer(tmp_path):
    path = tmp_path / "hosts"
    path.write_text(
        "127.0.0.1 good.test\n127.0.0.1 mixed.test\n169.254.169.254 mixed.test\n"
        "10.9.9.9 localhost\n"
    )
    resolver = Resolver(str(path))
    assert await resolver.vetted("good.test", 443) == [ipaddress.ip_address("127.0.0.1")]
    with pytest.raises(UrlRefused, match=r"mixed.test resolves to 169.254.169.254, a cloud"):
        await resolver.vetted("mixed.test", 443)
    with pytest.raises(UrlRefused, match="not a loopback address"):
        await resolver.vetted("localhost", 443)


async def test_resolver_literal_and_failure():
    resolver = Resolver()
    assert await resolver.vetted("10.1.2.3", 443) == [ipaddress.ip_address("10.1.2.3")]
    with pytest.raises(ResolveError, match="cannot resolve"), trio.fail_after(20):
        await resolver.resolve("no-such-host.invalid", 443)
