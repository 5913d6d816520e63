"""dhcp6.validate: RFC 8415 §16's rules on which client messages a server acts on."""

from __future__ import annotations

import pytest

from ipamd.dhcp6.codec import Message, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.validate import DROP_REASONS, validate
from tests.unit.dhcp6.wire import DUID_EN, DUID_LL, DUID_LLT, client, ia, opt

OURS = Duid(DUID_EN)
CID = opt(1, DUID_LLT)
SID = opt(2, DUID_EN)
OTHER_SID = opt(2, DUID_LL)
IA_NA = opt(3, ia(1, 0, 0))
IA_PD = opt(25, ia(1, 0, 0))
IA_TA = opt(4, (1).to_bytes(4, "big"))


def _check(msg_type: int, *options: bytes) -> str | None:
    message = parse(client(msg_type, 0x42, *options))
    assert isinstance(message, Message)
    return validate(message, OURS)


@pytest.mark.parametrize(("msg_type", "options", "reason"), [
    # §16.2 Solicit: a Client Identifier, no Server Identifier.
    (1, (CID, IA_NA), None),
    (1, (IA_NA,), "no_client_id"),
    (1, (CID, SID, IA_NA), "server_id_present"),
    # §16.4 Request, §16.6 Renew, §16.8 Decline, §16.9 Release: both, and the server is us.
    (3, (CID, SID, IA_NA), None),
    (3, (CID, IA_NA), "no_server_id"),
    (3, (SID, IA_NA), "no_client_id"),
    (3, (CID, OTHER_SID, IA_NA), "not_for_us"),
    (5, (CID, SID, IA_PD), None),
    (5, (CID, OTHER_SID, IA_PD), "not_for_us"),
    (9, (CID, SID, IA_NA), None),
    (9, (CID, IA_NA), "no_server_id"),
    (8, (CID, SID, IA_NA), None),
    (8, (SID, IA_NA), "no_client_id"),
    # §16.5 Confirm, §16.7 Rebind: a Client Identifier, no Server Identifier.
    (4, (CID, IA_NA), None),
    (4, (CID, SID, IA_NA), "server_id_present"),
    (6, (CID, IA_PD), None),
    (6, (IA_PD,), "no_client_id"),
    (6, (CID, SID, IA_PD), "server_id_present"),
    # §16.12 Information-request: the Client Identifier optional; no IA; a Server Id ours.
    (11, (), None),
    (11, (CID,), None),
    (11, (CID, SID), None),
    (11, (CID, OTHER_SID), "not_for_us"),
    (11, (CID, IA_NA), "ia_in_information_request"),
    (11, (IA_PD,), "ia_in_information_request"),
    (11, (IA_TA,), "ia_in_information_request"),
    # Two identities are no identity (Kea drops them too).
    (1, (CID, opt(1, DUID_LL), IA_NA), "multiple_client_id"),
    (3, (CID, SID, SID, IA_NA), "multiple_server_id"),
    (11, (SID, OTHER_SID), "multiple_server_id"),
    # What only servers send.
    (2, (CID, SID), "not_client_message"),
    (7, (CID, SID), "not_client_message"),
    (10, (CID, SID), "not_client_message"),
])
def test_rfc_8415_section_16(msg_type: int, options: tuple[bytes, ...], reason: str | None):
    assert _check(msg_type, *options) == reason
    assert reason is None or reason in DROP_REASONS


def test_every_reason_is_reachable():
    reached = {_check(1, IA_NA), _check(1, CID, SID), _check(3, CID), _check(3, CID, OTHER_SID),
               _check(1, CID, CID), _check(3, CID, SID, SID), _check(11, IA_NA), _check(7, CID)}
    assert reached == DROP_REASONS
