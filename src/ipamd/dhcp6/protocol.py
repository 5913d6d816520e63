"""DHCPv6 numbers (RFC 8415 §7 and the options' own RFCs) and the one parse error, ``Malformed``.

``Malformed`` mirrors DHCPv4's ``dhcp.options.MalformedPacket``: it carries a ``reason`` from
the fixed set :data:`REASONS` (so the server keeps one drop counter per reason, as
``dhcp.counters`` does for DHCPv4) and a free-form ``detail`` for the log line. Anything
else escaping the codec is a bug, and the fuzz tests (tests/unit/dhcp6/) say so.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- errors

# Fixed set so the server can keep one drop counter per reason.
REASONS: frozenset[str] = frozenset(
    {
        "too_short",  # fewer octets than the message's fixed header
        "unknown_message_type",  # msg-type outside RFC 8415's 1..13
        "truncated_option",  # fewer than 4 octets left for an option's code and length
        "option_too_long",  # an option's length runs past its message (or enclosing option)
        "relay_too_deep",  # Relay-forward/-reply nested deeper than HOP_COUNT_LIMIT allows
        "hop_limit",  # a relay message's hop-count above HOP_COUNT_LIMIT (RFC 8415 §19.1.2)
        "no_relay_message",  # a relay message without exactly one Relay Message option (9)
        "bad_relay_nesting",  # a Relay-reply inside a Relay-forward, or the other way round
        "bad_option_length",  # a fixed-size option (7, 8, 14, 20, 82...) of the wrong length
        "bad_duid",  # Client/Server Identifier not a DUID (RFC 8415 §11)
        "bad_ia",  # IA_NA/IA_PD shorter than IAID + T1 + T2
        "bad_ia_address",  # IA Address shorter than address + lifetimes
        "bad_ia_prefix",  # IA Prefix too short or prefix-length above 128
        "bad_status_code",  # Status Code too short or message not UTF-8
        "bad_option_request",  # Option Request of an odd length
        "bad_user_class",  # User Class data items' lengths do not fill the option
        "bad_vendor_class",  # Vendor Class too short or its items' lengths do not fill it
        "bad_vendor_opts",  # Vendor-specific Information too short or bad sub-options
        "bad_domain_name",  # a name in option 24, 39 or 56 not uncompressed wire format
        "bad_fqdn",  # Client FQDN without its flags octet (RFC 4704 §4.1)
        "bad_ntp_server",  # NTP Server sub-options malformed (RFC 5908 §4)
        "bad_bootfile_url",  # Boot File URL not ASCII (RFC 5970 §3.1)
        "bad_remote_id",  # Remote-Id shorter than its enterprise number plus one octet
        "bad_subscriber_id",  # Subscriber-Id empty (RFC 4580 §2)
        "bad_client_link_layer",  # Client Link-Layer Address without an address (RFC 6939)
    }
)


class Malformed(ValueError):
    """A DHCPv6 message (or one of its options) cannot be decoded.

    ``reason`` is always one of :data:`REASONS`.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in REASONS:  # programming error, not a packet error
            raise AssertionError(f"unknown Malformed reason {reason!r}")
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail

    def __reduce__(self) -> tuple[type[Malformed], tuple[str, str]]:
        # args[0] is the formatted message, so default pickling would not round-trip.
        return (type(self), (self.reason, self.detail))


# --------------------------------------------------------------------------- message types
# RFC 8415 §7.3. Types above 13 (leasequery, DHCPv4-over-DHCPv6, failover...) are other
# protocols' messages: this server parses none of them (reason ``unknown_message_type``).

SOLICIT = 1
ADVERTISE = 2
REQUEST = 3
CONFIRM = 4
RENEW = 5
REBIND = 6
REPLY = 7
RELEASE = 8
DECLINE = 9
RECONFIGURE = 10
INFORMATION_REQUEST = 11
RELAY_FORW = 12
RELAY_REPL = 13

