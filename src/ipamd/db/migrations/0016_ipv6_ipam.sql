-- IPv6 in the address plan (docs/api-ipam.md, "IPv6"): subnets, pools, excludes, reservations,
-- assignments and options of either family. The DHCPv4 server's plan loader reads only IPv4
-- rows (dhcp/plan_loader.py); IPv6 ones wait for the DHCPv6 server.
ALTER TABLE subnets DROP CONSTRAINT subnets_ipv4;

-- What an IPv6 subnet has not: a gateway (routers are announced by Router Advertisements,
-- RFC 4861) and the DHCPv4 PXE fields (siaddr, file; DHCPv6 has option 59, RFC 5970). The
-- API refuses them first with a message; this is the final judge.
ALTER TABLE subnets ADD CONSTRAINT subnets_v6_fields
    CHECK (family(cidr) = 4 OR (gateway IS NULL AND next_server IS NULL AND boot_file IS NULL));

-- A range has both ends in one family (inet orders every IPv4 address before every IPv6 one,
-- so a mixed range would be "valid" to the range type).
ALTER TABLE pools ADD CONSTRAINT pools_one_family CHECK (family(start_ip) = family(end_ip));
ALTER TABLE excludes ADD CONSTRAINT excludes_one_family CHECK (family(start_ip) = family(end_ip));

-- The DUID is unique per subnet (reservations_subnet_duid, 0002), compared in the one form
-- the API stores (core/identifiers.duid: lowercase colon-separated hex).

-- Delegation pools (RFC 8415 IA_PD; docs/api-ipam.md): a prefix of the subnet's tenant cut
-- into delegated prefixes of one length (ipam/pd_pools.py). tenant_id is the subnet's, kept
-- here so the exclusion constraint can judge overlaps per tenant (separate address spaces).
CREATE TABLE pd_pools (
    id               uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    subnet_id        uuid NOT NULL REFERENCES subnets (id),
    name             text NOT NULL,
    prefix           cidr NOT NULL,
    delegated_length integer NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pd_pools_ipv6 CHECK (family(prefix) = 6),
    CONSTRAINT pd_pools_length CHECK (delegated_length > masklen(prefix) AND delegated_length <= 128),
    CONSTRAINT pd_pools_no_overlap EXCLUDE USING gist (tenant_id WITH =, prefix inet_ops WITH &&)
);
CREATE INDEX pd_pools_subnet ON pd_pools (subnet_id);

-- Excluded delegated prefixes: a CIDR inside the pool covering 2^(delegated_length - its
-- length) of them; they never overlap within a pool.
CREATE TABLE pd_excludes (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    pd_pool_id uuid NOT NULL REFERENCES pd_pools (id),
    prefix     cidr NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pd_excludes_no_overlap EXCLUDE USING gist (pd_pool_id WITH =, prefix inet_ops WITH &&)
);

-- One delegated prefix for one DUID; both unique per pool. They count against the license cap.
CREATE TABLE pd_reservations (
    id         uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    pd_pool_id uuid NOT NULL REFERENCES pd_pools (id),
    prefix     cidr NOT NULL,
    duid       text NOT NULL,
    hostname   text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pd_reservations_pool_prefix UNIQUE (pd_pool_id, prefix),
    CONSTRAINT pd_reservations_pool_duid UNIQUE (pd_pool_id, duid)
);
CREATE INDEX pd_reservations_duid ON pd_reservations (duid);
