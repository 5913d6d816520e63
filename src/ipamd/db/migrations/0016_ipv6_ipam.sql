-- IPv6 in the address plan (issue 49, point 1): subnets, pools, excludes, reservations,
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
