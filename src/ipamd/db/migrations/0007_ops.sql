-- Operations (docs/operations-monitoring.md): appliance nodes and their heartbeats, alerts, alert destinations.

-- One row per appliance node (node_name, or the host name): several processes on one
-- Postgres each appear once. status is computed on read from last_seen_at.
CREATE TABLE nodes (
    id           uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name         text NOT NULL UNIQUE,
    version      text NOT NULL,
    pid          integer NOT NULL,
    started_at   timestamptz NOT NULL,
    -- Where this node listens: {"api": [...], "dhcp": [...]}.
    addresses    jsonb NOT NULL DEFAULT '{}',
    -- Enabled services and whether each runs now: {"api": true, "dhcp": false, ...}.
    services     jsonb NOT NULL DEFAULT '{}',
    -- The node's DHCP counters (DhcpControl.counters_snapshot) at its last heartbeat.
    dhcp         jsonb,
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- Set by a clean stop: the node is down at once, not after the silence.
    stopped_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- An alert opens once per (rule, subject) and clears once; a cleared row is history.
CREATE TABLE alerts (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    rule        text NOT NULL,
    subject     text NOT NULL,  -- what it is about: a pool id, a node name, 'license', ...
    severity    text NOT NULL CHECK (severity IN ('warning', 'critical')),
    summary     text NOT NULL,
    value       double precision,
    threshold   double precision,
    opened_at   timestamptz NOT NULL DEFAULT now(),
    cleared_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX alerts_open ON alerts (rule, subject) WHERE cleared_at IS NULL;
CREATE INDEX alerts_id ON alerts (id DESC);

-- Where alert openings and clearings go (no topic, no HMAC). settings holds the
-- kind's fields; a credential is only ever a secret_ref (env:NAME or file:/path).
CREATE TABLE alert_destinations (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name        text NOT NULL UNIQUE,
    kind        text NOT NULL CHECK (kind IN ('smtp', 'alertmanager', 'pager', 'webhook')),
    settings    jsonb NOT NULL,
    enabled     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Alert deliveries are outbox rows of kind 'alert' (target = the destination id).
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('webhook', 'dns', 'alert'));

-- Alert events (topic alert.opened / alert.cleared) go to alert destinations only, never to
-- webhooks subscribed to every topic (alert destinations carry no topic or HMAC): the
-- webhook fan-out leaves them out, and a trigger of its own adds one alert row per enabled
-- destination. For lease and audit events it is one scan of the statement's new rows.
CREATE OR REPLACE FUNCTION outbox_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (kind, event_id, topic, webhook_id)
    SELECT 'webhook', e.id, e.topic, w.id
    FROM new_events e
    JOIN webhooks w ON w.enabled AND (w.topics = '{*}' OR e.topic = ANY (w.topics))
    WHERE e.topic NOT LIKE 'alert.%'
    ORDER BY e.id, w.id;
    IF FOUND THEN
        PERFORM pg_notify('ipamd_outbox', 'webhook');
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION alert_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (kind, event_id, topic, target)
    SELECT 'alert', e.id, e.topic, d.id::text
    FROM new_events e
    JOIN alert_destinations d ON d.enabled
    WHERE e.topic LIKE 'alert.%'
    ORDER BY e.id, d.id;
    IF FOUND THEN
        PERFORM pg_notify('ipamd_outbox', 'alert');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_zz_alert_fanout
    AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION alert_fanout();
