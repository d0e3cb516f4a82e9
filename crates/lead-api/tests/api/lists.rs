//! A deliveries list reads its page, not other orgs' rows, even when the open partition's
//! statistics are wrong about whose rows it holds (docs/decisions.md, "A deliveries list names
//! its index through its order").

use std::time::{Duration, Instant};

use qualifier_domain::delivery::DeliveryStatus;
use qualifier_store::deliveries::DeliveryFilter;
use qualifier_testkit::TestDb;
use uuid::Uuid;

use crate::helpers::{outbox_autovacuum_off, rows_read, store_on};

/// `n` delivered events of `org`, created now, in the open partition.
async fn write(c: &tokio_postgres::Client, org: Uuid, n: i32, status: &str) {
    c.execute(
        "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, status,
                             lead_id, published_at, attempts)
         SELECT gen_random_uuid(), $1::text::uuid, 'lead.updated', '\\x7b7d', gen_random_uuid(), $3,
                gen_random_uuid(), now(), 1
         FROM generate_series(1, $2)",
        &[&org.to_string(), &n, &status],
    )
    .await
    .unwrap();
}

/// `read()` once it gives the same answer twice, 1.2 s apart: once what sessions that ended
/// read has been reported.
async fn settled<T: PartialEq, F: std::future::Future<Output = T>>(read: impl Fn() -> F) -> T {
    let mut last = read().await;
    loop {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let now = read().await;
        if now == last {
            return now;
        }
        last = now;
    }
}

/// What `read` made PostgreSQL read from the outbox: the counters before, then after the
/// reading session reported them (a backend reports its counters shortly after it goes idle).
async fn reads_of<F: std::future::Future<Output = ()>>(c: &tokio_postgres::Client, read: F) -> i64 {
    table_reads_of(c, "outbox", read).await
}

/// [`reads_of`] for the partitions of `table` (`outbox` or `deliveries`).
async fn table_reads_of<F: std::future::Future<Output = ()>>(
    c: &tokio_postgres::Client,
    table: &str,
    read: F,
) -> i64 {
    let before = rows_read(c, table).await;
    read.await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = rows_read(c, table).await;
    while after == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = rows_read(c, table).await;
    }
    assert!(after > before, "the reads of {table} were reported");
    // Anything reported late would only make the count larger, never hide a walk.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    rows_read(c, table).await - before
}

/// A small org's 151 events, the open partition analysed, then a busy org's burst of 3,000:
/// the statistics say the small org wrote every row of the partition. Its first page since a
/// day and its page of one status since an hour each read about what they answer, where
/// walking the partition newest first would read through the burst.
#[tokio::test(flavor = "multi_thread")]
async fn a_list_reads_its_page_when_the_statistics_predate_another_orgs_burst() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute("SELECT qualifier_outbox_roll(6)")
        .await
        .unwrap();
    // Autovacuum would correct the statistics within a minute: the case is that minute.
    outbox_autovacuum_off(&c).await;
    let (small, busy) = (Uuid::new_v4(), Uuid::new_v4());
    write(&c, small, 140, "succeeded").await;
    write(&c, small, 11, "dead").await;
    c.batch_execute("ANALYZE outbox").await.unwrap();
    write(&c, busy, 3000, "succeeded").await;

    let store = store_on(&db);
    let day_ago = time::OffsetDateTime::now_utc() - time::Duration::DAY;
    let since_day = DeliveryFilter {
        since: Some(day_ago),
        ..DeliveryFilter::default()
    };
    let read = reads_of(&c, async {
        let (page, next) = store
            .deliveries()
            .list_deliveries(small, &since_day, None, 50)
            .await
            .unwrap();
        assert_eq!(page.len(), 50, "a full page of the small org's");
        assert!(next.is_some());
    })
    .await;
    assert!(
        read <= 10 * 51 + 20,
        "the page since a day read {read} rows for 51; a walk through the burst reads 3,000 more"
    );

    let dead_since_hour = DeliveryFilter {
        statuses: vec![DeliveryStatus::Dead],
        since: Some(time::OffsetDateTime::now_utc() - time::Duration::HOUR),
        ..DeliveryFilter::default()
    };
    let read = reads_of(&c, async {
        let (page, next) = store
            .deliveries()
            .list_deliveries(small, &dead_since_hour, None, 50)
            .await
            .unwrap();
        assert_eq!(
            page.len(),
            11,
            "the small org's dead deliveries, fewer than a page"
        );
        assert!(next.is_none());
    })
    .await;
    assert!(
        read <= 10 * 11 + 20,
        "the dead deliveries since an hour read {read} rows for 11"
    );
}

