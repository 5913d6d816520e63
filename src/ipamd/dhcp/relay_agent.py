"""Relay Agent Information option (82, RFC 3046) sub-options.

Works on the option 82 *value*. A server echoing option 82 (RFC 3046 2.2)
should copy the raw request bytes rather than re-encode this object, so
``to_bytes`` only needs to be canonical, not byte-identical to the input.
"""

from __future__ import annotations

from collections.abc import Iterable

from ipamd.dhcp.options import MalformedPacket

CIRCUIT_ID = 1
REMOTE_ID = 2
LINK_SELECTION = 5  # RFC 3527
SUBSCRIBER_ID = 6  # RFC 3993
VENDOR_SPECIFIC = 9  # RFC 4243, kept raw
RELAY_AGENT_FLAGS = 10  # RFC 5010, kept raw
SERVER_ID_OVERRIDE = 11  # RFC 5107

_ADDR_SUBOPTS = (LINK_SELECTION, SERVER_ID_OVERRIDE)


class RelayAgentInfo:
    """Decoded option 82.

    ``link_selection`` and ``server_id_override`` are int IPv4 addresses like
    everything else in the codec. Unknown sub-options, and repeats of known
    ones after the first, are kept raw and in order in ``other``.
    """

    __slots__ = (
        "circuit_id",
        "link_selection",
        "other",
        "remote_id",
        "server_id_override",
        "subscriber_id",
    )

    def __init__(
        self,
        circuit_id: bytes | None = None,
        remote_id: bytes | None = None,
        link_selection: int | None = None,
        subscriber_id: bytes | None = None,
        server_id_override: int | None = None,
        other: Iterable[tuple[int, bytes]] = (),
    ) -> None:
        self.circuit_id = circuit_id
        self.remote_id = remote_id
        self.link_selection = link_selection
        self.subscriber_id = subscriber_id
        self.server_id_override = server_id_override
        self.other: list[tuple[int, bytes]] = list(other)

    def _key(self) -> tuple[object, ...]:
        return (
            self.circuit_id,
            self.remote_id,
            self.link_selection,
            self.subscriber_id,
            self.server_id_override,
            self.other,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RelayAgentInfo):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in (
                "circuit_id",
                "remote_id",
                "link_selection",
                "subscriber_id",
                "server_id_override",
            )
            if getattr(self, name) is not None
        )
        if self.other:
            fields = f"{fields}, other={self.other!r}" if fields else f"other={self.other!r}"
        return f"RelayAgentInfo({fields})"

    def to_bytes(self) -> bytes:
        """Option 82 value: known sub-options in code order, then ``other``."""
        out = bytearray()

        def put(code: int, data: bytes) -> None:
            if len(data) > 255:
                raise ValueError(f"relay agent sub-option {code} longer than 255 bytes")
            out.append(code)
            out.append(len(data))
            out.extend(data)

        if self.circuit_id is not None:
            put(CIRCUIT_ID, self.circuit_id)
        if self.remote_id is not None:
            put(REMOTE_ID, self.remote_id)
        if self.link_selection is not None:
            put(LINK_SELECTION, self.link_selection.to_bytes(4, "big"))
        if self.subscriber_id is not None:
            put(SUBSCRIBER_ID, self.subscriber_id)
        if self.server_id_override is not None:
            put(SERVER_ID_OVERRIDE, self.server_id_override.to_bytes(4, "big"))
        for code, data in self.other:
            put(code, data)
        return bytes(out)


def parse_relay_agent_info(value: bytes) -> RelayAgentInfo:
    """Decode an option 82 value; raises ``MalformedPacket("bad_relay_agent")``."""
    info = RelayAgentInfo()
    pos = 0
    n = len(value)
    while pos < n:
        code = value[pos]
        if pos + 1 >= n:
            raise MalformedPacket("bad_relay_agent", f"sub-option {code} has no length")
        end = pos + 2 + value[pos + 1]
        if end > n:
            raise MalformedPacket("bad_relay_agent", f"sub-option {code} runs past option end")
        data = value[pos + 2 : end]
        pos = end
        if code == CIRCUIT_ID and info.circuit_id is None:
            info.circuit_id = data
        elif code == REMOTE_ID and info.remote_id is None:
            info.remote_id = data
        elif code == SUBSCRIBER_ID and info.subscriber_id is None:
            info.subscriber_id = data
        elif code in _ADDR_SUBOPTS:
            if len(data) != 4:
                raise MalformedPacket("bad_relay_agent", f"sub-option {code} must be 4 bytes")
            addr = int.from_bytes(data, "big")
            if code == LINK_SELECTION and info.link_selection is None:
                info.link_selection = addr
            elif code == SERVER_ID_OVERRIDE and info.server_id_override is None:
                info.server_id_override = addr
            else:
                info.other.append((code, data))
        else:
            info.other.append((code, data))
    return info
