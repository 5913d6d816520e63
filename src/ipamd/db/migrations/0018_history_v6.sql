-- History rows of DHCPv6 bindings carry the IA (docs/history.md): the IAID, the IA type
-- ('na' or 'pd') and the prefix length (128 for an address, the delegated length for IA_PD;
-- ip is then the prefix's first address). NULL on DHCPv4 intervals.
ALTER TABLE lease_intervals
    ADD COLUMN iaid          bigint,
    ADD COLUMN ia_type       text,
    ADD COLUMN prefix_length smallint;

-- They are fixed for a lease row's life (migration 0017), so an interval takes them from
-- its lease when it opens, rather than through every lease_events row and the fold
-- (migration 0005), which stays as it is. Only IPv6 intervals look (the WHEN clause: a
-- DHCPv4 batch never calls this). Inside the DHCP commit's fold: it must not fail; a lease
-- gone since (its subnet deleted) leaves them NULL.
CREATE FUNCTION lease_intervals_ia() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT l.iaid, l.ia_type, l.prefix_length INTO NEW.iaid, NEW.ia_type, NEW.prefix_length
      FROM leases l WHERE l.lease_id = NEW.lease_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER lease_intervals_ia BEFORE INSERT ON lease_intervals
    FOR EACH ROW WHEN (family(NEW.ip) = 6) EXECUTE FUNCTION lease_intervals_ia();

UPDATE lease_intervals i SET iaid = l.iaid, ia_type = l.ia_type, prefix_length = l.prefix_length
  FROM leases l
 WHERE l.lease_id = i.lease_id AND family(i.ip) = 6 AND l.ia_type IS NOT NULL;

-- GET /history?ip= with an IPv6 address also finds the delegated prefixes holding it.
CREATE INDEX lease_intervals_delegated ON lease_intervals
    USING gist ((set_masklen(ip, prefix_length)) inet_ops) WHERE ia_type = 'pd';
