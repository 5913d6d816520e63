"""The DHCPv6 decision, free of sockets and SQL (RFC 8415 §18.3): what to answer, what to commit.

``decide(message, link, bindings, server_duid, now)`` takes a client's message (already
unwrapped from its relays, ``relay.unwrap``), the link its relay named (``Plan6.link_for``),
what the lease store knows (:class:`~ipamd.dhcp6.plan.Bindings`) and returns a
:class:`Decision`: the reply, the lease changes that must be committed *before* it is sent
(a Reply that grants, renews, releases or declines goes out only after its commit, as in
DHCPv4: a kill -9 loses no acknowledged binding), or a drop reason.

Per message type:

* Solicit → Advertise with the addresses/prefixes a Request would get; nothing written.
  With Rapid Commit (client asks, link allows; §18.3.1) → Reply, changes to commit.
* Request → Reply; each IA gets its address/prefix (GRANT, or RENEW when it is the one the
  client holds), or the IA's status NoAddrsAvail / NoPrefixAvail (§18.3.2).
* Renew, Rebind → Reply extending the IA's bindings (RENEW); an IA this server never bound
  gets NoBinding (this server is authoritative, as the DHCPv4 one: it does not make up a
  binding on Renew); on Rebind, addresses not on the link come back with lifetimes 0
  (§18.3.4, §18.3.5). Addresses the client lists but does not hold come back with
  lifetimes 0, so it stops using them.
* Release, Decline → Reply with Success; each bound address listed is RELEASEd/DECLINEd;
  IAs with nothing bound come back with NoBinding (§18.3.7, §18.3.8).
* Confirm → Success if every address is on the link, NotOnLink if not; nothing to check
  (no addresses, no link) → no answer (§18.3.3).
* Information-request → Reply with the options asked for (§18.3.6).

Which address or prefix, and how Renew/Rebind extend bindings: ``assign``. The decision's
vocabulary (``Decision``, ``LeaseChange``, ``ChangeKind``, the per-message ``Tx``):
``decision``.

Options: those the client asks for in its Option Request (§21.7) that its link carries,
in the client's order. Client classes (``classify``) open the pools kept for them: a
client's classes' pools are probed first, then those without a class; an address in a
pool kept for a class the client lacks is never its (a held one is not given again).
The Client FQDN option (39, RFC 4704): on a link whose subnet performs DNS updates, the
client's name (in the subnet's zone) goes with its addresses' changes (the lease's fqdn:
its events carry it to the DDNS path, AAAA + ip6.arpa PTR + DHCID from the DUID), and the
reply's option 39 says what the server will do. Not yet here (docs/dhcpv6.md, "Not yet"): IA_TA,
Reconfigure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ipamd.core import dnsname, dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.assign import assign_all, extend_na, extend_pd
from ipamd.dhcp6.classify import NO_CLASSES
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.decision import Asked, Tx
from ipamd.dhcp6.decision import ChangeKind as ChangeKind
from ipamd.dhcp6.decision import Decision as Decision
from ipamd.dhcp6.decision import LeaseChange as LeaseChange
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import (
    ClientFqdn,
    ClientId,
    IaNa,
    IaPd,
    Option,
    RapidCommit,
    ServerId,
    StatusCode,
)
from ipamd.dhcp6.plan import Bindings, IaType, Link
from ipamd.dhcp6.validate import DROP_REASONS as VALIDATION_DROPS
from ipamd.dhcp6.validate import validate

MAX_IAS = 16  # IA_NA plus IA_PD per message: clients send one or two; more is an attack

DROP_REASONS = VALIDATION_DROPS | {
    "no_link",  # the relay's link-address (or the interface) names no IPv6 subnet
    "nothing_to_confirm",  # a Confirm without addresses (§18.3.3: no reply)
    "too_many_ias",  # more than MAX_IAS IA options: one message would take a pool's worth
    "duplicate_iaid",  # two IAs of one type with one IAID (RFC 8415 §12: unique per type)
}



def decide(message: Message, link: Link | None, bindings: Bindings, server_duid: Duid,
           now: float, classes: frozenset[str] = NO_CLASSES) -> Decision:
    """The answer to one client message (see the module docstring); ``classes`` are the
    client classes it matched (``classify.classify``): pools kept for other classes are
    not its to use."""
    reason = validate(message, server_duid)
    if reason is not None:
        return Decision(drop=reason)
    if message.msg_type == p.INFORMATION_REQUEST:
        return _information_request(message, link, server_duid)
    asked = Asked.read(message)
    if link is None or asked.client_id is None:  # validate() saw to the Client Identifier
        return Decision(drop="no_link")
    ia_nas, ia_pds = asked.ia_nas, asked.ia_pds
    if len(ia_nas) + len(ia_pds) > MAX_IAS:
        return Decision(drop="too_many_ias")
    if (len(ia_nas) > 1 and _repeats(ia.iaid for ia in ia_nas)) or \
            (len(ia_pds) > 1 and _repeats(ia.iaid for ia in ia_pds)):
        return Decision(drop="duplicate_iaid")
    tx = Tx(message, asked.client_id.duid, link, bindings, server_duid, now, classes, asked)
    tx.fqdn = _registered_name(asked.fqdn, link)
    return _HANDLERS[message.msg_type](tx)


def _registered_name(asked: ClientFqdn | None, link: Link) -> str | None:
    """The name this server registers for the client (no trailing dot), from its Client
    FQDN option (39) in the link's zone (a partial name or one outside the zone becomes
    its first label in the zone, as for DHCPv4's option 81); None: no DNS update."""
    if asked is None or link.ddns_zone is None or asked.flags & p.FQDN_N:
        return None  # RFC 4704 §6: N=1 asks the server to perform no updates; honoured
    return dnsname.ddns_fqdn(None, asked.name, link.ddns_zone)


