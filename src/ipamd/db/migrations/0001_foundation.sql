-- Foundation: time-ordered ids, settings, tokens, audit, the event queue, idempotency keys.

-- UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then random bits. Ids sort by creation
-- time, which makes keyset paging on id alone return creation order.
CREATE FUNCTION uuid_generate_v7() RETURNS uuid AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$ LANGUAGE sql VOLATILE;

-- Small key/value settings that operators edit through the API (trusted relays, ...).
CREATE TABLE settings (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- API tokens. Only a SHA-256 of the secret is stored; the secret is shown once.
CREATE TABLE tokens (
    id           uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name         text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
    secret_hash  bytea NOT NULL UNIQUE,
    hint         text NOT NULL,           -- first characters of the secret, for recognition
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    created_by   text NOT NULL
);

-- Every mutation, with the object before and after, written in the mutation's transaction.
CREATE TABLE audit_log (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    action      text NOT NULL,
    object_type text NOT NULL,
    object_id   text,
    before      jsonb,
    after       jsonb
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_object ON audit_log (object_type, object_id, id);
CREATE INDEX audit_log_actor ON audit_log (actor, id);

-- The event queue: one row per lease event or IPAM mutation, written in the same
-- transaction as the change. The outbox fans these out to deliveries.
CREATE TABLE events (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    topic      text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_topic ON events (topic, id);

-- Idempotency-Key records: scope is (caller, method, path); the first request's
-- response is kept for the configured time and replayed for the same body.
CREATE TABLE idempotency_keys (
    scope        text NOT NULL,
    key          text NOT NULL,
    request_hash bytea NOT NULL,
    status       integer,
    response     jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
