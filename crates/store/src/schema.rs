//! Diesel schema, kept by hand in step with `migrations/` (the one source of truth).

diesel::table! {
    orgs (id) {
        id -> Uuid,
        name -> Text,
        created_at -> Timestamptz,
        first_endpoint_gone -> Bool,
        filters_version -> Int8,
    }
}

diesel::table! {
    api_tokens (id) {
        id -> Uuid,
        org_id -> Uuid,
        name -> Nullable<Text>,
        token_hash -> Bytea,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
        bucket_level -> Nullable<Double>,
        bucket_updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    leads (id) {
        id -> Uuid,
        org_id -> Uuid,
        name -> Text,
        email -> Nullable<Text>,
        phone -> Text,
        channel -> Text,
        qualification_stage -> Text,
        route_target -> Nullable<Text>,
        profile -> Jsonb,
        external_system -> Nullable<Text>,
        external_id -> Nullable<Text>,
        external_url -> Nullable<Text>,
        ai_paused -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        revision -> Int8,
    }
}

diesel::table! {
    handoffs (id) {
        id -> Uuid,
        org_id -> Uuid,
        lead_id -> Uuid,
        state -> Text,
        reason -> Nullable<Text>,
        operator -> Nullable<Text>,
        requested_at -> Timestamptz,
        accepted_at -> Nullable<Timestamptz>,
        released_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhooks (id) {
        id -> Uuid,
        org_id -> Uuid,
        description -> Text,
        url -> Text,
        event_types -> Array<Text>,
        enabled -> Bool,
        secret_sealed -> Bytea,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        previous_secret_sealed -> Nullable<Bytea>,
        previous_expires_at -> Nullable<Timestamptz>,
        client_cert_pem -> Nullable<Text>,
        client_key_sealed -> Nullable<Bytea>,
        client_cert_subject -> Nullable<Text>,
        client_cert_issuer -> Nullable<Text>,
        client_cert_not_after -> Nullable<Timestamptz>,
        client_cert_warned_at -> Nullable<Timestamptz>,
        max_per_second -> Nullable<Int8>,
        ordering -> Nullable<Text>,
        headers -> Jsonb,
        auth -> Nullable<Jsonb>,
        receiver_secrets_sealed -> Nullable<Bytea>,
        filter -> Nullable<Jsonb>,
        destination -> Nullable<Jsonb>,
    }
}

diesel::table! {
    outbox (seq) {
        seq -> Int8,
        event_id -> Uuid,
        org_id -> Uuid,
        event_type -> Text,
        payload -> Bytea,
        created_at -> Timestamptz,
        delivery_id -> Uuid,
        published_at -> Nullable<Timestamptz>,
        status -> Text,
        attempts -> Int4,
        last_status_code -> Nullable<Int4>,
        last_error -> Nullable<Text>,
        attempt_log -> Jsonb,
        updated_at -> Timestamptz,
        traceparent -> Nullable<Text>,
        is_test -> Bool,
        feed_pos -> Nullable<Int8>,
        replay_at -> Nullable<Timestamptz>,
        lead_id -> Nullable<Uuid>,
        held_at -> Nullable<Timestamptz>,
        resume_attempt -> Nullable<Int4>,
        failed_attempts -> Int4,
        erased_at -> Nullable<Timestamptz>,
        paced_at -> Nullable<Timestamptz>,
        waiting_for -> Nullable<Text>,
        replayed -> Nullable<Bool>,
        deliveries_written -> Nullable<Bool>,
    }
}

diesel::table! {
    endpoint_health (endpoint_id) {
        endpoint_id -> Uuid,
        org_id -> Uuid,
        state -> Text,
        failing_since -> Nullable<Timestamptz>,
        last_success_at -> Nullable<Timestamptz>,
        last_failure_at -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
        consecutive_failures -> Int4,
        streak_started_at -> Nullable<Timestamptz>,
        next_probe_at -> Nullable<Timestamptz>,
        probe_interval_ms -> Nullable<Int8>,
        probe_lease_until -> Nullable<Timestamptz>,
        disabled_reason -> Nullable<Text>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    feed_head (id) {
        id -> Bool,
        pos -> Int8,
        expired_through -> Int8,
        legacy_pos_limit -> Nullable<Int8>,
        legacy_seq_limit -> Nullable<Int8>,
    }
}

diesel::table! {
    secret_format (id) {
        id -> Bool,
        unbound_allowed -> Bool,
    }
}

diesel::table! {
    storage_format (id) {
        id -> Bool,
        compact_by_default -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use qualifier_domain::DeliveryStateSql;

    // Partitioned by ranges of `seq`, the outbox's days.
    deliveries (seq, endpoint_id) {
        seq -> Int8,
        endpoint_id -> Uuid,
        delivery_id -> Uuid,
        org_id -> Uuid,
        lead_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        state -> DeliveryStateSql,
        due_at -> Nullable<Timestamptz>,
        turn_at -> Nullable<Timestamptz>,
        resume_attempt -> Nullable<Int4>,
        attempts -> Int4,
        failed_attempts -> Int4,
        last_status_code -> Nullable<Int4>,
        last_error -> Nullable<Text>,
        attempt_log -> Jsonb,
        replayed -> Bool,
        updated_at -> Timestamptz,
        retrying -> Bool,
        erased -> Bool,
        own_id -> Nullable<Bool>,
    }
}

// An outbox row's org has at most one webhook (webhooks.org_id is its primary key).

diesel::allow_tables_to_appear_in_same_query!(
    orgs,
    api_tokens,
    leads,
    handoffs,
    webhooks,
    outbox,
    deliveries,
    endpoint_health,
    secret_format,
    storage_format
);