def fqdn_flags(client_flags: int, updates: bool) -> int:
    """Our option 39's flags, what this server will do (RFC 4704 §4.1, §6): S=1 when it
    updates the AAAA (and PTR) records; N=1 when it performs no update (then S=0); O=1
    exactly when our S differs from the client's."""
    flags = p.FQDN_S if updates else p.FQDN_N
    if (flags ^ client_flags) & p.FQDN_S:
        flags |= p.FQDN_O
    return flags


def _fqdn_answer(tx: Tx) -> list[Option]:
    """RFC 4704 §6: the option goes back only when the client sent it and asked for it in
    its Option Request; its name is the one registered (else the client's, echoed)."""
    asked = tx.asked.fqdn
    if asked is None or p.OPTION_CLIENT_FQDN not in tx.asked.requested:
        return []
    if tx.fqdn is None:
        return [ClientFqdn(fqdn_flags(asked.flags, False), asked.labels, asked.absolute)]
    return [ClientFqdn(fqdn_flags(asked.flags, True), dnswire.labels_of(tx.fqdn), True)]


def _repeats(iaids: Iterable[int]) -> bool:
    seen: set[int] = set()
    for iaid in iaids:
        if iaid in seen:
            return True
        seen.add(iaid)
    return False


# --------------------------------------------------------------------------- messages


def _solicit(tx: Tx) -> Decision:
    tx.commit = tx.asked.rapid_commit and tx.link.rapid_commit
    body: list[Option] = [RapidCommit()] if tx.commit else []
    body += assign_all(tx)
    if not tx.commit:
        return Decision(_reply(tx, p.ADVERTISE, body))
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _request(tx: Tx) -> Decision:
    return Decision(_reply(tx, p.REPLY, assign_all(tx)), tuple(tx.changes))


