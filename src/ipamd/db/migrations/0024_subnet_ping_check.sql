-- The ping check (docs/api-ipam.md, "Ping check"): before offering an address nobody holds a
-- lease on, the DHCPv4 server sends it an ICMP echo (RFC 792) and waits ping_timeout_ms; an
-- address that answers is held like a declined one and the client gets another. Off by
-- default: an upgraded subnet answers as before, with no wait before its first Offers.
ALTER TABLE subnets
    ADD COLUMN ping_check boolean NOT NULL DEFAULT false,
    ADD COLUMN ping_timeout_ms integer NOT NULL DEFAULT 500
        CONSTRAINT subnets_ping_timeout CHECK (ping_timeout_ms BETWEEN 100 AND 5000);
