-- The rate limit's admission without a row lock before each bucket's update
-- (docs/decisions.md, "Events and deliveries apart").
--
-- Migration 11's function locked each token's row (`FOR UPDATE`, in id order, so that two
-- replicas' batches could not deadlock) and then updated it: a lock record and the update's
-- record in the write-ahead log for every token of every batch of public requests. Here each
-- token's bucket is one `UPDATE` whose new level is computed from the row it updates: under
-- READ COMMITTED, an `UPDATE` that meets a row another admission changed meanwhile waits for
-- it and computes again from the newer row, so the bucket stays exact across replicas without
-- the lock. The tokens are updated one statement each, in hash order, so two batches still
-- take their rows in one order and cannot deadlock. What the update granted is kept on the row
-- (`bucket_granted`) for the answer to read back: the level before it is the level after it
-- plus what it granted.
--
-- The signature is migration 11's: the release before this one calls the same function while
-- it runs beside this one.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, prefer-bigint-over-int
SET lock_timeout = '500ms';

-- How many requests of one batch the last admission granted: a few, an `integer`.
ALTER TABLE api_tokens ADD COLUMN bucket_granted integer;

-- A bucket's level refilled up to `p_now`: full when it never admitted anything.
CREATE FUNCTION qualifier_bucket_refilled(p_level float8, p_updated timestamptz,
                                          p_now timestamptz, p_capacity float8,
                                          p_per_second float8)
RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT LEAST(p_capacity, COALESCE(p_level, p_capacity)
                 + p_per_second * GREATEST(0, EXTRACT(EPOCH FROM p_now
                                                      - COALESCE(p_updated, p_now))::float8))
$$;

-- Each expression of the `SET` reads the row it updates (never a value read before it), so the
-- row PostgreSQL finds again after waiting for another admission is the one computed from.
CREATE OR REPLACE FUNCTION qualifier_admit_batch(p_hashes bytea[], p_counts int[], p_capacity float8, p_per_second float8)
RETURNS TABLE (token_hash bytea, token_id uuid, org_id uuid, level float8, granted int)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    now_ts timestamptz := clock_timestamp();
    r record;
BEGIN
    FOR r IN SELECT u.h, u.c FROM unnest(p_hashes, p_counts) AS u(h, c) ORDER BY u.h LOOP
        RETURN QUERY
        UPDATE api_tokens a
        SET bucket_level = qualifier_bucket_refilled(a.bucket_level, a.bucket_updated_at,
                                                     now_ts, p_capacity, p_per_second)
                - LEAST(r.c, GREATEST(0, floor(qualifier_bucket_refilled(
                      a.bucket_level, a.bucket_updated_at, now_ts, p_capacity,
                      p_per_second)))::int),
            bucket_granted = LEAST(r.c, GREATEST(0, floor(qualifier_bucket_refilled(
                      a.bucket_level, a.bucket_updated_at, now_ts, p_capacity,
                      p_per_second)))::int),
            bucket_updated_at = now_ts
        WHERE a.token_hash = r.h AND a.revoked_at IS NULL
        RETURNING a.token_hash, a.id, a.org_id, a.bucket_level + a.bucket_granted,
                  a.bucket_granted;
    END LOOP;
END $$;
