-- Two rules of the API's contract (docs/api-ipam.md).
--
-- 1. Every create accepts an optional tenant_id, the default tenant when left out.
--    Webhooks, tokens, DNS servers, zones and records and alert destinations now belong to a
--    tenant too (stored, returned, filterable with ?tenant_id=). A static record keeps its
--    zone's tenant (as a pool keeps its subnet's). The column default is the default tenant,
--    so a writer that names none (the first token's bootstrap, `ipamd token`) stays correct.
ALTER TABLE webhooks ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001' REFERENCES tenants (id);
-- Revoked tokens are kept for the audit trail: a deleted tenant's move to the default one
-- (a tenant with live tokens cannot be deleted: ipam/tenants.py).
ALTER TABLE tokens ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001'
    REFERENCES tenants (id) ON DELETE SET DEFAULT;
ALTER TABLE dns_servers ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001' REFERENCES tenants (id);
ALTER TABLE dns_zones ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001' REFERENCES tenants (id);
ALTER TABLE dns_records ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001' REFERENCES tenants (id);
ALTER TABLE alert_destinations ADD COLUMN tenant_id uuid NOT NULL
    DEFAULT '00000000-0000-7000-8000-000000000001' REFERENCES tenants (id);

-- 2. One rule for secrets (core/secret_locations.py): nothing a non-admin reads names where a
--    secret lives. Entries and messages written before the rule are brought under it here.

-- Audit entries (and their ipam.audit events, which may still be delivered): every field
-- named *_ref or *_path that is set reads (redacted), at any depth, as audit.record now
-- writes them. A temporary function: it ends with this migration's session.
CREATE FUNCTION pg_temp.redact_locations(value jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF jsonb_typeof(value) = 'object' THEN
        RETURN (SELECT coalesce(jsonb_object_agg(key, CASE
                    WHEN (key LIKE '%\_ref' OR key LIKE '%\_path') AND item <> 'null'::jsonb
                    THEN '"(redacted)"'::jsonb
                    ELSE pg_temp.redact_locations(item) END), '{}'::jsonb)
                FROM jsonb_each(value) AS e(key, item));
    ELSIF jsonb_typeof(value) = 'array' THEN
        RETURN (SELECT coalesce(jsonb_agg(pg_temp.redact_locations(item) ORDER BY n), '[]'::jsonb)
                FROM jsonb_array_elements(value) WITH ORDINALITY AS a(item, n));
    END IF;
    RETURN value;
END
$$;

UPDATE audit_log SET before = pg_temp.redact_locations(before),
                     after = pg_temp.redact_locations(after)
WHERE object_type IN ('webhook', 'dns_server', 'alert_destination')
  AND (pg_temp.redact_locations(before) IS DISTINCT FROM before
       OR pg_temp.redact_locations(after) IS DISTINCT FROM after);

UPDATE events SET payload = pg_temp.redact_locations(payload)
WHERE topic = 'ipam.audit'
  AND payload->>'object_type' IN ('webhook', 'dns_server', 'alert_destination')
  AND pg_temp.redact_locations(payload) <> payload;

-- Delivery errors: the locations the earlier messages named (a secret file's path, an
-- environment variable, a reference, a keytab) — first every location still configured,
-- longest first, wherever it stands in the text, then the earlier messages' own shapes.
CREATE FUNCTION pg_temp.scrub(message text, locations text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    location text;
BEGIN
    IF message IS NULL THEN
        RETURN NULL;
    END IF;
    FOREACH location IN ARRAY locations LOOP
        message := replace(message, location, '(redacted)');
    END LOOP;
    message := regexp_replace(message, '(secret file|keytab|environment variable) \S+',
                              '\1 (redacted)', 'g');
    message := regexp_replace(message, '(secret|the secret behind) (env|file):\S+',
                              '\1 (redacted)', 'g');
    RETURN message;
END
$$;

CREATE TEMPORARY TABLE secret_locations ON COMMIT DROP AS
WITH refs AS (
    SELECT secret_ref AS l FROM webhooks
    UNION SELECT previous_secret_ref FROM webhooks
    UNION SELECT secret_ref FROM dns_servers
    UNION SELECT keytab_path FROM dns_servers
    UNION SELECT value FROM alert_destinations, jsonb_each_text(settings)
        WHERE key LIKE '%\_ref'
)
SELECT coalesce(array_agg(l ORDER BY length(l) DESC), '{}') AS locations FROM (
    SELECT l FROM refs WHERE l IS NOT NULL
    UNION SELECT substr(l, 6) FROM refs WHERE l LIKE 'file:/%'
    UNION SELECT substr(l, 5) FROM refs WHERE l LIKE 'env:%' AND length(l) > 7
) AS every;

UPDATE outbox SET last_error = pg_temp.scrub(last_error, s.locations)
FROM secret_locations s
WHERE last_error IS NOT NULL AND last_error <> pg_temp.scrub(last_error, s.locations);

UPDATE outbox_attempts SET error = pg_temp.scrub(error, s.locations)
FROM secret_locations s
WHERE error IS NOT NULL AND error <> pg_temp.scrub(error, s.locations);
