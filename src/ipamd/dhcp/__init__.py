"""DHCPv4 wire codec and server.

How a packet flows (each step one small module, the decision free of sockets):

    sockets ─ server.on_datagram ─ codec.parse      (overload: stale packets and, while
      │                                               packets wait, new Discovers shed)
      └ engine.decide: accept → subnet_select → identity → classify → allocate (engine)
          ├ Reply now (Inform, NAK, an Offer that needs no write) ─ reply → destination
          └ Op ─ committer (group commit, Requests first) ─ leasestore.commit: one
                 statement per batch, on the committer's own ``sessions``
                └ engine.finish ─ reply → destination ─ sent only after the commit
                  (a big batch's answers paced out in bursts)

State the hot path reads without SQL: ``plan`` (subnets, pools, excludes, reservations,
options, classes, trusted relays; reloaded by ``plan_loader`` on NOTIFY) and
``leasecache`` (this node's live leases). The database judges every write through the
unique indexes on live leases (one per address, one per client), so several nodes may
share one Postgres. ``expiry`` ends leases (through ``leasestore``); ``settings`` is the
trusted-relays resource; ``leasestats`` keeps the lease table's planner statistics current
while it grows.

Every lease state change — here, in the expiry worker and in the API's force-release —
goes through ``leasestore``. Run it: ``ipamd run`` serves DHCP on the [dhcp] listen
addresses of the TOML file, with the rest of the appliance (bench/ drives it with perfdhcp).
"""

from ipamd.dhcp import compiled as _compiled

_compiled.activate(__path__)  # the mypyc-compiled hot path, when built from these sources
