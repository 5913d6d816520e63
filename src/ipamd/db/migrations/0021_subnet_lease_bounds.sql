-- A client may ask for a lease time (DHCPv4 option 51, RFC 2131 §4.3.1); a subnet's bounds
-- say how far it is honoured (docs/api-ipam.md, "Lease time"). NULL: no bound on that side
-- beyond lease_time_seconds itself, so with neither set every client gets lease_time_seconds
-- (Kea's rule without min-/max-valid-lifetime). The bounds hold the subnet's own lease time.
ALTER TABLE subnets
    ADD COLUMN min_lease_time_seconds integer
        CHECK (min_lease_time_seconds IS NULL OR min_lease_time_seconds > 0),
    ADD COLUMN max_lease_time_seconds integer
        CHECK (max_lease_time_seconds IS NULL OR max_lease_time_seconds > 0),
    ADD CONSTRAINT subnets_lease_bounds CHECK (
        (min_lease_time_seconds IS NULL OR min_lease_time_seconds <= lease_time_seconds)
        AND (max_lease_time_seconds IS NULL OR lease_time_seconds <= max_lease_time_seconds));
