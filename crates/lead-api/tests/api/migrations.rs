//! `qualifierctl migrate` on a database the services are using: a migration that cannot take its
//! locks in time gives way and is tried again, instead of failing the upgrade.

use std::time::{Duration, Instant};

use qualifier_testkit::TestDb;

/// Migration 29 undone, as on a database of the version before it: the one pending. Migration
/// 41, which counts on what 29 made, is undone first and pending too.
const DOWN_29: &str =
    include_str!("../../../../migrations/2026-11-26-000029_delivery_hours_kept/down.sql");
const DOWN_41: &str =
    include_str!("../../../../migrations/2026-11-29-000041_delivery_hours_per_statement/down.sql");

#[tokio::test(flavor = "multi_thread")]
async fn a_migration_that_meets_a_writers_lock_gives_way_and_a_readers_does_not_stop_it() {
    let db = TestDb::new().await;
    let c = db.client().await;
    qualifier_testkit::sql::undo_migrations(
        &c,
        &[("20261129000041", DOWN_41), ("20261126000029", DOWN_29)],
    )
    .await;
    let pending: bool =
        qualifier_testkit::sql::one(&c, "SELECT to_regclass('delivery_hour_cover') IS NULL", &[])
            .await;
    assert!(
        pending,
        "the kept hours (2026-11-26-000029_delivery_hours_kept) are undone"
    );

    // A reader of the outbox in a long transaction (a console export, a report, or the
    // previous version's backlog gauge, which reads the whole table): replacing the outbox's
    // trigger does not wait for it. A writer's open transaction: the migration waits for it,
    // longer than its lock timeout, by giving way and trying again.
    let reader = db.client().await;
    reader
        .batch_execute("BEGIN; SELECT count(*) FROM outbox")
        .await
        .unwrap();
    let writer = db.client().await;
    writer
        .batch_execute("BEGIN; UPDATE outbox SET updated_at = updated_at WHERE seq = -1")
        .await
        .unwrap();
    let held = Duration::from_millis(2500);
    let release = tokio::spawn(async move {
        tokio::time::sleep(held).await;
        writer.batch_execute("COMMIT").await.unwrap();
    });

    let started = Instant::now();
    let applied = qualifier_store::run_migrations(&db.database())
        .await
        .expect("migrate succeeds once the writer is done");
    let took = started.elapsed();
    release.await.unwrap();
    assert_eq!(
        applied.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
        ["20261126000029", "20261129000041"]
    );
    assert!(
        took >= held,
        "it waited for the writer ({took:?}), it did not apply around it"
    );
    // Applied while the reader still held its transaction: readers never held it back.
    reader.batch_execute("COMMIT").await.unwrap();
    let cover: i64 =
        qualifier_testkit::sql::one(&c, "SELECT count(*) FROM delivery_hour_cover", &[]).await;
    assert_eq!(cover, 1, "the migration's work is there, once");
}

