-- leases_mac (0003) holds only the leases that have a MAC. A DHCPv6 binding has one only
-- when its relay sent the client link-layer address (RFC 6939, option 79: dhcrelay -6 and
-- perfdhcp send none), so most DHCPv6 grants added a NULL entry that no query reads:
-- every look-up by MAC (ipam/leases.py, ipam/search.py) compares it with a value, which
-- implies mac IS NOT NULL, so the partial index serves them as before. A DHCPv4 lease
-- carries its client's hardware address (chaddr): its rows are indexed as before.
DROP INDEX leases_mac;
CREATE INDEX leases_mac ON leases (mac, lease_id) WHERE mac IS NOT NULL;