MESSAGE_TYPE_NAMES: dict[int, str] = {
    SOLICIT: "SOLICIT",
    ADVERTISE: "ADVERTISE",
    REQUEST: "REQUEST",
    CONFIRM: "CONFIRM",
    RENEW: "RENEW",
    REBIND: "REBIND",
    REPLY: "REPLY",
    RELEASE: "RELEASE",
    DECLINE: "DECLINE",
    RECONFIGURE: "RECONFIGURE",
    INFORMATION_REQUEST: "INFORMATION-REQUEST",
    RELAY_FORW: "RELAY-FORW",
    RELAY_REPL: "RELAY-REPL",
}
RELAY_TYPES = frozenset({RELAY_FORW, RELAY_REPL})
# What clients send (RFC 8415 §16): the messages a server answers.
CLIENT_TYPES = frozenset(
    {SOLICIT, REQUEST, CONFIRM, RENEW, REBIND, RELEASE, DECLINE, INFORMATION_REQUEST}
)

# RFC 8415 §7.6: a relay discards a Relay-forward whose hop-count is already this.
HOP_COUNT_LIMIT = 8
# So a server sees hop-counts 0..8: at most nine Relay-forwards around a client's message.
MAX_RELAY_DEPTH = HOP_COUNT_LIMIT + 1

# --------------------------------------------------------------------------- option codes

OPTION_CLIENTID = 1
OPTION_SERVERID = 2
OPTION_IA_NA = 3
OPTION_IA_TA = 4
OPTION_IAADDR = 5
OPTION_ORO = 6
OPTION_PREFERENCE = 7
OPTION_ELAPSED_TIME = 8
OPTION_RELAY_MSG = 9
OPTION_AUTH = 11
OPTION_UNICAST = 12
OPTION_STATUS_CODE = 13
OPTION_RAPID_COMMIT = 14
OPTION_USER_CLASS = 15
OPTION_VENDOR_CLASS = 16
OPTION_VENDOR_OPTS = 17
OPTION_INTERFACE_ID = 18
OPTION_RECONF_MSG = 19
OPTION_RECONF_ACCEPT = 20
OPTION_DNS_SERVERS = 23  # RFC 3646
OPTION_DOMAIN_LIST = 24  # RFC 3646
OPTION_IA_PD = 25
OPTION_IAPREFIX = 26
OPTION_REMOTE_ID = 37  # RFC 4649
OPTION_SUBSCRIBER_ID = 38  # RFC 4580
OPTION_CLIENT_FQDN = 39  # RFC 4704
OPTION_NTP_SERVER = 56  # RFC 5908
OPTION_BOOTFILE_URL = 59  # RFC 5970
OPTION_CLIENT_LINKLAYER_ADDR = 79  # RFC 6939
OPTION_SOL_MAX_RT = 82
OPTION_INF_MAX_RT = 83

# --------------------------------------------------------------------------- status codes
# RFC 8415 §21.13 (and §25's registry).

STATUS_SUCCESS = 0
STATUS_UNSPEC_FAIL = 1
STATUS_NO_ADDRS_AVAIL = 2
STATUS_NO_BINDING = 3
STATUS_NOT_ON_LINK = 4
STATUS_USE_MULTICAST = 5
STATUS_NO_PREFIX_AVAIL = 6

STATUS_NAMES: dict[int, str] = {
    STATUS_SUCCESS: "Success",
    STATUS_UNSPEC_FAIL: "UnspecFail",
    STATUS_NO_ADDRS_AVAIL: "NoAddrsAvail",
    STATUS_NO_BINDING: "NoBinding",
    STATUS_NOT_ON_LINK: "NotOnLink",
    STATUS_USE_MULTICAST: "UseMulticast",
    STATUS_NO_PREFIX_AVAIL: "NoPrefixAvail",
}

# --------------------------------------------------------------------------- DUID types
# RFC 8415 §11 (DUID-UUID: RFC 6355).

DUID_LLT = 1
DUID_EN = 2
DUID_LL = 3
DUID_UUID = 4

# --------------------------------------------------------------------------- sub-options

NTP_SUBOPTION_SRV_ADDR = 1  # RFC 5908 §4.1
NTP_SUBOPTION_MC_ADDR = 2  # RFC 5908 §4.2
NTP_SUBOPTION_SRV_FQDN = 3  # RFC 5908 §4.3

# RFC 4704 §4.1: the Client FQDN option's flag bits; the other five must be zero.
FQDN_S = 0x01  # the server should perform the AAAA update
FQDN_O = 0x02  # the server overrode the client's S (servers set it)
FQDN_N = 0x04  # the server should perform no updates
FQDN_MBZ = 0xF8

HTYPE_ETHER = 1  # IANA hardware type, as in DUID-LL(T) and option 79
