"""DNS: servers, zones and static records; dynamic updates through the outbox (kind dns)."""
