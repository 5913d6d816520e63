-- The outbox: webhooks, delivery rows fanned out from `events`, and each row's attempt history.
-- A delivery row has a kind (webhook now, dns later) so every kind of delivery shares one
-- queue, one state machine, one Replay and one Work view.

-- Where events go. secret_ref names where the secret lives (env:NAME or file:/path); the
-- secret itself is never stored. previous_secret_ref is set during a rotation.
CREATE TABLE webhooks (
    id                  uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name                text NOT NULL UNIQUE,
    url                 text NOT NULL,
    secret_ref          text NOT NULL,
    previous_secret_ref text,
    -- Known topic names, or the single element '*' (every topic).
    topics              text[] NOT NULL DEFAULT '{*}' CHECK (cardinality(topics) > 0),
    enabled             boolean NOT NULL DEFAULT true,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- One row per (event, target). The row id is the X-Service-Delivery header.
CREATE TABLE outbox (
    id              uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    kind            text NOT NULL CHECK (kind IN ('webhook', 'dns')),
    event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    topic           text NOT NULL,
    -- kind webhook: the target. No foreign key: rows (the delivery history) outlive a
    -- deleted webhook; deleting one fails its queued rows in the same transaction.
    webhook_id      uuid,
    -- Other kinds (dns): the adapter's target, free-form for that kind.
    target          text,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'retrying', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Due time; a claim moves it to now() + claim timeout, so a crashed worker's row
    -- comes back by itself.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- The claim of the worker holding the row; an outcome is applied only under its claim.
    claim           uuid,
    claimed_by      text,
    last_error      text,
    last_status     integer,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'webhook' OR webhook_id IS NOT NULL)
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state IN ('pending', 'retrying');
CREATE INDEX outbox_event ON outbox (event_id);
CREATE INDEX outbox_webhook ON outbox (webhook_id, id) WHERE webhook_id IS NOT NULL;
CREATE INDEX outbox_state ON outbox (state, id);
CREATE INDEX outbox_topic ON outbox (topic, id);
CREATE INDEX outbox_finished ON outbox (updated_at) WHERE state IN ('delivered', 'failed');

-- Every attempt, for the Work view: when, how long, what came back.
CREATE TABLE outbox_attempts (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    outbox_id   uuid NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    at          timestamptz NOT NULL,
    duration_ms double precision NOT NULL,
    status      integer,
    error       text,
    response    text,
    node        text
);
CREATE INDEX outbox_attempts_row ON outbox_attempts (outbox_id, at);

-- Fan-out: one statement per INSERT into events, however many rows it carries (a batch of
-- lease commits costs one extra statement), and next to nothing when no webhook exists.
-- The notification is sent at commit; identical ones in a transaction are folded into one.
CREATE FUNCTION outbox_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (kind, event_id, topic, webhook_id)
    SELECT 'webhook', e.id, e.topic, w.id
    FROM new_events e
    JOIN webhooks w ON w.enabled AND (w.topics = '{*}' OR e.topic = ANY (w.topics))
    ORDER BY e.id, w.id;
    IF FOUND THEN
        PERFORM pg_notify('ipamd_outbox', 'webhook');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_outbox_fanout
    AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_fanout();
