-- Migration 11's admission, each row locked before its update.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

CREATE OR REPLACE FUNCTION qualifier_admit_batch(p_hashes bytea[], p_counts int[], p_capacity float8, p_per_second float8)
RETURNS TABLE (token_hash bytea, token_id uuid, org_id uuid, level float8, granted int)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH t AS (
        SELECT a.id, r.c, now_ts AS ts,
               LEAST(p_capacity, COALESCE(a.bucket_level, p_capacity)
                   + p_per_second * GREATEST(0, EXTRACT(EPOCH FROM now_ts - COALESCE(a.bucket_updated_at, now_ts))::float8)) AS lvl
        FROM unnest(p_hashes, p_counts) AS r(h, c)
        JOIN api_tokens a ON a.token_hash = r.h, clock_timestamp() AS now_ts
        WHERE a.revoked_at IS NULL
        ORDER BY a.id
        FOR UPDATE OF a
    ), g AS (
        SELECT t.id, t.ts, t.lvl, LEAST(t.c, GREATEST(0, floor(t.lvl))::int) AS n FROM t
    )
    UPDATE api_tokens a
    SET bucket_level = g.lvl - g.n,
        bucket_updated_at = g.ts
    FROM g
    WHERE a.id = g.id
    RETURNING a.token_hash, a.id, a.org_id, g.lvl, g.n;
END $$;

DROP FUNCTION qualifier_bucket_refilled(float8, timestamptz, timestamptz, float8, float8);
ALTER TABLE api_tokens DROP COLUMN bucket_granted;
