-- Qualifier schema. Timestamps are written by the application already truncated to the
-- millisecond, so the API and event snapshots show exactly what is stored.

CREATE TABLE orgs (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL
);

-- Org API tokens. Only the SHA-256 of the token is stored; lookups go through the unique index
-- on the hash, so the secret itself is never compared byte by byte.
-- The rate-limit bucket lives on the token row so that authentication and admission are one
-- UPDATE, one round trip, shared by every lead-api replica. A NULL bucket means "full".
CREATE TABLE api_tokens (
    id                 uuid PRIMARY KEY,
    org_id             uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name               text,
    token_hash         bytea NOT NULL,
    created_at         timestamptz NOT NULL,
    revoked_at         timestamptz,
    bucket_level       double precision,
    bucket_updated_at  timestamptz
) WITH (fillfactor = 70); -- room for HOT updates of the bucket columns on every request
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash);
CREATE INDEX api_tokens_org ON api_tokens (org_id);

CREATE TABLE leads (
    id                   uuid PRIMARY KEY,
    org_id               uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name                 text NOT NULL,
    email                text,
    phone                text NOT NULL,
    channel              text NOT NULL,
    qualification_stage  text NOT NULL
        CHECK (qualification_stage IN ('qualifying', 'qualified', 'closed')),
    route_target         text,
    profile              jsonb NOT NULL DEFAULT '{}'::jsonb,
    external_system      text,
    external_id          text,
    external_url         text,
    ai_paused            boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    -- One lead per contact: the phone is unique within an org.
    CONSTRAINT leads_org_phone UNIQUE (org_id, phone),
    CONSTRAINT leads_external_ref_whole
        CHECK ((external_system IS NULL) = (external_id IS NULL))
);

CREATE TABLE handoffs (
    id            uuid PRIMARY KEY,
    org_id        uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    lead_id       uuid NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    state         text NOT NULL CHECK (state IN ('requested', 'accepted', 'released')),
    reason        text,
    operator      text,
    requested_at  timestamptz NOT NULL,
    accepted_at   timestamptz,
    released_at   timestamptz
);
-- At most one open handoff per lead, enforced by the database even under concurrent requests.
CREATE UNIQUE INDEX handoffs_one_open_per_lead ON handoffs (lead_id)
    WHERE state IN ('requested', 'accepted');

-- One endpoint per org. The signing secret is sealed with QUALIFIER_SECRET_KEY (AES-256-GCM):
-- secret_sealed = nonce (12 bytes) || ciphertext || tag.
CREATE TABLE webhooks (
    org_id         uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    url            text NOT NULL,
    event_types    text[] NOT NULL,
    enabled        boolean NOT NULL,
    secret_sealed  bytea NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

-- Transactional outbox: each row is an event whose change committed in the same transaction.
-- payload holds the final envelope bytes, exactly what is signed and sent on every attempt.
CREATE TABLE outbox (
    seq          bigserial PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE,
    org_id       uuid NOT NULL,
    event_type   text NOT NULL,
    payload      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
