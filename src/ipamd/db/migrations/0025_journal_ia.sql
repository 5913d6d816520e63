-- A DHCPv6 binding's IA (iaid, ia_type, prefix_length: fixed for a lease row's life,
-- migration 0017) travels with its change: the statement that changes the binding writes
-- it on the journal row (core/lease_events.py, event_ctes), deriving copies it to the
-- lease_events row, and the fold (0005) copies it to the interval it opens. Deriving thus
-- reads no lease row: 0017's derivation looked the lease up for every DHCPv6 event, and
-- 0018's row trigger (PL/pgSQL, one call per interval) once more for every interval.
-- NULL on DHCPv4 rows. The events' payloads and the intervals are what they were.
ALTER TABLE lease_journal
    ADD COLUMN iaid          bigint,
    ADD COLUMN ia_type       text,
    ADD COLUMN prefix_length smallint;
ALTER TABLE lease_events
    ADD COLUMN iaid          bigint,
    ADD COLUMN ia_type       text,
    ADD COLUMN prefix_length smallint;

-- As 0017's, with the IA from the journal row. A DHCPv6 row written without it (before this
-- migration, or by a node still running the previous version) takes it from its lease as
-- 0017 did (the CASE runs that look-up only for such rows); a lease gone since (its subnet
-- deleted) leaves it NULL and its event names the DUID alone, as before.
-- A change's lease_events row and its event share one id, made once (0011 and 0020 rely on
-- it: dns_expand_staged finds a renamed lease's previous name as the history row with an id
-- below its event's). 0011 called uuid_v7_seq for each, and its clock part differed between
-- the two whenever a batch's inserts took longer than a millisecond.
CREATE OR REPLACE FUNCTION lease_journal_derive(lim integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    PERFORM pg_advisory_xact_lock(113216);  -- 0x1BA40, next to ipamd's other lock keys
    WITH j AS (
        DELETE FROM lease_journal WHERE seq <= (
            SELECT max(seq) FROM (SELECT seq FROM lease_journal ORDER BY seq LIMIT lim) b)
        RETURNING uuid_v7_seq(seq) AS id, seq, at, event, lease_id, subnet_id, ip, state, mac,
                  client_id, duid,
                  hostname, fqdn, circuit_id, remote_id, giaddr, starts_at, expires_at,
                  CASE WHEN ia_type IS NULL AND family(ip) = 6
                       THEN (SELECT l.iaid FROM leases l
                              WHERE l.lease_id = lease_journal.lease_id) ELSE iaid END AS iaid,
                  CASE WHEN ia_type IS NULL AND family(ip) = 6
                       THEN (SELECT l.ia_type FROM leases l
                              WHERE l.lease_id = lease_journal.lease_id) ELSE ia_type END
                      AS ia_type,
                  CASE WHEN ia_type IS NULL AND family(ip) = 6
                       THEN (SELECT l.prefix_length FROM leases l
                              WHERE l.lease_id = lease_journal.lease_id)
                       ELSE prefix_length END AS prefix_length
    ), le AS (
        INSERT INTO lease_events (id, at, lease_id, event, subnet_id, ip, mac, client_id, duid,
                                  hostname, fqdn, circuit_id, remote_id, giaddr, expires_at,
                                  iaid, ia_type, prefix_length)
        SELECT id, at, lease_id, event, subnet_id, ip, mac, client_id, duid,
               hostname, fqdn, circuit_id, remote_id, giaddr, expires_at,
               iaid, ia_type, prefix_length
        FROM j ORDER BY seq
    ), ev AS (
        INSERT INTO events (id, topic, payload, created_at)
        SELECT id, 'lease.' || event,
               lease_event_payload(lease_id, ip, subnet_id, hostname, fqdn, state, mac,
                                   client_id, circuit_id, remote_id, giaddr, starts_at,
                                   expires_at)
               || CASE WHEN family(ip) <> 6 THEN '{}'::jsonb
                       WHEN ia_type IS NULL THEN jsonb_build_object('duid', duid)
                       ELSE jsonb_build_object('duid', duid, 'iaid', iaid, 'ia_type', ia_type,
                                               'prefix_length', prefix_length) END, at
        FROM j ORDER BY seq
    )
    SELECT count(*) INTO moved FROM j;
    RETURN moved;
END
$$;

-- 0005's fold, unchanged but for the IA: a new interval takes it from its lease_events row.
CREATE OR REPLACE FUNCTION lease_events_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    rounds integer;
BEGIN
    SELECT max(n) INTO rounds FROM (SELECT count(*) AS n FROM new_events GROUP BY lease_id) c;
    -- The common statement: new grants only, none of their leases with an open interval.
    -- The fold below would only insert; this insert alone skips preparing its three
    -- updates (each opens every index of lease_intervals), which cost more than the work
    -- when a DHCP batch is small. Same rows, in the fold's order.
    -- (The lateral LIMIT keeps the look-up a probe of lease_intervals_open per event.)
    IF rounds = 1 AND NOT EXISTS (
        SELECT 1 FROM new_events ev
          LEFT JOIN LATERAL (
              SELECT 1 AS found FROM lease_intervals
               WHERE lease_id = ev.lease_id AND to_at IS NULL LIMIT 1) o ON true
         WHERE ev.event <> 'granted' OR o.found IS NOT NULL)
    THEN
        INSERT INTO lease_intervals (lease_id, subnet_id, ip, mac, client_id, duid, hostname,
                                     fqdn, circuit_id, remote_id, giaddr, from_at, state,
                                     expires_at, declined_at, map_head, iaid, ia_type,
                                     prefix_length)
        SELECT lease_id, subnet_id, ip, mac, client_id, lower(translate(duid, ':-. ', '')),
               hostname, fqdn, circuit_id, remote_id, giaddr, at, 'active', expires_at, NULL,
               history_map_head(ip, mac, hostname, fqdn), iaid, ia_type, prefix_length
          FROM new_events ORDER BY lease_id, at, id;
        RETURN NULL;
    END IF;
    FOR round IN 1 .. coalesce(rounds, 0) LOOP
        WITH e AS (
            SELECT ev.*, lower(translate(ev.duid, ':-. ', '')) AS nduid,
                   o.id AS open_id, o.state AS open_state,
                   (o.state = 'active' AND o.ip = ev.ip) AS same  -- null when none is open
              FROM (SELECT *, row_number() OVER (PARTITION BY lease_id ORDER BY at, id) AS rnk
                      FROM new_events) ev
              LEFT JOIN LATERAL (
                  SELECT id, state, ip FROM lease_intervals
                   WHERE lease_id = ev.lease_id AND to_at IS NULL
                   ORDER BY id DESC LIMIT 1) o ON true
             WHERE ev.rnk = round
        ), merged AS (
            UPDATE lease_intervals i SET
                mac = coalesce(e.mac, i.mac), client_id = coalesce(e.client_id, i.client_id),
                duid = coalesce(e.nduid, i.duid), hostname = coalesce(e.hostname, i.hostname),
                fqdn = coalesce(e.fqdn, i.fqdn), circuit_id = coalesce(e.circuit_id, i.circuit_id),
                remote_id = coalesce(e.remote_id, i.remote_id),
                giaddr = coalesce(e.giaddr, i.giaddr),
                expires_at = coalesce(e.expires_at, i.expires_at),
                map_head = history_map_head(i.ip, coalesce(e.mac, i.mac),
                                            coalesce(e.hostname, i.hostname),
                                            coalesce(e.fqdn, i.fqdn))
              FROM e
             WHERE i.id = e.open_id AND e.event IN ('granted', 'renewed') AND e.same
        ), declined AS (
            UPDATE lease_intervals i SET
                state = 'declined', declined_at = greatest(i.from_at, e.at),
                expires_at = coalesce(e.expires_at, i.expires_at),
                mac = coalesce(e.mac, i.mac), client_id = coalesce(e.client_id, i.client_id),
                duid = coalesce(e.nduid, i.duid), hostname = coalesce(e.hostname, i.hostname),
                fqdn = coalesce(e.fqdn, i.fqdn),
                map_head = history_map_head(i.ip, coalesce(e.mac, i.mac),
                                            coalesce(e.hostname, i.hostname),
                                            coalesce(e.fqdn, i.fqdn))
              FROM e
             WHERE i.id = e.open_id AND e.event = 'declined' AND e.open_state <> 'declined'
        ), closed AS (
            UPDATE lease_intervals i SET
                to_at = greatest(i.from_at, CASE WHEN e.event = 'released' THEN e.at
                                                 ELSE least(e.at, coalesce(i.expires_at, e.at))
                                            END),
                state = CASE WHEN i.state = 'declined' THEN 'declined'
                             WHEN e.event IN ('released', 'expired') THEN e.event
                             ELSE 'released' END  -- superseded by a grant elsewhere
              FROM e
             WHERE i.id = e.open_id
               AND (e.event IN ('released', 'expired')
                    OR (e.event IN ('granted', 'renewed') AND NOT e.same))
        )
        INSERT INTO lease_intervals (lease_id, subnet_id, ip, mac, client_id, duid, hostname,
                                     fqdn, circuit_id, remote_id, giaddr, from_at, state,
                                     expires_at, declined_at, map_head, iaid, ia_type,
                                     prefix_length)
        SELECT lease_id, subnet_id, ip, mac, client_id, nduid, hostname, fqdn, circuit_id,
               remote_id, giaddr, at,
               CASE WHEN event = 'declined' THEN 'declined' ELSE 'active' END,
               expires_at, CASE WHEN event = 'declined' THEN at END,
               history_map_head(ip, mac, hostname, fqdn), iaid, ia_type, prefix_length
          FROM e
         WHERE (event IN ('granted', 'renewed') AND same IS NOT TRUE)
            OR (event = 'declined' AND open_id IS NULL);
    END LOOP;
    RETURN NULL;
END
$$;

-- Every interval now gets its IA from the fold: 0018's row trigger would only look again.
DROP TRIGGER lease_intervals_ia ON lease_intervals;
DROP FUNCTION lease_intervals_ia();
