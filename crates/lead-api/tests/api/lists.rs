//! A deliveries list reads its page, not other orgs' rows, even when the open partition's
//! statistics are wrong about whose rows it holds (docs/decisions.md, "A deliveries list names
//! its index through its order").

use std::time::{Duration, Instant};

use qualifier_domain::delivery::DeliveryStatus;
use qualifier_store::deliveries::DeliveryFilter;
use qualifier_testkit::TestDb;
use uuid::Uuid;

use crate::helpers::{outbox_autovacuum_off, outbox_rows_read, store_on};

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

/// What `read` made PostgreSQL read from the outbox: the counters before, then after the
/// reading session reported them (a backend reports its counters shortly after it goes idle).
async fn reads_of<F: std::future::Future<Output = ()>>(c: &tokio_postgres::Client, read: F) -> i64 {
    let before = outbox_rows_read(c).await;
    read.await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = outbox_rows_read(c).await;
    while after == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = outbox_rows_read(c).await;
    }
    assert!(after > before, "the list's reads were reported");
    // Anything reported late would only make the count larger, never hide a walk.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    outbox_rows_read(c).await - before
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
