-- Rate-limit admission as a PL/pgSQL function: PL/pgSQL keeps its statements' plans for the
-- session, where the same statement sent from the application was parsed and planned on every
-- request (planning it was a third of PostgreSQL's time on a GET; docs/performance.md).
-- Authenticates by token hash and takes one request from the token's bucket, in one statement.
CREATE FUNCTION qualifier_admit(p_hash bytea, p_capacity float8, p_per_second float8)
RETURNS TABLE (token_id uuid, org_id uuid, allowed boolean, level float8)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH t AS (
        SELECT id, now_ts AS ts,
               LEAST(p_capacity, COALESCE(bucket_level, p_capacity)
                   + p_per_second * GREATEST(0, EXTRACT(EPOCH FROM now_ts - COALESCE(bucket_updated_at, now_ts))::float8)) AS lvl
        FROM api_tokens, clock_timestamp() AS now_ts
        WHERE token_hash = p_hash AND revoked_at IS NULL
        FOR UPDATE OF api_tokens
    )
    UPDATE api_tokens a
    SET bucket_level = CASE WHEN t.lvl >= 1 THEN t.lvl - 1 ELSE t.lvl END,
        bucket_updated_at = t.ts
    FROM t
    WHERE a.id = t.id
    RETURNING a.id, a.org_id, (t.lvl >= 1), a.bucket_level;
END $$;
