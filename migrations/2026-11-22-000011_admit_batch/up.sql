-- Rate-limit admission for many requests in one statement. The API gathers the requests that
-- arrive while an admission round trip is in flight and admits them together: one row update
-- per token per batch instead of one statement, commit and WAL record per request
-- (docs/performance.md). The bucket row stays the only source of truth, so the limit is still
-- exact across replicas. Rows are locked in id order, so two replicas' batches cannot deadlock.
-- p_counts[i] requests ask for one unit each from the token whose hash is p_hashes[i]; the first
-- `granted` of them are admitted, the rest refused without consuming anything.
CREATE FUNCTION qualifier_admit_batch(p_hashes bytea[], p_counts int[], p_capacity float8, p_per_second float8)
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
