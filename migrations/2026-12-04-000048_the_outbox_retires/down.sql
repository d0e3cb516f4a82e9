-- The function gone. A database whose outbox retired stays so: its outbox's delivery columns
-- no longer say the deliveries' states, and no release before this one can read it.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';
DROP FUNCTION qualifier_outbox_retire();
CREATE OR REPLACE FUNCTION qualifier_deliveries_differ() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*)
            FROM outbox o
            CROSS JOIN deliveries_fill f
            CROSS JOIN LATERAL qualifier_delivery_of(o) m
            LEFT JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
            WHERE (o.seq <= f.next_seq OR o.seq > f.until_seq)
              AND d IS DISTINCT FROM m)
         + (SELECT count(*)
            FROM deliveries d
            WHERE NOT EXISTS (SELECT 1 FROM outbox o
                              WHERE o.seq = d.seq AND o.org_id = d.endpoint_id))
$$;