def _renew(tx: Tx) -> Decision:
    body: list[Option] = [extend_na(tx, ia, rebind=False) for ia in tx.asked.ia_nas]
    body += [extend_pd(tx, ia, rebind=False) for ia in tx.asked.ia_pds]
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _rebind(tx: Tx) -> Decision:
    body: list[Option] = [extend_na(tx, ia, rebind=True) for ia in tx.asked.ia_nas]
    body += [extend_pd(tx, ia, rebind=True) for ia in tx.asked.ia_pds]
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _release(tx: Tx) -> Decision:
    return _end(tx, ChangeKind.RELEASE, with_prefixes=True)


def _decline(tx: Tx) -> Decision:
    # §18.3.8: Decline is about addresses found in use on the link; IA_PDs are not declined.
    return _end(tx, ChangeKind.DECLINE, with_prefixes=False)


def _confirm(tx: Tx) -> Decision:
    addresses = [a.address for ia in tx.asked.ia_nas for a in ia.addresses]
    if not addresses:
        return Decision(drop="nothing_to_confirm")
    on_link = all(address in tx.link.network for address in addresses)
    status = StatusCode(p.STATUS_SUCCESS, "all addresses on link") if on_link else \
        StatusCode(p.STATUS_NOT_ON_LINK, "not on this link")
    return Decision(_reply(tx, p.REPLY, [status], with_options=False))


def _information_request(message: Message, link: Link | None, server_duid: Duid) -> Decision:
    body: list[Option] = [ServerId(server_duid)]
    if message.client_duid is not None:
        body.append(ClientId(message.client_duid))
    if link is not None:
        body += link.requested(message.requested_codes)
    return Decision(Message(p.REPLY, message.transaction_id, body))


_HANDLERS: dict[int, Callable[[Tx], Decision]] = {
    p.SOLICIT: _solicit,
    p.REQUEST: _request,
    p.RENEW: _renew,
    p.REBIND: _rebind,
    p.RELEASE: _release,
    p.DECLINE: _decline,
    p.CONFIRM: _confirm,
}


def _reply(tx: Tx, msg_type: int, body: list[Option], with_options: bool = True) -> Message:
    # The client's own Client Identifier goes back: the option as it came is ClientId(duid).
    client_id: Option = tx.asked.client_id or ClientId(tx.duid)
    options: list[Option] = [ServerId(tx.server_duid), client_id, *body]
    if with_options:
        options += _fqdn_answer(tx)
        options += tx.link.requested(tx.asked.requested)
    return Message(msg_type, tx.message.transaction_id, options)



def _end(tx: Tx, kind: ChangeKind, *, with_prefixes: bool) -> Decision:
    """Release or Decline: end each listed binding of the client; NoBinding per IA that has
    none of them; Success on the whole (§18.3.7, §18.3.8)."""
    body: list[Option] = []
    for ia in tx.asked.ia_nas:
        held = {b.address for b in tx.bindings.of(tx.duid, ia.iaid, IaType.NA, tx.now)}
        ending = [a.address for a in ia.addresses if a.address in held]
        for address in dict.fromkeys(ending):
            tx.change(kind, IaType.NA, ia.iaid, address, 128, live=False)
        if not ending:
            body.append(IaNa(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding"),)))
    for pd in tx.asked.ia_pds if with_prefixes else ():
        owned = {b.prefix for b in tx.bindings.of(tx.duid, pd.iaid, IaType.PD, tx.now)}
        prefixes = [n.network for n in pd.prefixes if n.network in owned]
        for prefix in dict.fromkeys(prefixes):
            tx.change(kind, IaType.PD, pd.iaid, prefix.network_address, prefix.prefixlen,
                      live=False)
        if not prefixes:
            body.append(IaPd(pd.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding"),)))
    done = "released" if kind is ChangeKind.RELEASE else "declined"
    body.insert(0, StatusCode(p.STATUS_SUCCESS, done))
    return Decision(_reply(tx, p.REPLY, body, with_options=False), tuple(tx.changes))

