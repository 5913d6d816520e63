"""DHCP never waits on the outbox: leases are granted while every delivery worker is stuck
on a receiver that hangs, and the queued deliveries all go out once it answers again."""

import time

import trio

from ipamd.dhcp import options as o
from ipamd.outbox import scheduler, webhooks
from ipamd.runtime.dhcp_servers import dhcp_server
from ipamd.state import AppState
from ipamd.workers import lease_journal
from tests.conftest import make_config
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.outbox.conftest import SECRET_ENV, fast_outbox
from tests.support.receiver import Reply
from tests.unit.dhcp.packets import mac_bytes, request

CLIENTS = 200
WORKERS = 2
# Far beyond the time the grants need: were DHCP waiting on a delivery, it would wait this
# long for the first one (the receiver never answers) and the grants below would time out.
REQUEST_TIMEOUT = 45.0
GRANT_DEADLINE = 30.0


async def _seed(conn, url):
    await seed_subnet(conn, pools=[("127.77.3.1", "127.77.3.250")])
    await webhooks.create(conn, "test", {"name": "slow", "url": url,
                                         "secret_ref": f"env:{SECRET_ENV}",
                                         "topics": ["lease.granted"]})


async def _counts(conn):
    return dict(await conn.fetchrow(
        """SELECT (SELECT count(*) FROM leases WHERE state = 'active') AS active,
                  (SELECT count(*) FROM outbox WHERE topic = 'lease.granted') AS queued,
                  (SELECT count(*) FROM outbox WHERE state = 'delivered') AS delivered"""))


async def _dora(relay, clients):
    macs = [mac_bytes(500_000 + n) for n in range(clients)]
    discovers = [request(o.DISCOVER, mac, giaddr=RELAY_IP) for mac in macs]
    for msg in discovers:
        await relay.send(msg)
    offers = {m.xid: await relay.reply(m.xid, GRANT_DEADLINE) for m in discovers}
    assert all(offer is not None and offer.message_type == o.OFFER for offer in offers.values())
    requests = [request(o.REQUEST, mac, xid=m.xid, giaddr=RELAY_IP, server_id="127.0.0.1",
                        requested=o.ip_to_str(offers[m.xid].yiaddr))
                for mac, m in zip(macs, discovers, strict=True)]
    for msg in requests:
        await relay.send(msg)
    acks = [await relay.reply(m.xid, GRANT_DEADLINE) for m in requests]
    assert all(ack is not None and ack.message_type == o.ACK for ack in acks)


async def test_leases_are_granted_while_the_receiver_hangs(db, dsn, receiver, ca_file,
                                                           hosts_file):
    receiver.default = Reply(hang=True)
    await db.transaction(_seed, receiver.url(host="hook.test"))
    relay_sock = relay_socket()
    config = make_config(
        dsn, dhcp=dhcp_section(relay_sock.getsockname()[1]),
        outbox=fast_outbox(ca_file, hosts_file, workers=WORKERS,
                           request_timeout_seconds=REQUEST_TIMEOUT,
                           claim_timeout_seconds=REQUEST_TIMEOUT + 15),
    )
    state = AppState(config=config, db=db)
    server = dhcp_server(state)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as inner:
            await inner.start(scheduler.run, state)
            await inner.start(lease_journal.run, state)  # the lease events, from the journal
            await inner.start(server.run)
            relay = Relay(trio.socket.from_stdlib_socket(relay_sock), server.addresses[0])
            inner.start_soon(relay.run)

            started = time.perf_counter()
            with trio.fail_after(GRANT_DEADLINE):
                await _dora(relay, CLIENTS)
            elapsed = time.perf_counter() - started
            print(f"{CLIENTS} leases granted in {elapsed:.2f} s with the receiver hanging")

            # The grants' events follow their journal rows within moments.
            with trio.fail_after(30):
                while (counts := await db.run(_counts))["queued"] < CLIENTS:
                    await trio.sleep(0.05)
            assert counts == {"active": CLIENTS, "queued": CLIENTS, "delivered": 0}
            # Every worker is stuck in a request the receiver never answers. (The events were
            # just queued: a worker may not have claimed its first yet, so wait for both.)
            await receiver.wait_for(WORKERS, timeout=10)
            assert len(receiver.received) == WORKERS

            # The receiver recovers: every queued delivery goes out, none lost.
            receiver.default = Reply()
            receiver.release()
            with trio.fail_after(60):
                while (await db.run(_counts))["delivered"] < CLIENTS:
                    await trio.sleep(0.1)
            delivered = {r.delivery for r in receiver.received}
            assert len(delivered) == CLIENTS
            assert all(r.signature_ok for r in receiver.received)
            scope.cancel()
    relay_sock.close()
