-- A journal backlog (a lease storm holds derivation back, a node was down) is derived in
-- linear time. 0011 picked a batch with `seq IN (SELECT seq ... LIMIT lim)`; with the
-- journal's statistics taken while it was nearly empty (as it is between derives) the planner
-- made that a nested loop re-reading the whole batch for every journal row: 10,000 rows took
-- 23 s of CPU to derive (~2.3 ms a row, against ~50 µs when few wait). Here the batch is a
-- range bounded by its newest seq, computed once: one index range scan whatever the
-- statistics say. Same rows: those this statement sees with the lim smallest seqs.
CREATE OR REPLACE FUNCTION lease_journal_derive(lim integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    PERFORM pg_advisory_xact_lock(113216);  -- 0x1BA40, next to ipamd's other lock keys
    WITH j AS (
        DELETE FROM lease_journal WHERE seq <= (
            SELECT max(seq) FROM (SELECT seq FROM lease_journal ORDER BY seq LIMIT lim) b)
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
