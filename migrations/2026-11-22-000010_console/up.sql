-- The settings console (docs/console.md). Tickets and sessions are stored as SHA-256 hashes
-- of their secrets, like API tokens: a read of these tables signs nobody in.
CREATE TABLE console_tickets (
    ticket_hash bytea PRIMARY KEY,
    org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX console_tickets_expires_at ON console_tickets (expires_at);

CREATE TABLE console_sessions (
    session_hash bytea PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    -- Every form of the session carries it (synchronizer token); it never leaves the page.
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
