-- Leases and the lease event log (the source of history and of lease.* webhook topics).
-- Owned by the DHCP server; history reads lease_events.

CREATE TABLE leases (
    lease_id    uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id   uuid NOT NULL REFERENCES subnets (id),
    ip          inet NOT NULL,
    state       text NOT NULL CHECK (state IN ('offered', 'active', 'released', 'expired', 'declined')),
    -- Who the lease belongs to (RFC 2131 §4.2): option 61 when the client sent one, else
    -- htype + chaddr. Matching on this one column keeps the hot-path SQL simple.
    client_key  bytea NOT NULL,
    mac         macaddr,
    client_id   bytea,             -- option 61, raw
    duid        text,              -- from an RFC 4361 client identifier, hex
    hostname    text,              -- option 12
    fqdn        text,              -- option 81
    circuit_id  bytea,             -- option 82 sub-option 1
    remote_id   bytea,             -- option 82 sub-option 2
    giaddr      inet,
    starts_at   timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The database is the final judge: one live lease per address per subnet, whoever asks
-- (two requests, or two appliance nodes on one Postgres). Declined addresses stay held
-- for their probation period.
CREATE UNIQUE INDEX leases_live_ip ON leases (subnet_id, ip)
    WHERE state IN ('offered', 'active', 'declined');
-- And one live lease per client per subnet, so two nodes never give one client two.
CREATE UNIQUE INDEX leases_live_client ON leases (subnet_id, client_key)
    WHERE state IN ('offered', 'active');
CREATE INDEX leases_expiry ON leases (expires_at) WHERE state IN ('offered', 'active', 'declined');
-- For the lease API's filters and the IPAM views. Every index costs each grant two entries
-- (the offer's insert and the Ack's update), so only these: by subnet, address, MAC.
CREATE INDEX leases_subnet ON leases (subnet_id, lease_id);
CREATE INDEX leases_ip ON leases (ip, lease_id);
CREATE INDEX leases_mac ON leases (mac, lease_id);

-- One row per lease event, written in the same transaction as the lease change.
CREATE TABLE lease_events (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    at          timestamptz NOT NULL DEFAULT now(),
    lease_id    uuid NOT NULL,
    event       text NOT NULL CHECK (event IN ('granted', 'renewed', 'released', 'expired', 'declined')),
    subnet_id   uuid NOT NULL,
    ip          inet NOT NULL,
    mac         macaddr,
    client_id   bytea,
    duid        text,
    hostname    text,
    fqdn        text,
    circuit_id  bytea,
    remote_id   bytea,
    giaddr      inet,
    expires_at  timestamptz
);
-- Occupancy queries read lease_intervals (0005); these serve per-lease look-ups and
-- retention. One more index here is one more entry per lease event.
CREATE INDEX lease_events_lease ON lease_events (lease_id, at);
CREATE INDEX lease_events_at ON lease_events (at);

-- Octets as the API shows them: lowercase hex pairs joined by colons.
CREATE FUNCTION dhcp_colon_hex(raw bytea) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT rtrim(regexp_replace(encode(raw, 'hex'), '(..)', '\1:', 'g'), ':')
$$;

-- The body of a lease.* event: the lease fields (docs/webhooks.md) plus the DHCP identities.
-- Times in the API's RFC 3339 UTC form.
CREATE FUNCTION lease_event_payload(
    lease_id uuid, ip inet, subnet_id uuid, hostname text, fqdn text, state text,
    mac macaddr, client_id bytea, circuit_id bytea, remote_id bytea, giaddr inet,
    starts_at timestamptz, expires_at timestamptz
) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'lease_id', lease_id, 'ip', host(ip), 'subnet_id', subnet_id,
        'hostname', hostname, 'fqdn', fqdn, 'state', state, 'mac', mac::text,
        'client_id', dhcp_colon_hex(client_id), 'circuit_id', dhcp_colon_hex(circuit_id),
        'remote_id', dhcp_colon_hex(remote_id), 'giaddr', host(giaddr),
        'starts_at', to_char(starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'expires_at', to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
$$;

-- The DHCP server caches the address plan; any change to it bumps this counter and
-- notifies, at commit, so every node reloads (the counter is the poll fallback).
CREATE SEQUENCE dhcp_plan_version;

CREATE FUNCTION dhcp_plan_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('dhcp_plan_version');
    PERFORM pg_notify('ipamd_dhcp_plan', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER subnets_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON subnets
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER pools_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pools
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER excludes_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON excludes
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER reservations_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON reservations
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER assignments_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON assignments
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER dhcp_options_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dhcp_options
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER client_classes_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON client_classes
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
CREATE TRIGGER settings_dhcp_plan AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION dhcp_plan_changed();