/// Each way a delivery can be `pending`, `failed`, `dead` or `skipped`, four of each, and 600
/// more in flight, among an org's history of succeeded deliveries before and after them: a list of some statuses, walked
/// three at a time, gives exactly the whole list's deliveries of those statuses in the whole
/// list's order (the walks of several states merged newest first, a page continuing where the
/// last ended), and reads about its own rows, not the history.
#[tokio::test(flavor = "multi_thread")]
async fn a_list_of_some_statuses_walks_their_states_in_the_whole_lists_order() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute("SELECT qualifier_outbox_roll(1)")
        .await
        .unwrap();
    let org = Uuid::new_v4();
    write(&c, org, 1500, "succeeded").await;
    // What a delivery's columns are in each case, as the services leave them, written with
    // the event (the outbox's insert makes the delivery row from them).
    let kinds = [
        "'pending', NULL, 1, NULL, NULL, NULL, NULL, NULL, NULL",
        "'pending', now(), 1, NULL, NULL, NULL, NULL, NULL, NULL",
        "'failed', now(), 1, NULL, NULL, NULL, NULL, NULL, NULL",
        "'failed', now(), 1, now(), 3, NULL, NULL, NULL, NULL",
        "'pending', now(), 1, now(), NULL, 'earlier_delivery', NULL, NULL, NULL",
        "'failed', NULL, 1, NULL, NULL, 'throttle', now() + interval '1 hour',
         now() + interval '1 hour', NULL",
        "'dead', now(), 5, NULL, NULL, NULL, NULL, NULL, NULL",
        "'skipped', now(), 1, NULL, NULL, NULL, NULL, NULL, 'Webhook disabled'",
        "'succeeded', now(), 1, NULL, NULL, NULL, NULL, NULL, NULL",
    ];
    for i in 0..4 * kinds.len() {
        c.execute(
            &format!(
                "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id,
                                     status, published_at, attempts, held_at, resume_attempt,
                                     waiting_for, paced_at, replay_at, last_error)
                 VALUES (gen_random_uuid(), $1::text::uuid, 'lead.updated', '\\x7b7d',
                         gen_random_uuid(), gen_random_uuid(), {})",
                kinds[i % kinds.len()]
            ),
            &[&org.to_string()],
        )
        .await
        .unwrap();
    }
    // In flight: a backlog of sent deliveries not answered yet, the most of the pending ones.
    write(&c, org, 600, "pending").await;
    write(&c, org, 500, "succeeded").await;
    c.batch_execute("ANALYZE outbox; ANALYZE deliveries")
        .await
        .unwrap();

    let store = store_on(&db);
    let (all, _) = store
        .deliveries()
        .list_deliveries(org, &DeliveryFilter::default(), None, 5000)
        .await
        .unwrap();
    assert_eq!(all.len(), 2636);
    use DeliveryStatus::{Dead, Failed, Pending, Skipped};
    for statuses in [
        vec![Pending],
        vec![Failed],
        vec![Pending, Failed],
        vec![Dead],
        vec![Dead, Skipped],
        vec![Failed, Dead],
    ] {
        let want: Vec<Uuid> = all
            .iter()
            .filter(|d| statuses.contains(&d.status))
            .map(|d| d.id)
            .collect();
        let f = DeliveryFilter {
            statuses: statuses.clone(),
            ..DeliveryFilter::default()
        };
        let mut got = Vec::new();
        let mut before = None;
        loop {
            let (page, next) = store
                .deliveries()
                .list_deliveries(org, &f, before, 3)
                .await
                .unwrap();
            got.extend(page.iter().map(|d| d.id));
            match next {
                Some(n) => before = Some(n),
                None => break,
            }
            assert!(got.len() <= want.len(), "{statuses:?}: the walk ends");
        }
        assert_eq!(got, want, "{statuses:?}");
    }
    let counted = |status| all.iter().filter(|d| d.status == status).count();
    assert_eq!(
        [
            counted(Pending),
            counted(Failed),
            counted(Dead),
            counted(Skipped)
        ],
        [612, 12, 4, 4],
        "each case shows the status the API has always shown for it"
    );

    // A page of the pending ones reads its own rows of each state, not the 2,000 succeeded nor
    // the 600 in flight beyond its page.
    // Counted between the ends of the sessions that read (a session reports what it read when
    // it ends, and may hold it up to ten seconds while it stays open).
    drop(store);
    let read = || async {
        (
            rows_read(&c, "outbox").await,
            rows_read(&c, "deliveries").await,
        )
    };
    let before = settled(read).await;
    let pending = DeliveryFilter {
        statuses: vec![Pending],
        ..DeliveryFilter::default()
    };
    let store = store_on(&db);
    let (page, _) = store
        .deliveries()
        .list_deliveries(org, &pending, None, 5)
        .await
        .unwrap();
    assert_eq!(page.len(), 5);
    drop(store);
    let after = settled(read).await;
    let (events, deliveries) = (after.0 - before.0, after.1 - before.1);
    println!("a page of 5 pending read {events} events and {deliveries} delivery rows");
    assert!(
        events <= 50 && deliveries <= 50,
        "a page of 5 pending read {events} events and {deliveries} delivery rows"
    );
}

