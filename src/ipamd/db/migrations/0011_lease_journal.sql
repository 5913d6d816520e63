-- Lease changes are journaled: the statement that changes a lease writes one narrow row
-- here, in its own transaction, and nothing else. The history row (lease_events, whose
-- trigger folds lease_intervals) and the outbox event (events, whose triggers fan out to
-- webhooks, DNS and alerts) are derived from the journal afterwards, many changes per
-- statement, by lease_journal_derive below (workers/lease_journal.py runs it on every node).
-- Measured on a lone grant at light load (bench_leasestore --batch 1 --gap-ms 5): the
-- history fold and the fan-out were ~545 of its ~1,110 µs of PostgreSQL CPU; a DHCP Ack
-- waits for its commit, not for them. A change is durable with its journal row; deriving
-- deletes the rows it derives in the same transaction, so each is derived exactly once.
CREATE TABLE lease_journal (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),  -- the change's time (its transaction's)
    -- lease_events' own check: a row that could not be derived must fail its change instead
    event       text NOT NULL CHECK (event IN ('granted', 'renewed', 'released', 'expired', 'declined')),
    lease_id    uuid NOT NULL,
    subnet_id   uuid NOT NULL,
    ip          inet NOT NULL,
    state       text NOT NULL,
    mac         macaddr,
    client_id   bytea,
    duid        text,
    hostname    text,
    fqdn        text,
    circuit_id  bytea,
    remote_id   bytea,
    giaddr      inet,
    starts_at   timestamptz,
    expires_at  timestamptz
);

-- A time-ordered UUID (version 7) whose low bits are ``seq``: the ids of rows derived in one
-- statement follow the journal's order (uuid_generate_v7's are random within a millisecond).
CREATE FUNCTION uuid_v7_seq(seq bigint) RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        int8send(((extract(epoch FROM clock_timestamp()) * 1000)::bigint << 16) | 28672)
        || int8send((seq & 4611686018427387903) | (-9223372036854775807 - 1)),
        'hex')::uuid
$$;

-- Derive up to ``lim`` journal rows, oldest first; returns how many. One deriver at a time
-- across the nodes (the lock): a lease's changes are journaled in the order they were made
-- (each waits for the lease's row lock), and they must reach the history fold in that order.
CREATE FUNCTION lease_journal_derive(lim integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    PERFORM pg_advisory_xact_lock(113216);  -- 0x1BA40, next to ipamd's other lock keys
    WITH j AS (
        DELETE FROM lease_journal WHERE seq IN (
            SELECT seq FROM lease_journal ORDER BY seq LIMIT lim)
        RETURNING *
    ), le AS (
        INSERT INTO lease_events (id, at, lease_id, event, subnet_id, ip, mac, client_id, duid,
                                  hostname, fqdn, circuit_id, remote_id, giaddr, expires_at)
        SELECT uuid_v7_seq(seq), at, lease_id, event, subnet_id, ip, mac, client_id, duid,
               hostname, fqdn, circuit_id, remote_id, giaddr, expires_at
        FROM j ORDER BY seq
    ), ev AS (
        INSERT INTO events (id, topic, payload, created_at)
        SELECT uuid_v7_seq(seq), 'lease.' || event,
               lease_event_payload(lease_id, ip, subnet_id, hostname, fqdn, state, mac,
                                   client_id, circuit_id, remote_id, giaddr, starts_at,
                                   expires_at), at
        FROM j ORDER BY seq
    )
    SELECT count(*) INTO moved FROM j;
    RETURN moved;
END
$$;
