-- The address plan: tenants, prefixes, subnets and their children.
-- Overlap rules that must survive concurrent writers are exclusion constraints here;
-- the API checks them first for clear messages, the database is the final judge.

CREATE EXTENSION IF NOT EXISTS btree_gist;

-- A range of addresses, inclusive at both ends ('[]'), for pools and excludes.
CREATE TYPE inetrange AS RANGE (subtype = inet);

CREATE TABLE tenants (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    name        text NOT NULL CONSTRAINT tenants_name UNIQUE,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The default tenant has a fixed id so every node and every test agrees on it.
INSERT INTO tenants (id, name, description)
VALUES ('00000000-0000-7000-8000-000000000001', 'default', 'The default tenant');

CREATE TABLE prefixes (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    cidr        cidr NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT prefixes_tenant_cidr UNIQUE (tenant_id, cidr)
);
CREATE INDEX prefixes_cidr ON prefixes USING gist (cidr inet_ops);

CREATE TABLE client_classes (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    name        text NOT NULL,
    match       text NOT NULL CHECK (match IN ('vendor_class', 'user_class', 'mac_prefix')),
    value       text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT client_classes_tenant_name UNIQUE (tenant_id, name)
);

CREATE TABLE subnets (
    id                 uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    tenant_id          uuid NOT NULL REFERENCES tenants (id),
    prefix_id          uuid NOT NULL REFERENCES prefixes (id),
    cidr               cidr NOT NULL,
    name               text NOT NULL DEFAULT '',
    description        text NOT NULL DEFAULT '',
    gateway            inet,
    lease_time_seconds integer NOT NULL DEFAULT 86400 CHECK (lease_time_seconds > 0),
    dhcp_enabled       boolean NOT NULL DEFAULT true,
    next_server        text,
    boot_file          text,
    ntp_servers        inet[] NOT NULL DEFAULT '{}',
    ddns_adapter       text NOT NULL DEFAULT 'none'
                       CHECK (ddns_adapter IN ('none', 'ad_gsstsig', 'bind_tsig', 'powerdns_http', 'embedded')),
    ddns_zone          text,
    ddns_reverse_zone  text,
    ddns_ttl           integer CHECK (ddns_ttl IS NULL OR ddns_ttl > 0),
    ddns_server_id     uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    -- The DHCP server is DHCPv4: subnets are IPv4 (prefixes may be either family).
    CONSTRAINT subnets_ipv4 CHECK (family(cidr) = 4),
    -- Subnets of one tenant never overlap.
    CONSTRAINT subnets_no_overlap EXCLUDE USING gist (tenant_id WITH =, cidr inet_ops WITH &&)
);
CREATE INDEX subnets_prefix ON subnets (prefix_id);
CREATE INDEX subnets_cidr ON subnets USING gist (cidr inet_ops);

CREATE TABLE pools (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id  uuid NOT NULL REFERENCES subnets (id),
    name       text NOT NULL,
    start_ip   inet NOT NULL,
    end_ip     inet NOT NULL,
    class_id   uuid REFERENCES client_classes (id),
    range      inetrange GENERATED ALWAYS AS (inetrange(start_ip, end_ip, '[]')) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (start_ip <= end_ip),
    CONSTRAINT pools_no_overlap EXCLUDE USING gist (subnet_id WITH =, range WITH &&)
);
CREATE INDEX pools_class ON pools (class_id) WHERE class_id IS NOT NULL;

CREATE TABLE excludes (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id  uuid NOT NULL REFERENCES subnets (id),
    start_ip   inet NOT NULL,
    end_ip     inet NOT NULL,
    range      inetrange GENERATED ALWAYS AS (inetrange(start_ip, end_ip, '[]')) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (start_ip <= end_ip),
    CONSTRAINT excludes_no_overlap EXCLUDE USING gist (subnet_id WITH =, range WITH &&)
);

CREATE TABLE reservations (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id  uuid NOT NULL REFERENCES subnets (id),
    ip         inet NOT NULL,
    mac        macaddr,
    duid       text,
    client_id  bytea,
    hostname   text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reservations_identity CHECK (mac IS NOT NULL OR duid IS NOT NULL),
    CONSTRAINT reservations_subnet_ip UNIQUE (subnet_id, ip),
    CONSTRAINT reservations_subnet_mac UNIQUE (subnet_id, mac),
    CONSTRAINT reservations_subnet_duid UNIQUE (subnet_id, duid)
);
CREATE INDEX reservations_mac ON reservations (mac);
CREATE INDEX reservations_client_id ON reservations (client_id) WHERE client_id IS NOT NULL;
-- Search: by address across subnets, by DUID, by hostname prefix (range scans in the C
-- collation, whatever the database's default collation is).
CREATE INDEX reservations_ip ON reservations (ip);
CREATE INDEX reservations_duid ON reservations (duid) WHERE duid IS NOT NULL;
CREATE INDEX reservations_hostname ON reservations ((lower(hostname) COLLATE "C"))
    WHERE hostname IS NOT NULL;

-- Static hosts without DHCP; they count against the license cap like reservations.
CREATE TABLE assignments (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id   uuid NOT NULL REFERENCES subnets (id),
    ip          inet NOT NULL,
    hostname    text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT assignments_subnet_ip UNIQUE (subnet_id, ip)
);
CREATE INDEX assignments_ip ON assignments (ip);
CREATE INDEX assignments_hostname ON assignments ((lower(hostname) COLLATE "C"));

CREATE TABLE dhcp_options (
    id           uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    subnet_id    uuid NOT NULL REFERENCES subnets (id),
    code         integer NOT NULL CHECK (code BETWEEN 1 AND 254),
    payload      jsonb NOT NULL,
    vendor_class text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dhcp_options_unique ON dhcp_options (subnet_id, code, coalesce(vendor_class, ''));
