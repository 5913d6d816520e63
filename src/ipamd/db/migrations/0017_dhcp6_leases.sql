-- The DHCPv6 server's bindings live in the one lease table (docs/dhcpv6.md: the DHCPv6
-- server shares the lease store, the events and the history). A v6 lease is one
-- binding of one client's IA: an address (IA_NA, prefix_length 128) or a delegated prefix
-- (IA_PD, ip its first address). Same states, same journal (migration 0011), same expiry
-- sweep (0014), same unique indexes: leases_live_ip (one live binding per address per
-- subnet) and leases_live_client, whose client_key for v6 is the IA (dhcp/leasestore.py,
-- client_key6: a 0x06 octet, the IA type, the IAID, the DUID): one live binding per IA.
ALTER TABLE leases
    ADD COLUMN iaid               bigint,    -- RFC 8415 §21.4: 4 octets, unsigned
    ADD COLUMN ia_type            text,      -- 'na' or 'pd'; NULL for a DHCPv4 lease
    ADD COLUMN prefix_length      smallint,  -- 128 for an address, the delegated length for PD
    ADD COLUMN preferred_lifetime integer,   -- as last given to the client (seconds)
    ADD COLUMN valid_lifetime     integer,
    ADD COLUMN subscriber_id      bytea;     -- RFC 4580 option 38 from the relay, raw

ALTER TABLE leases ADD CONSTRAINT leases_v6_binding CHECK (
    ia_type IS NULL OR (
        ia_type IN ('na', 'pd') AND family(ip) = 6 AND duid IS NOT NULL
        AND iaid BETWEEN 0 AND 4294967295
        AND prefix_length BETWEEN 1 AND 128 AND (ia_type = 'pd' OR prefix_length = 128)
    )
);

-- The appliance's one server DUID (RFC 8415 §11: it must not change): made by the first
-- DHCPv6 server to start and read by every node after, so every node and every restart
-- answers with the same Server Identifier.
CREATE TABLE dhcp6_server (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    duid       bytea NOT NULL CHECK (length(duid) BETWEEN 3 AND 130),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Delegation pools are part of the DHCP plan: changing them reloads it on every node
-- (as migration 0003 does for pools, excludes and reservations).
CREATE TRIGGER pd_pools_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pd_pools
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER pd_excludes_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pd_excludes
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER pd_reservations_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pd_reservations
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();

-- A DHCPv6 binding's lease.* event names its client: the DUID (the journal row has it) and
-- the IA (iaid, ia_type, prefix_length: fixed for a lease row's life, read from it). Only
-- IPv6 rows look the lease up (CASE: DHCPv4's derivation costs what it did); a row gone
-- since (its subnet deleted) still gets its DUID. Otherwise as migration 0012.
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
                                   expires_at)
               || CASE WHEN family(ip) = 6 THEN coalesce(
                      (SELECT jsonb_build_object('duid', j.duid, 'iaid', l.iaid,
                                                 'ia_type', l.ia_type,
                                                 'prefix_length', l.prefix_length)
                       FROM leases l WHERE l.lease_id = j.lease_id),
                      jsonb_build_object('duid', j.duid))
                  ELSE '{}'::jsonb END, at
        FROM j ORDER BY seq
    )
    SELECT count(*) INTO moved FROM j;
    RETURN moved;
END
$$;
