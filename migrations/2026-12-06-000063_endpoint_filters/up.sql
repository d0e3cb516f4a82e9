-- An endpoint's filter (docs/api.md, "Filters"; docs/decisions.md, "Filters where an event
-- becomes deliveries"). `webhooks.filter` keeps the filter as it was saved (compiled by each
-- writer: crates/domain/src/filter.rs); `orgs.filters_version` counts the changes of an org's
-- filters, so that a lead's write, which matches its events against the filters it holds,
-- writes nothing when they are not the org's latest and is sent again with them
-- (crates/store/src/leads/statement.rs). `filtered` counts, per endpoint and hour, the events
-- its filter left out, as one more column of the hourly changes the fold adds up
-- (crates/store/src/console.rs): no row per filtered event. The endpoints an event's filters
-- left out are not kept on its row: the statement that writes an event of an org with filters
-- writes its deliveries too (crates/store/src/filters.rs, `filtered_deliveries`), so the
-- outbox, which every event goes through, keeps its width and the plans made for it.
--
-- Columns with constant defaults: no row is rewritten, and the release before this one, which
-- names the columns it reads and writes, goes on as it was. Waits at most half a second for
-- each lock; past it the migration rolls back and `qualifierctl migrate` tries it again
-- (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE webhooks ADD COLUMN filter jsonb;
ALTER TABLE orgs ADD COLUMN filters_version bigint NOT NULL DEFAULT 0;
ALTER TABLE delivery_hour_changes ADD COLUMN filtered bigint NOT NULL DEFAULT 0;
ALTER TABLE delivery_hours ADD COLUMN filtered bigint NOT NULL DEFAULT 0;

-- The endpoints that wanted an event of org `p_org` and type `p_type` (enabled, subscribed to
-- it, not a test event) among `p_filtered`, those its filters left out: what `filtered`
-- counts. Plain arguments, not the event's row: a whole-row reference builds the row again
-- (its envelope included) each time it is read, and these run for every event.
CREATE FUNCTION qualifier_filtered_of(p_org uuid, p_type text, p_test boolean, p_filtered uuid[])
RETURNS TABLE (endpoint_id uuid) LANGUAGE sql STABLE AS $$
    SELECT w.id FROM webhooks w
    WHERE p_filtered IS NOT NULL AND NOT p_test
      AND w.id = ANY (p_filtered) AND w.org_id = p_org AND w.enabled
      AND p_type = ANY (w.event_types)
$$;

-- An event's deliveries, one per endpoint (migration 58's), without those its filters left
-- out (`p_filtered`, the event's `filtered`): an endpoint other than the org's first gets no
-- row; the org's first keeps the event's own row (its id, its feed position) but ended
-- `skipped` for `Filtered`, due at once so that the relay still gives the event its feed
-- position and the worker finds it ended, as an erased event's. What an event of an org with
-- filters inserts (crates/store/src/deliveries/state/within.rs, `made_for_filtered_events`).
CREATE FUNCTION qualifier_deliveries_made(o outbox, p_filtered uuid[]) RETURNS SETOF deliveries
LANGUAGE sql STABLE AS $$
    SELECT d.seq, e.endpoint_id,
           CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
           d.org_id, d.lead_id, d.created_at,
           CASE WHEN f.endpoint_id IS NULL THEN d.state ELSE 'skipped' END,
           CASE WHEN f.endpoint_id IS NOT NULL THEN '-infinity'
                WHEN d.due_at = '-infinity' THEN NULL ELSE d.due_at END,
           d.turn_at, d.resume_attempt, d.attempts, d.failed_attempts, d.last_status_code,
           CASE WHEN f.endpoint_id IS NULL THEN d.last_error ELSE 'Filtered' END,
           d.attempt_log, d.replayed, d.updated_at, d.retrying, d.erased,
           NOT e.first
    FROM qualifier_delivery_of(o) d
    CROSS JOIN LATERAL qualifier_endpoints_of(o.org_id, o.event_type, o.is_test) e
    LEFT JOIN LATERAL (SELECT x.endpoint_id
                       FROM qualifier_filtered_of(o.org_id, o.event_type, o.is_test, p_filtered) x
                       WHERE p_filtered IS NOT NULL AND e.first
                         AND x.endpoint_id = e.endpoint_id) f ON true
    WHERE p_filtered IS NULL OR e.first OR e.endpoint_id <> ALL (p_filtered)
$$;
