-- The DNS fan-out trigger runs in every DHCP commit statement, so it does as little as it
-- can there (measured: ~140 µs of a 40-lease batch's ~2.8 ms before, with or without DNS):
-- * lease changes are staged without looking at their subnets: every lease event with a
--   name, when any subnet sends DNS updates at all (a partial index answers that at once).
--   dns_expand_staged, in the DNS delivery process, already keeps only the events of such
--   subnets whose name lies in the zone: what it drops was never going to be a row.
-- * the embedded server's reload check looks at the events only when a subnet uses it.
CREATE INDEX subnets_ddns_senders ON subnets (id)
    WHERE ddns_adapter NOT IN ('none', 'embedded') AND ddns_server_id IS NOT NULL;
CREATE INDEX subnets_ddns_embedded ON subnets (id) WHERE ddns_adapter = 'embedded';

CREATE OR REPLACE FUNCTION outbox_fanout_dns() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    staged bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM subnets
               WHERE ddns_adapter NOT IN ('none', 'embedded') AND ddns_server_id IS NOT NULL)
    THEN
        INSERT INTO dns_staged (event_ids)
        SELECT array_agg(e.id ORDER BY e.id)
        FROM new_events e
        WHERE e.topic IN ('lease.granted', 'lease.renewed', 'lease.released', 'lease.expired')
          AND e.payload->>'fqdn' IS NOT NULL
        HAVING count(*) > 0
        RETURNING id INTO staged;
        -- Wake the delivery process only when nothing was staged before (0008 says why).
        IF staged IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dns_staged WHERE id < staged) THEN
            PERFORM pg_notify('ipamd_outbox', 'dns');
        END IF;
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
    IF (EXISTS (SELECT 1 FROM subnets WHERE ddns_adapter = 'embedded')
        AND EXISTS (SELECT 1 FROM new_events e
                    JOIN subnets s ON s.id = (e.payload->>'subnet_id')::uuid
                    WHERE e.topic LIKE 'lease.%' AND s.ddns_adapter = 'embedded'))
       OR EXISTS (SELECT 1 FROM new_events e WHERE e.topic = 'ipam.audit' AND
                  e.payload->>'object_type' IN ('dns_record', 'dns_zone', 'dns_server', 'subnet'))
    THEN
        PERFORM pg_notify('ipamd_dns', 'changed');
    END IF;
    RETURN NULL;
END
$$;
