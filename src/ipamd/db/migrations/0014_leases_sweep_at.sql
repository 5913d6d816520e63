-- A renewal rewrites no index entry. It moves expires_at, and the expiry index on expires_at
-- made every renewal a non-HOT update: a new entry in each of the six indexes of leases and
-- a new row version on whatever page had room: ~39 µs of PostgreSQL CPU a renewal, against
-- ~26 µs a new lease's insert; heap-only, ~25 µs (bench/bench_leasestore.py --batch 20,
-- variants base and expiry_index, medians of 5).
--
-- The expiry sweep now finds leases by sweep_at: when the sweep next looks at the lease, at
-- or before its expiry. A renewal leaves sweep_at as it was (a heap-only update: no index
-- names a column it changes). When the sweep reaches a lease that was renewed since, it moves
-- sweep_at to the lease's expiry (dhcp/leasestore.py, _EXPIRE): one index update per lease
-- per lease time, off the DHCP path, instead of one per renewal.
--
-- The rule the sweep relies on, sweep_at <= expires_at, is kept by the row trigger below for
-- every writer (a statement that sets no sweep_at, or moves expires_at earlier). The lease
-- store sets sweep_at itself, so the trigger's function does not run for its rows: only the
-- WHEN condition is evaluated.
ALTER TABLE leases ADD COLUMN sweep_at timestamptz;
UPDATE leases SET sweep_at = expires_at;
ALTER TABLE leases ALTER COLUMN sweep_at SET NOT NULL;

CREATE FUNCTION leases_sweep_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.sweep_at := NEW.expires_at;
    RETURN NEW;
END $$;
CREATE TRIGGER leases_sweep_at BEFORE INSERT OR UPDATE ON leases FOR EACH ROW
    WHEN (NEW.sweep_at IS NULL OR NEW.sweep_at > NEW.expires_at)
    EXECUTE FUNCTION leases_sweep_at();

DROP INDEX leases_expiry;
CREATE INDEX leases_sweep ON leases (sweep_at) WHERE state IN ('offered', 'active', 'declined');

-- Room on each page for renewed row versions: a heap-only update must stay on its page.
-- Applies to pages filled from now on.
ALTER TABLE leases SET (fillfactor = 80);
