-- Occupancy history: lease_events folded, as they are written, into one row per occupancy
-- interval ("who held which address from when to when"). Queries by identity, by address
-- at a moment, and the subnet "As of" map then read a few index entries instead of
-- replaying the event log.

-- The address map's entry for an interval, less its state: ["ip","mac","hostname",
-- rendered by the fold below whenever identities change, so a /16 map only concatenates.
-- to_json() escapes the hostname; it cannot fail, and its output for text depends on no
-- setting (hence IMMUTABLE, which also lets the planner inline it into the fold).
CREATE FUNCTION history_map_head(ip inet, mac macaddr, hostname text, fqdn text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '["' || host(ip) || '",' || coalesce('"' || mac::text || '"', 'null') || ','
           || coalesce(to_json(coalesce(hostname, fqdn))::text, 'null') || ',"'
$$;

CREATE TABLE lease_intervals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease_id    uuid NOT NULL,
    subnet_id   uuid NOT NULL,
    ip          inet NOT NULL,
    -- Identities as last seen during the interval (a renew may bring a new hostname).
    mac         macaddr,
    client_id   bytea,
    duid        text,              -- normalised: lowercase hex, no separators
    hostname    text,
    fqdn        text,
    circuit_id  bytea,
    remote_id   bytea,
    giaddr      inet,
    from_at     timestamptz NOT NULL,
    to_at       timestamptz,       -- null while the lease (or a decline's probation) holds
    state       text NOT NULL CHECK (state IN ('active', 'released', 'expired', 'declined')),
    expires_at  timestamptz,       -- lease end (or probation end) as last granted
    declined_at timestamptz,       -- when the client declined: leased before, declined after
    map_head    text NOT NULL,     -- history_map_head(ip, mac, hostname, fqdn)
    -- Never before from_at: every writer below clamps with greatest(), so this cannot fire
    -- and abort a DHCP commit; it documents the invariant the range index relies on.
    CHECK (to_at IS NULL OR to_at >= from_at)
) WITH (fillfactor = 90);  -- room for HOT updates on renew

-- The trigger's lookup of a lease's open interval: only open rows are indexed.
CREATE INDEX lease_intervals_open ON lease_intervals (lease_id) WHERE to_at IS NULL;
-- One index per identity, each ordered by start so a lookup returns the page in order.
CREATE INDEX lease_intervals_ip ON lease_intervals (ip, from_at, id);
CREATE INDEX lease_intervals_mac ON lease_intervals (mac, from_at, id) WHERE mac IS NOT NULL;
CREATE INDEX lease_intervals_client_id ON lease_intervals (client_id, from_at, id)
    WHERE client_id IS NOT NULL;
CREATE INDEX lease_intervals_duid ON lease_intervals (duid, from_at, id) WHERE duid IS NOT NULL;
CREATE INDEX lease_intervals_hostname ON lease_intervals (lower(hostname), from_at, id)
    WHERE hostname IS NOT NULL;
CREATE INDEX lease_intervals_fqdn ON lease_intervals (lower(rtrim(fqdn, '.')), from_at, id)
    WHERE fqdn IS NOT NULL;
CREATE INDEX lease_intervals_circuit ON lease_intervals (circuit_id, from_at, id)
    WHERE circuit_id IS NOT NULL;
CREATE INDEX lease_intervals_remote ON lease_intervals (remote_id, from_at, id)
    WHERE remote_id IS NOT NULL;
-- The "As of" map: every interval of a subnet that contains a moment.
CREATE INDEX lease_intervals_subnet_period ON lease_intervals
    USING gist (subnet_id, tstzrange(from_at, to_at, '[)'));

-- The "As of" map reads the audit trail of a subnet's pools, excludes, reservations and
-- assignments; this finds them without scanning every audit entry.
CREATE INDEX audit_log_plan_subnet ON audit_log
    ((coalesce(after ->> 'subnet_id', before ->> 'subnet_id')), at)
    WHERE object_type IN ('pool', 'exclude', 'reservation', 'assignment');

-- Fold the lease_events rows of one INSERT statement into lease_intervals. The DHCP server
-- commits a batch per statement, so this runs once per batch, set-based, inside its commit:
-- it must not fail (no cast that can raise, no constraint it could violate).
--
-- Per lease, in time order:
--   granted/renewed  with an active interval at that address: the same occupancy (identities
--                    and expiry updated); otherwise whatever is open ends and a new one opens
--   declined         the open interval turns 'declined' and stays open through probation;
--                    with none open, a declined interval opens
--   released/expired the open interval ends (an expiry when the lease ran out, not when the
--                    sweeper noticed); with none open it is a repeat and ignored
-- A statement carrying several events of one lease is folded a round at a time.
CREATE FUNCTION lease_events_history() RETURNS trigger LANGUAGE plpgsql AS $$
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
                                     expires_at, declined_at, map_head)
        SELECT lease_id, subnet_id, ip, mac, client_id, lower(translate(duid, ':-. ', '')),
               hostname, fqdn, circuit_id, remote_id, giaddr, at, 'active', expires_at, NULL,
               history_map_head(ip, mac, hostname, fqdn)
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
                                     expires_at, declined_at, map_head)
        SELECT lease_id, subnet_id, ip, mac, client_id, nduid, hostname, fqdn, circuit_id,
               remote_id, giaddr, at,
               CASE WHEN event = 'declined' THEN 'declined' ELSE 'active' END,
               expires_at, CASE WHEN event = 'declined' THEN at END,
               history_map_head(ip, mac, hostname, fqdn)
          FROM e
         WHERE (event IN ('granted', 'renewed') AND same IS NOT TRUE)
            OR (event = 'declined' AND open_id IS NULL);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER lease_events_history AFTER INSERT ON lease_events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION lease_events_history();

-- Events written before this migration: inserted again, in time order, so the trigger folds
-- them (on a new database there are none).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM lease_events) THEN
        CREATE TEMPORARY TABLE history_backfill ON COMMIT DROP AS SELECT * FROM lease_events;
        DELETE FROM lease_events;
        INSERT INTO lease_events SELECT * FROM history_backfill ORDER BY at, id;
    END IF;
END
$$;
