//! `qualifierctl migrate` on a database the services are using: a migration that cannot take its
//! locks in time gives way and is tried again, instead of failing the upgrade.

use std::time::{Duration, Instant};

use qualifier_testkit::TestDb;

/// Migration 29 undone, as on a database of the version before it: the newest one pending.
const DOWN_29: &str =
    include_str!("../../../../migrations/2026-11-26-000029_delivery_hours_kept/down.sql");

#[tokio::test(flavor = "multi_thread")]
async fn a_migration_that_meets_a_held_lock_gives_way_and_is_applied_once_it_is_released() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute(&format!(
        "BEGIN; {DOWN_29}
         DELETE FROM __diesel_schema_migrations WHERE version = '20261126000029'; COMMIT;"
    ))
    .await
    .unwrap();
    let pending: bool = c
        .query_one("SELECT to_regclass('delivery_hour_cover') IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(pending, "migration 29 is undone");

    // A reader of the outbox in a long transaction (a console export, a report): replacing
    // the outbox's trigger has to wait for it, longer than the migration's lock timeout.
    let holder = db.client().await;
    holder
        .batch_execute("BEGIN; SELECT count(*) FROM outbox")
        .await
        .unwrap();
    let held = Duration::from_millis(2500);
    let release = tokio::spawn(async move {
        tokio::time::sleep(held).await;
        holder.batch_execute("COMMIT").await.unwrap();
    });

    let started = Instant::now();
    let applied = qualifier_store::run_migrations(&db.database())
        .await
        .expect("migrate succeeds once the reader is done");
    let took = started.elapsed();
    release.await.unwrap();
    assert_eq!(
        applied.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
        ["20261126000029"]
    );
    assert!(
        took >= held,
        "it waited for the reader ({took:?}), it did not apply around it"
    );
    let cover: i64 = c
        .query_one("SELECT count(*) FROM delivery_hour_cover", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(cover, 1, "the migration's work is there, once");
}
