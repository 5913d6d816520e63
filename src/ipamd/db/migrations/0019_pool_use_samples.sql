-- Pool use over time for the dashboard's chart (docs/operations-monitoring.md): the ops service samples
-- every pool's use each ops.pool_sample_seconds, one row per pool per sample, and deletes
-- rows older than ops.pool_sample_retention_days as it writes (ops/pool_samples.py).
-- size is numeric: an IPv6 pool can hold more addresses than a bigint counts. No foreign key:
-- a pool's delete takes no sample rows with it (they age out; reads join the live pools).
CREATE TABLE pool_use_samples (
    at      timestamptz NOT NULL,
    pool_id uuid        NOT NULL,
    used    bigint      NOT NULL,
    size    numeric     NOT NULL,
    PRIMARY KEY (pool_id, at)
);

-- GET /dashboard/pool-use?since= and the retention delete both range over time.
CREATE INDEX pool_use_samples_at ON pool_use_samples (at);
