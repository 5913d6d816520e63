-- A client that renews under another name (DHCPv4 option 81 or 12, DHCPv6 option 39: the
-- lease's fqdn changes, leasestore keeps the new one) no longer leaves its old name in DNS.
-- The renewal's event expands into two rows: the old name's remove (its A/AAAA, its PTR while
-- it still names it, its DHCID with its last address: the adapters' RFC 4703 rules), then the
-- new name's add. The old name is the lease's previous granted/renewed lease_events row (the
-- event's twin shares its id, migration 0011, so "previous" is an id below it). Delivery
-- (dns/delivery.py, superseded) applies a remove while the lease is active under another name.
CREATE OR REPLACE FUNCTION dns_expand_staged(max_staged integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    taken uuid[];
    made integer;
BEGIN
    WITH gone AS (
        DELETE FROM dns_staged WHERE id IN (
            SELECT id FROM dns_staged ORDER BY id LIMIT max_staged FOR UPDATE SKIP LOCKED)
        RETURNING event_ids
    )
    SELECT coalesce(array_agg(x), '{}') INTO taken FROM gone, unnest(gone.event_ids) AS x;
    WITH changes AS (
        SELECT e.id, e.topic, 1 AS part, 'remove' AS op, before.fqdn AS name, e.payload
        FROM events e
        CROSS JOIN LATERAL (
            SELECT p.fqdn FROM lease_events p
            WHERE p.lease_id = (e.payload->>'lease_id')::uuid AND p.id < e.id
              AND p.event IN ('granted', 'renewed')
            ORDER BY p.at DESC, p.id DESC LIMIT 1) before
        WHERE e.id = ANY (taken) AND e.topic = 'lease.renewed'
          AND lower(rtrim(before.fqdn, '.')) <> lower(rtrim(e.payload->>'fqdn', '.'))
        UNION ALL
        SELECT e.id, e.topic, 2,
               CASE WHEN e.topic IN ('lease.granted', 'lease.renewed') THEN 'add' ELSE 'remove' END,
               e.payload->>'fqdn', e.payload
        FROM events e
        WHERE e.id = ANY (taken)
    )
    INSERT INTO outbox (kind, event_id, topic, target, dns)
    SELECT 'dns', c.id, c.topic, c.name, jsonb_build_object(
        'source', 'lease', 'server_id', s.ddns_server_id, 'op', c.op,
        'name', c.name, 'ip', c.payload->>'ip',
        'zone', s.ddns_zone, 'reverse_zone', s.ddns_reverse_zone,
        'ttl', coalesce(s.ddns_ttl, z.default_ttl, 3600))
    FROM changes c
    JOIN subnets s ON s.id = (c.payload->>'subnet_id')::uuid
        AND s.ddns_adapter NOT IN ('none', 'embedded') AND s.ddns_server_id IS NOT NULL
    LEFT JOIN dns_zones z ON z.name = s.ddns_zone
    WHERE c.name LIKE '%.' || s.ddns_zone
    ORDER BY c.id, c.part;
    GET DIAGNOSTICS made = ROW_COUNT;
    IF made > 0 THEN
        PERFORM pg_notify('ipamd_outbox', 'dns');
    END IF;
    RETURN made;
END
$$;