/// `n` events of `org` created `ago` before now, each with its delivery (the outbox's row
/// trigger writes it).
async fn write_at(c: &tokio_postgres::Client, org: Uuid, n: i32, ago: &str) {
    c.execute(
        "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id,
                             created_at)
         SELECT gen_random_uuid(), $1::text::uuid, 'lead.updated', '\\x7b7d', gen_random_uuid(),
                gen_random_uuid(), now() - $3::text::interval
         FROM generate_series(1, $2)",
        &[&org.to_string(), &n, &ago],
    )
    .await
    .unwrap();
}

/// A mark of the sequence as lead-api writes one (`Upkeep::mark_outbox_sequence`), `ago`
/// before now.
async fn mark_at(c: &tokio_postgres::Client, ago: &str) {
    c.execute(
        "INSERT INTO outbox_seq_marks (at, seq)
         SELECT now() - $1::text::interval, last_value FROM outbox_seq_seq",
        &[&ago],
    )
    .await
    .unwrap();
}

/// A list's time bounds end its walk at the sequence's marks
/// (migrations/2026-12-05-000059_times_by_sequence_marks): 20 events three hours ago, a mark,
/// 3,000 two hours ago, a mark, 20 now. The list since an hour ago and the list until three
/// hours ago each answer their 20 and read about that many rows, where a walk without the
/// bound reads through the 3,000 in between looking for a full page.
#[tokio::test(flavor = "multi_thread")]
async fn a_lists_time_bounds_end_its_walk_at_the_sequences_marks() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute("SELECT qualifier_outbox_roll(1); DELETE FROM outbox_seq_marks")
        .await
        .unwrap();
    let org = Uuid::new_v4();
    write_at(&c, org, 20, "3 hours").await;
    mark_at(&c, "150 minutes").await;
    write_at(&c, org, 3000, "2 hours").await;
    mark_at(&c, "90 minutes").await;
    write_at(&c, org, 20, "0 minutes").await;
    c.batch_execute("ANALYZE outbox").await.unwrap();

    let store = store_on(&db);
    let now = time::OffsetDateTime::now_utc();
    for (since, until, what) in [
        (Some(now - time::Duration::HOUR), None, "since an hour ago"),
        (
            None,
            Some(now - 170 * time::Duration::MINUTE),
            "until three hours ago",
        ),
    ] {
        let f = DeliveryFilter {
            since,
            until,
            ..DeliveryFilter::default()
        };
        let read = reads_of(&c, async {
            let (page, next) = store
                .deliveries()
                .list_deliveries(org, &f, None, 50)
                .await
                .unwrap();
            assert_eq!(page.len(), 20, "the list {what}");
            assert!(next.is_none());
        })
        .await;
        assert!(
            read <= 10 * 20 + 20,
            "the list {what} read {read} rows for 20; the 3,000 in between are past its bound"
        );
    }
}

/// A dry run's count of a few dead deliveries among thousands that succeeded, in one time
/// range: it walks the org's dead ones (`deliveries_org_state`, which leaves the succeeded
/// out) and reads about what it counts. With the states as a `text[]` parameter, PostgreSQL
/// could not prove that index's condition and walked the range's every delivery instead
/// (`states_literal` in crates/store/src/deliveries/filter.rs).
#[tokio::test(flavor = "multi_thread")]
async fn a_dry_runs_count_walks_the_states_it_counts() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute("SELECT qualifier_outbox_roll(1)")
        .await
        .unwrap();
    let org = Uuid::new_v4();
    write_at(&c, org, 3000, "2 hours").await;
    c.execute(
        "UPDATE deliveries SET state = CASE WHEN seq IN (SELECT seq FROM deliveries
                                                          WHERE org_id = $1::text::uuid
                                                          ORDER BY seq LIMIT 3)
                                            THEN 'dead' ELSE 'succeeded' END::delivery_state
         WHERE org_id = $1::text::uuid",
        &[&org.to_string()],
    )
    .await
    .unwrap();
    c.batch_execute("ANALYZE outbox; ANALYZE deliveries")
        .await
        .unwrap();
    // This session's own reads (the update's, 6,000 rows) reported before the count's are
    // measured: a backend reports them when it goes idle, at most once a second unless told.
    c.batch_execute("SELECT pg_stat_force_next_flush()")
        .await
        .unwrap();

    let store = store_on(&db);
    // A type among the filters: the whole range is counted from the rows, none of it from
    // the hourly totals.
    let f = DeliveryFilter {
        statuses: vec![DeliveryStatus::Dead],
        event_types: vec![qualifier_domain::EventType::LeadUpdated],
        since: Some(time::OffsetDateTime::now_utc() - 3 * time::Duration::HOUR),
        ..DeliveryFilter::default()
    };
    let read = table_reads_of(&c, "deliveries", async {
        let n = store
            .deliveries()
            .replay_matching(org, &f, true, 10)
            .await
            .unwrap();
        assert_eq!(n.matched, 3, "the dead deliveries counted");
    })
    .await;
    assert!(
        read <= 10 * 3 + 20,
        "the count of 3 dead deliveries read {read} delivery rows; the 2,997 succeeded beside \
         them are not in the index it walks"
    );
}
