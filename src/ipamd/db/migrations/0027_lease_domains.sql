-- The lease table's and the journal's value checks as domains (issue 54: the PostgreSQL
-- side of a lone grant). PostgreSQL 15 reads a table's CHECK constraints from their
-- stored text and plans them again in every statement that writes a row (ExecRelCheck),
-- while a domain's checks are read once per session and kept (the type cache). A lone
-- grant or renewal is one statement: perf of the backend put ExecConstraints at ~11 % of
-- its CPU (stringToNode ~8 %), most of it the text of leases_v6_binding (4,169
-- characters) and of the two IN lists (~1,230 each). Same rules as 0003, 0011 and 0017:
-- a value outside a domain's check is refused as before (its error names the domain's
-- constraint); iaid and prefix_length are checked whenever set (only a DHCPv6 binding,
-- ia_type not NULL, sets them), and what ties the columns of a binding together stays a
-- row check, a quarter of the text. Same columns, same base types (no rewrite; the
-- indexes whose predicates name state are rebuilt).
CREATE DOMAIN lease_state AS text
    CONSTRAINT lease_state_check
    CHECK (VALUE IN ('offered', 'active', 'released', 'expired', 'declined'));
CREATE DOMAIN lease_event AS text
    CONSTRAINT lease_event_check
    CHECK (VALUE IN ('granted', 'renewed', 'released', 'expired', 'declined'));
-- RFC 8415 §21.4 (IAID: 4 octets, unsigned); 'na' an address, 'pd' a delegated prefix.
CREATE DOMAIN lease_ia_type AS text
    CONSTRAINT lease_ia_type_check CHECK (VALUE IN ('na', 'pd'));
CREATE DOMAIN lease_iaid AS bigint
    CONSTRAINT lease_iaid_check CHECK (VALUE BETWEEN 0 AND 4294967295);
CREATE DOMAIN lease_prefix_length AS smallint
    CONSTRAINT lease_prefix_length_check CHECK (VALUE BETWEEN 1 AND 128);

ALTER TABLE leases
    DROP CONSTRAINT leases_state_check,
    DROP CONSTRAINT leases_v6_binding,
    ALTER COLUMN state TYPE lease_state,
    ALTER COLUMN ia_type TYPE lease_ia_type,
    ALTER COLUMN iaid TYPE lease_iaid,
    ALTER COLUMN prefix_length TYPE lease_prefix_length,
    ADD CONSTRAINT leases_v6_binding CHECK (
        ia_type IS NULL OR (
            family(ip) = 6 AND duid IS NOT NULL AND iaid IS NOT NULL
            AND prefix_length IS NOT NULL AND (ia_type = 'pd' OR prefix_length = 128)
        )
    );

ALTER TABLE lease_journal
    DROP CONSTRAINT lease_journal_event_check,
    ALTER COLUMN event TYPE lease_event;
