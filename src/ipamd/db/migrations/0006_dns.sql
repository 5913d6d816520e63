-- DNS: the servers ipamd updates, their zones, static records, and the outbox rows (kind dns)
-- that carry every change to them. Credentials are only references (secret_ref).

CREATE TABLE dns_servers (
    id             uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name           text NOT NULL CONSTRAINT dns_servers_name UNIQUE,
    -- embedded: this appliance answers for the server's zones itself (the [dns] section).
    adapter        text NOT NULL
                   CHECK (adapter IN ('bind_tsig', 'powerdns_http', 'ad_gsstsig', 'embedded')),
    -- bind_tsig, ad_gsstsig: where UPDATE messages go.
    address        inet,
    port           integer NOT NULL DEFAULT 53 CHECK (port BETWEEN 1 AND 65535),
    tsig_key_name  text,
    tsig_algorithm text NOT NULL DEFAULT 'hmac-sha256',
    -- powerdns_http: the API base URL (…/api/v1) and PowerDNS's server id.
    api_url        text,
    pdns_server_id text NOT NULL DEFAULT 'localhost',
    -- ad_gsstsig: who ipamd is (principal, realm), its keytab (a path, mode 0600: never the
    -- key), and the DNS server's host name (its service principal is DNS/<host>).
    krb_realm        text,
    krb_principal    text,
    keytab_path      text,
    krb_service_host text,
    -- env:NAME or file:/path (0600): the TSIG secret (base64) or the X-API-Key.
    secret_ref     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dns_servers_bind_fields CHECK (
        adapter <> 'bind_tsig' OR (address IS NOT NULL AND tsig_key_name IS NOT NULL)),
    CONSTRAINT dns_servers_pdns_fields CHECK (adapter <> 'powerdns_http' OR api_url IS NOT NULL),
    CONSTRAINT dns_servers_gss_fields CHECK (adapter <> 'ad_gsstsig' OR (address IS NOT NULL
        AND krb_principal IS NOT NULL AND keytab_path IS NOT NULL
        AND krb_service_host IS NOT NULL)),
    CONSTRAINT dns_servers_secret CHECK (adapter IN ('embedded', 'ad_gsstsig')
                                         OR secret_ref IS NOT NULL)
);

CREATE TABLE dns_zones (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    -- lowercase, no trailing dot; forward or …in-addr.arpa / …ip6.arpa
    name        text NOT NULL CONSTRAINT dns_zones_name UNIQUE,
    server_id   uuid NOT NULL REFERENCES dns_servers (id),
    default_ttl integer NOT NULL DEFAULT 3600 CHECK (default_ttl BETWEEN 1 AND 2147483647),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dns_zones_server ON dns_zones (server_id);

CREATE TABLE dns_records (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    zone_id    uuid NOT NULL REFERENCES dns_zones (id),
    name       text NOT NULL,  -- absolute, lowercase, no trailing dot
    type       text NOT NULL CHECK (type IN ('A', 'AAAA', 'CNAME', 'PTR', 'TXT', 'MX', 'SRV', 'NS')),
    value      text NOT NULL,  -- presentation format of the RDATA
    ttl        integer CHECK (ttl IS NULL OR ttl BETWEEN 1 AND 2147483647),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dns_records_unique UNIQUE (zone_id, name, type, value)
);
CREATE INDEX dns_records_name ON dns_records (name);

ALTER TABLE subnets ADD CONSTRAINT subnets_ddns_server
    FOREIGN KEY (ddns_server_id) REFERENCES dns_servers (id);

-- A dns row's change: server, name, records (see dns/change.py); shown in the Work view.
ALTER TABLE outbox ADD COLUMN dns jsonb;

-- Fan-out of DNS changes, beside the webhook fan-out: lease events of subnets with dynamic
-- DNS (the lease's fqdn, inside the subnet's zone, is the name) and audited static record
-- changes. Same statement as the event insert, so the change and its row commit together.
CREATE FUNCTION outbox_fanout_dns() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (kind, event_id, topic, target, dns)
    SELECT 'dns', e.id, e.topic, e.payload->>'fqdn', jsonb_build_object(
        'source', 'lease', 'server_id', s.ddns_server_id,
        'op', CASE WHEN e.topic IN ('lease.granted', 'lease.renewed') THEN 'add' ELSE 'remove' END,
        'name', e.payload->>'fqdn', 'ip', e.payload->>'ip',
        'zone', s.ddns_zone, 'reverse_zone', s.ddns_reverse_zone,
        'ttl', coalesce(s.ddns_ttl, z.default_ttl, 3600))
    FROM new_events e
    JOIN subnets s ON e.topic IN ('lease.granted', 'lease.renewed', 'lease.released', 'lease.expired')
        AND s.id = (e.payload->>'subnet_id')::uuid
        AND s.ddns_adapter NOT IN ('none', 'embedded') AND s.ddns_server_id IS NOT NULL
    LEFT JOIN dns_zones z ON z.name = s.ddns_zone
    WHERE e.payload->>'fqdn' LIKE '%.' || s.ddns_zone
    UNION ALL
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

CREATE TRIGGER events_outbox_fanout_dns
    AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_fanout_dns();
