-- Endpoint health (docs/delivery.md, "Endpoint health"): one row per org endpoint that has ever failed, shared by
-- every webhook-delivery replica. No row means healthy with nothing to report, so the hot path
-- (a healthy org's successes) writes nothing here.
CREATE TABLE endpoint_health (
    org_id uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    state text NOT NULL DEFAULT 'healthy' CHECK (state IN ('healthy', 'failing', 'disabled')),
    failing_since timestamptz,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    last_error text,
    consecutive_failures integer NOT NULL DEFAULT 0,
    -- The first failure of the current run of failures (the span rule measures from it).
    streak_started_at timestamptz,
    next_probe_at timestamptz,
    probe_interval_ms bigint,
    -- A replica that claimed the next probe holds it until then: one probe at a time.
    probe_lease_until timestamptz,
    disabled_reason text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The probe loop's question: which failing endpoints are due.
CREATE INDEX endpoint_health_due ON endpoint_health (next_probe_at) WHERE state = 'failing';

-- A delivery held while its endpoint fails: acknowledged off the broker, waiting here at no
-- cost, released (published again with `resume_attempt`) when the endpoint recovers.
ALTER TABLE outbox ADD COLUMN held_at timestamptz;
ALTER TABLE outbox ADD COLUMN resume_attempt integer;
CREATE INDEX outbox_held ON outbox (org_id, seq) WHERE held_at IS NOT NULL;

-- Operational events (endpoint.failing, endpoint.recovered, endpoint.disabled) to the operator's
-- webhook: their own small outbox, written in the transaction of the state change, sent at
-- least once with retries by any webhook-delivery replica.
CREATE TABLE ops_events (
    id uuid PRIMARY KEY,
    event_type text NOT NULL,
    org_id uuid NOT NULL,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    last_error text
);
CREATE INDEX ops_events_due ON ops_events (next_attempt_at) WHERE delivered_at IS NULL;
