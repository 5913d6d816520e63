import pytest

from ipamd.outbox import topics


def test_star_is_the_default_shape():
    assert topics.parse("*") == ["*"]
    assert topics.matches(["*"], "lease.granted")


def test_list_is_trimmed_deduplicated_and_ordered():
    parsed = topics.parse(" lease.granted, ipam.audit ,lease.granted")
    assert parsed == ["lease.granted", "ipam.audit"]
    assert topics.render(parsed) == "lease.granted,ipam.audit"
    assert topics.matches(parsed, "ipam.audit")
    assert not topics.matches(parsed, "lease.expired")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "comma-separated"),
        ("lease.granted,,ipam.audit", "empty item"),
        ("lease.*", "unknown topic 'lease.*'"),
        ("dns.updated", "unknown topic"),
        ("*,ipam.audit", "stands alone"),
    ],
)
def test_refused(value, message):
    with pytest.raises(ValueError, match=None) as caught:
        topics.parse(value)
    assert message in str(caught.value)
