-- Lease DNS changes leave the DHCP commit as ONE staged row per statement (a group-commit
-- batch), not one outbox row per lease: the DHCP path pays a few microseconds a batch, and
-- the DNS delivery process turns staged rows into the per-change `kind=dns` outbox rows
-- (dns_expand_staged) when it is ready to deliver them, in one transaction that deletes the
-- staged row: nothing is lost or made twice. Static record changes (API, rare) still make
-- their rows at once.
CREATE TABLE dns_staged (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_ids  uuid[] NOT NULL CHECK (cardinality(event_ids) > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The kind=dns row of each lease event of a subnet with dynamic DNS (the lease's fqdn,
-- inside the subnet's zone, is the name), from the subnet's settings when expanded.
CREATE FUNCTION dns_expand_staged(max_staged integer) RETURNS integer
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
    INSERT INTO outbox (kind, event_id, topic, target, dns)
    SELECT 'dns', e.id, e.topic, e.payload->>'fqdn', jsonb_build_object(
        'source', 'lease', 'server_id', s.ddns_server_id,
        'op', CASE WHEN e.topic IN ('lease.granted', 'lease.renewed') THEN 'add' ELSE 'remove' END,
        'name', e.payload->>'fqdn', 'ip', e.payload->>'ip',
        'zone', s.ddns_zone, 'reverse_zone', s.ddns_reverse_zone,
        'ttl', coalesce(s.ddns_ttl, z.default_ttl, 3600))
    FROM events e
    JOIN subnets s ON s.id = (e.payload->>'subnet_id')::uuid
        AND s.ddns_adapter NOT IN ('none', 'embedded') AND s.ddns_server_id IS NOT NULL
    LEFT JOIN dns_zones z ON z.name = s.ddns_zone
    WHERE e.id = ANY (taken) AND e.payload->>'fqdn' LIKE '%.' || s.ddns_zone
    ORDER BY e.id;
    GET DIAGNOSTICS made = ROW_COUNT;
    IF made > 0 THEN
        PERFORM pg_notify('ipamd_outbox', 'dns');
    END IF;
    RETURN made;
END
$$;

CREATE OR REPLACE FUNCTION outbox_fanout_dns() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    staged bigint;
BEGIN
    INSERT INTO dns_staged (event_ids)
    SELECT array_agg(e.id ORDER BY e.id)
    FROM new_events e
    JOIN subnets s ON e.topic IN ('lease.granted', 'lease.renewed', 'lease.released', 'lease.expired')
        AND s.id = (e.payload->>'subnet_id')::uuid
        AND s.ddns_adapter NOT IN ('none', 'embedded') AND s.ddns_server_id IS NOT NULL
    WHERE e.payload->>'fqdn' LIKE '%.' || s.ddns_zone
    HAVING count(*) > 0
    RETURNING id INTO staged;
    -- Wake the delivery process only when nothing was staged before: while entries wait (a
    -- storm holds deliveries back) a NOTIFY per DHCP commit would cost every commit and
    -- wake every listener for nothing. An entry staged while an expansion runs is taken by
    -- the next one: an expansion's own NOTIFY starts another claim round (and the poll).
    IF staged IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dns_staged WHERE id < staged) THEN
        PERFORM pg_notify('ipamd_outbox', 'dns');
    END IF;
    INSERT INTO outbox (kind, event_id, topic, target, dns)
    SELECT 'dns', e.id, e.topic,
           coalesce(e.payload->'after'->>'name', e.payload->'before'->>'name'),
           jsonb_build_object(
               'source', 'static', 'server_id', z.server_id, 'zone', z.name,
               'default_ttl', z.default_ttl,
               'before', e.payload->'before', 'after', e.payload->'after')
    FROM new_events e
    JOIN dns_zones z ON e.topic = 'ipam.audit' AND e.payload->>'object_type' = 'dns_record'
        AND z.id = coalesce(e.payload->'after'->>'zone_id', e.payload->'before'->>'zone_id')::uuid
    JOIN dns_servers v ON v.id = z.server_id AND v.adapter <> 'embedded';
    IF FOUND THEN
        PERFORM pg_notify('ipamd_outbox', 'dns');
    END IF;
    -- The embedded server reloads its zones when what they show may have changed.
    IF EXISTS (SELECT 1 FROM new_events e
               JOIN subnets s ON s.id = (e.payload->>'subnet_id')::uuid
               WHERE e.topic LIKE 'lease.%' AND s.ddns_adapter = 'embedded')
       OR EXISTS (SELECT 1 FROM new_events e WHERE e.topic = 'ipam.audit' AND
                  e.payload->>'object_type' IN ('dns_record', 'dns_zone', 'dns_server', 'subnet'))
    THEN
        PERFORM pg_notify('ipamd_dns', 'changed');
    END IF;
    RETURN NULL;
END
$$;
