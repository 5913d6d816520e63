"""The DHCPv6 server's room (RFC 8415, relay-served; docs/dhcpv6.md).

What is here so far is pure — no sockets, no SQL: ``protocol`` (numbers, ``Malformed`` and
its drop reasons), ``codec`` (messages), ``options`` (each option's class: ``option_framing``,
``option_common``, ``option_classes``, ``option_decoders``), ``duid``
(DUIDs read, rendered and made for the server), ``relay`` (Relay-forward chains
unwrapped and Relay-replies built), ``validate`` (RFC 8415 §16: which client messages a
server acts on), ``plan`` (links, pools, delegation pools, reservations in memory; the
``Bindings`` the lease store answers) and ``engine`` (the decision: reply, and the lease
changes to commit before it is sent; ``decision``, ``assign``).
It shares the lease store, the plan and the committer with ``dhcp/`` (docs/DEVELOPING.md), and
anything both servers need goes to ``core`` rather than being copied.
"""

from ipamd.dhcp import compiled as _compiled

# The packet work compiled with DHCPv4's hot path (one build: ipamd.dhcp.compiled.HOT_PATH).
_compiled.activate(__path__, room="dhcp6")