/// The form of every envelope in the outbox: `true` for each stored compressed (its first byte
/// is the compact form's tag, `crates/store/src/payload.rs`).
async fn envelopes_compressed(c: &tokio_postgres::Client) -> Vec<bool> {
    qualifier_testkit::sql::column(
        c,
        "SELECT get_byte(payload, 0) = 1 FROM outbox ORDER BY seq",
        &[],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_migrate_created_stores_compact_by_default() {
    // The test database is built by `run_migrations` from the first migration, as
    // `qualifierctl migrate` builds a new deployment's.
    let app = crate::helpers::TestApp::spawn_with(|c| c.compress_payloads = None).await;
    let (_, token, lead) = app.org_with_lead("+447700900401").await;
    app.public_expect(
        200,
        reqwest::Method::PATCH,
        &format!("/api/v1/leads/{}", lead["id"].as_str().unwrap()),
        &token,
        Some(serde_json::json!({"status": "closed"})),
    )
    .await;
    let forms = envelopes_compressed(&app.db.client().await).await;
    assert!(!forms.is_empty(), "the new lead's event is in the outbox");
    assert!(
        forms.iter().all(|c| *c),
        "auto on a new database stores envelopes compressed: {forms:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_an_earlier_version_created_stays_plain_by_default() {
    const FIRST: &str = include_str!("../../../../migrations/2026-11-21-000001_initial/up.sql");
    let db = TestDb::empty().await;
    let c = db.client().await;
    let store = || crate::helpers::store_on(&db);
    // An earlier version's database, as its `migrate` left it: the first migration applied and
    // recorded where diesel records it.
    c.batch_execute(&format!(
        "{FIRST}
         CREATE TABLE __diesel_schema_migrations (
             version VARCHAR(50) PRIMARY KEY NOT NULL,
             run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP);
         INSERT INTO __diesel_schema_migrations (version) VALUES ('20261121000001');"
    ))
    .await
    .unwrap();
    // A service of this version started before `migrate` ran finds no answer: plain.
    assert!(!store().compact_by_default().await.unwrap());
    assert!(
        !store().with_payload_storage(None).await.compress_payloads,
        "auto before the migrations: plain"
    );

    let applied = qualifier_store::run_migrations(&db.database())
        .await
        .unwrap();
    assert_eq!(applied.first().map(String::as_str), Some("20261121000002"));
    assert!(
        !store().with_payload_storage(None).await.compress_payloads,
        "auto on an upgraded database: plain, which the earlier version reads"
    );
    // What the operator sets explicitly wins over the database's answer.
    assert!(
        store()
            .with_payload_storage(Some(true))
            .await
            .compress_payloads
    );
    // Running `migrate` again changes nothing.
    assert!(
        qualifier_store::run_migrations(&db.database())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!store().compact_by_default().await.unwrap());
}

/// Migration 27 marks the outbox's rows with a constraint; checking every row against it is a
/// read of the whole table, and must not happen under the exclusive lock the constraint's
/// creation takes (one file is one query string, so one transaction, whatever its metadata
/// says). So 27 leaves the constraint not valid, and the next file validates it under a lock
/// that lets writes go on. Before the fix 27 validated in the same string, holding the outbox's
/// exclusive lock through the whole read. Run on a table of the outbox's old shape.
#[tokio::test(flavor = "multi_thread")]
async fn the_outbox_constraint_is_validated_apart_from_its_exclusive_lock() {
    const ADD: &str =
        include_str!("../../../../migrations/2026-11-26-000027_outbox_legacy_range/up.sql");
    const VALIDATE: &str =
        include_str!("../../../../migrations/2026-11-26-0000271_outbox_legacy_range_valid/up.sql");
    let db = TestDb::empty().await;
    let c = db.client().await;
    c.batch_execute(
        "CREATE TABLE outbox (seq int8 PRIMARY KEY);
         INSERT INTO outbox SELECT generate_series(1, 10000);",
    )
    .await
    .unwrap();
    let valid = async || -> Option<bool> {
        c.query_opt(
            "SELECT convalidated FROM pg_constraint WHERE conname = 'outbox_legacy_range'",
            &[],
        )
        .await
        .unwrap()
        .map(|r| r.get(0))
    };
    c.batch_execute(ADD).await.unwrap();
    assert_eq!(valid().await, Some(false), "27 checks no row");
    c.batch_execute(VALIDATE).await.unwrap();
    assert_eq!(valid().await, Some(true), "the next file validates");
    // Run again (a database that validated in 27 already): nothing to do, no error.
    c.batch_execute(VALIDATE).await.unwrap();
    assert_eq!(valid().await, Some(true));
}

/// Migration 25 starts the hourly totals' triggers; the hours already in the window are counted
/// by the next file, which takes no lock a writer waits for, and still agrees with the
/// triggers whatever changes between the two. Forced: after 25, row A changes; a writer then
/// holds row B's change open while the count runs, and commits after it; then a new row
/// arrives. Every total must come out as the rows are. Before the fix 25 counted under the
/// triggers' lock, which waits for every open writer and holds every new one behind it.
/// Run on a table of the outbox's old shape (the columns the totals read).
#[tokio::test(flavor = "multi_thread")]
async fn the_hourly_totals_are_counted_without_holding_writers_and_agree_with_the_triggers() {
    const START: &str =
        include_str!("../../../../migrations/2026-11-25-000025_delivery_hours/up.sql");
    const COUNT: &str =
        include_str!("../../../../migrations/2026-11-25-0000251_delivery_hours_backfill/up.sql");
    let db = TestDb::empty().await;
    let c = db.client().await;
    c.batch_execute(
        "CREATE TABLE outbox (
             seq serial PRIMARY KEY, org_id uuid NOT NULL,
             created_at timestamptz NOT NULL DEFAULT now(), status text NOT NULL,
             failed_attempts int4 NOT NULL DEFAULT 0);
         INSERT INTO outbox (org_id, created_at, status) VALUES
             ('00000000-0000-0000-0000-00000000000a', now() - interval '2 hours', 'pending'),
             ('00000000-0000-0000-0000-00000000000a', now() - interval '2 hours', 'pending'),
             ('00000000-0000-0000-0000-00000000000a', now() - interval '3 hours', 'succeeded');",
    )
    .await
    .unwrap();
    c.batch_execute(START).await.unwrap();
    c.batch_execute("UPDATE outbox SET status = 'succeeded' WHERE seq = 1")
        .await
        .unwrap();
    let writer = db.client().await;
    writer
        .batch_execute(
            "BEGIN; UPDATE outbox SET status = 'dead', failed_attempts = 5 WHERE seq = 2",
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), c.batch_execute(COUNT))
        .await
        .expect("the count waits for no writer")
        .unwrap();
    writer.batch_execute("COMMIT").await.unwrap();
    c.batch_execute(
        "INSERT INTO outbox (org_id, status) VALUES ('00000000-0000-0000-0000-00000000000a', 'pending')",
    )
    .await
    .unwrap();
    let totals = c
        .query_one(
            "SELECT sum(succeeded)::int8, sum(dead)::int8, sum(skipped)::int8,
                    sum(in_progress)::int8, sum(failed_attempts)::int8
             FROM delivery_hour_deltas",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<i64> = (0..5).map(|i| totals.get(i)).collect();
    assert_eq!(
        got,
        [2, 1, 0, 1, 5],
        "succeeded, dead, skipped, in progress, failed attempts"
    );
    // Run again (done, or a database counted by 2026-11-25-000025_delivery_hours): nothing added.
    c.batch_execute(COUNT).await.unwrap();
    let again: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT sum(succeeded)::int8 FROM delivery_hour_deltas",
        &[],
    )
    .await;
    assert_eq!(again, 2);
}

/// New outbox partitions keep no `_range` CHECK constraint once attached: each
/// statement writing one set it up and checked every row against it. The partition's bound
/// still holds: a row of another day written straight into the partition is refused, and one
/// written through `outbox` lands in its own day's partition.
#[tokio::test(flavor = "multi_thread")]
async fn a_partition_without_its_range_constraint_still_holds_only_its_days() {
    let db = TestDb::new().await;
    let c = db.client().await;
    // Far enough ahead that housekeeping has not made it: days 30000 and 30001.
    let made: bool =
        qualifier_testkit::sql::one(&c, "SELECT qualifier_outbox_partition(30000, 30001)", &[])
            .await;
    assert!(made);
    let checks: Vec<String> = qualifier_testkit::sql::column(
        &c,
        "SELECT conname::text FROM pg_constraint
             WHERE conrelid = 'outbox_d30000_30001'::regclass AND contype = 'c' ORDER BY 1",
        &[],
    )
    .await;
    assert_eq!(
        checks,
        ["outbox_status_check"],
        "the range went, the status check stays"
    );

    let org = uuid::Uuid::new_v4().to_string();
    let row = |table: &str, day: i64| {
        format!(
            "INSERT INTO {table} (seq, event_id, org_id, event_type, payload, delivery_id)
             VALUES (({day}::int8 << 32) + 1, gen_random_uuid(), '{org}', 'lead.created',
                     '\\x7b7d'::bytea, gen_random_uuid())"
        )
    };
    let refused = c
        .batch_execute(&row("outbox_d30000_30001", 30001))
        .await
        .expect_err("a row of day 30001 does not belong to the partition of day 30000");
    let why = refused.as_db_error().map(|e| e.message().to_owned());
    assert!(
        why.as_deref()
            .is_some_and(|m| m.contains("violates partition constraint")),
        "{refused:?}"
    );
    c.batch_execute(&row("outbox", 30000)).await.unwrap();
    let landed: String = qualifier_testkit::sql::one(
        &c,
        "SELECT tableoid::regclass::text FROM outbox WHERE seq = (30000::int8 << 32) + 1",
        &[],
    )
    .await;
    assert_eq!(landed, "outbox_d30000_30001");
}

/// Leads name their org without a foreign key, so that a new lead locks no org
/// row; an org deleted (by hand: the service deletes none) still takes its leads, and their
/// handoffs by theirs, as the key's `ON DELETE CASCADE` did, and another org's stay.
#[tokio::test(flavor = "multi_thread")]
async fn an_org_deleted_takes_its_leads_without_a_foreign_key() {
    let db = TestDb::new().await;
    let c = db.client().await;
    let keys: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT count(*) FROM pg_constraint
         WHERE conrelid = 'leads'::regclass AND contype = 'f'",
        &[],
    )
    .await;
    assert_eq!(keys, 0, "a new lead checks no org row");
    c.batch_execute(
        "INSERT INTO orgs (id, name, created_at) VALUES
             ('00000000-0000-0000-0000-0000000000b1', 'gone', now()),
             ('00000000-0000-0000-0000-0000000000b2', 'kept', now());
         INSERT INTO leads (id, org_id, name, phone, channel, qualification_stage, created_at,
                            updated_at)
         SELECT gen_random_uuid(), o, 'Ada', '+4420' || n, 'whatsapp', 'qualifying', now(), now()
         FROM unnest(ARRAY['00000000-0000-0000-0000-0000000000b1',
                           '00000000-0000-0000-0000-0000000000b2']::uuid[]) AS o,
              generate_series(1, 3) AS n;
         INSERT INTO handoffs (id, org_id, lead_id, state, requested_at)
         SELECT gen_random_uuid(), org_id, id, 'requested', now() FROM leads;
         DELETE FROM orgs WHERE id = '00000000-0000-0000-0000-0000000000b1'",
    )
    .await
    .unwrap();
    let left: Vec<String> = qualifier_testkit::sql::column(
        &c,
        "SELECT DISTINCT org_id::text FROM leads
         UNION ALL SELECT DISTINCT 'handoff ' || org_id::text FROM handoffs",
        &[],
    )
    .await;
    assert_eq!(
        left,
        [
            "00000000-0000-0000-0000-0000000000b2",
            "handoff 00000000-0000-0000-0000-0000000000b2"
        ]
    );
}
