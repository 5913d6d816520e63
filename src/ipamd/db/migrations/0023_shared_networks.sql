-- Shared networks (docs/api-ipam.md, "Shared networks"): several IPv4 subnets on one link,
-- as Kea's shared-networks and ISC dhcpd's shared-network. A relay's giaddr (or link
-- selection) in any member selects the group, and a new address may come from any member's
-- pools (dhcp/shared.py). A subnet joins one group at most: the column, not a join table.
CREATE TABLE shared_networks (
    id          uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT shared_networks_tenant_name UNIQUE (tenant_id, name)
);

-- No cascade: a group that still has members is not deleted (409, ipam/shared_networks.py);
-- the key judges a delete racing a subnet's joining. Membership is a subnets UPDATE, so the
-- subnets trigger of migration 0003 already bumps dhcp_plan_version; the group's own row
-- (name, description) is nothing the DHCP server reads.
ALTER TABLE subnets
    ADD COLUMN shared_network_id uuid
        CONSTRAINT subnets_shared_network REFERENCES shared_networks (id);
CREATE INDEX subnets_shared_network_id ON subnets (shared_network_id)
    WHERE shared_network_id IS NOT NULL;
