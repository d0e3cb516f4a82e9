//! The Deliveries page's 24-hour chart (`Store::deliveries_by_hour`) is kept by the outbox's
//! triggers and a fold every second (migration 000025): what an administrator sees must be what
//! the outbox holds, whatever wrote it, whenever the fold ran, and however many writers were
//! busy at once.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::helpers::TestApp;

type Hours = BTreeMap<i64, [i64; 5]>;

/// The chart as the outbox itself counts it (the query the chart ran before it was kept by
/// the writes): hours since the chart's first, by the Unix second they begin.
async fn counted(c: &tokio_postgres::Client, org: Uuid) -> Hours {
    let org = org.to_string();
    c.query(
        "SELECT extract(epoch FROM date_trunc('hour', created_at, 'UTC'))::int8,
                count(*) FILTER (WHERE status = 'succeeded'),
                count(*) FILTER (WHERE status = 'dead'),
                count(*) FILTER (WHERE status = 'skipped'),
                count(*) FILTER (WHERE status IN ('pending', 'failed')),
                sum(failed_attempts)::int8
         FROM outbox
         WHERE org_id = $1::text::uuid AND created_at >= date_trunc('hour', now(), 'UTC') - interval '23 hours'
         GROUP BY 1",
        &[&org],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), [r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)]))
    .collect()
}

/// The chart as the console draws it, its empty hours left out.
async fn charted(store: &qualifier_store::Store, org: Uuid) -> Hours {
    store
        .deliveries_by_hour(org)
        .await
        .unwrap()
        .into_iter()
        .map(|h| {
            (
                h.hour.unix_timestamp(),
                [
                    h.succeeded,
                    h.dead,
                    h.skipped,
                    h.in_progress,
                    h.failed_attempts,
                ],
            )
        })
        .filter(|(_, v)| v.iter().any(|n| *n != 0))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chart_is_what_the_outbox_holds_through_concurrent_outcomes_and_folds() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let (other, _) = app.org().await;
    let org_id: Uuid = org.parse().unwrap();
    let other_id: Uuid = other.parse().unwrap();
    for i in 0..40 {
        app.inbound_lead(&org, &format!("+4477009{i:05}")).await;
    }
    for i in 0..5 {
        app.inbound_lead(&other, &format!("+4477008{i:05}")).await;
    }
    let store = app.store();
    let c = app.db.client().await;
    let first = counted(&c, org_id).await;
    assert_eq!(first.values().map(|v| v[3]).sum::<i64>(), 40, "{first:?}");
    assert_eq!(charted(&store, org_id).await, first, "before any fold");

    // Eight writers finish, fail and replay deliveries as the worker and a replay would, one
    // row per statement and several rows per statement, while folds run beside them (the
    // app's own every second, and this test's as fast as it can).
    let seqs: Vec<i64> = c
        .query(
            "SELECT seq FROM outbox WHERE org_id = $1::text::uuid ORDER BY seq",
            &[&org],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let stop = tokio_util::sync::CancellationToken::new();
    let folder = {
        let store = app.store();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut folds = 0;
            while !stop.is_cancelled() {
                store.fold_delivery_hours().await.unwrap();
                folds += 1;
            }
            folds
        })
    };
    let mut writers = Vec::new();
    for w in 0..8usize {
        let db = app.db.client().await;
        let mine: Vec<i64> = seqs.iter().skip(w).step_by(8).copied().collect();
        writers.push(tokio::spawn(async move {
            for round in 0..6usize {
                for (k, seq) in mine.iter().enumerate() {
                    let status = ["failed", "succeeded", "dead", "skipped", "pending"][(round + k) % 5];
                    db.execute(
                        "UPDATE outbox SET status = $2, failed_attempts = failed_attempts + 1 WHERE seq = $1",
                        &[seq, &status],
                    )
                    .await
                    .unwrap();
                }
                // Publishing changes neither status nor failed attempts: no delta.
                db.execute(
                    "UPDATE outbox SET published_at = clock_timestamp() WHERE seq = ANY($1)",
                    &[&mine],
                )
                .await
                .unwrap();
                db.execute(
                    "UPDATE outbox SET status = 'dead' WHERE seq = ANY($1) AND status = 'failed'",
                    &[&mine],
                )
                .await
                .unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    stop.cancel();
    assert!(folder.await.unwrap() > 1);
    let after = counted(&c, org_id).await;
    assert_ne!(after, first, "the writers changed what there is to count");
    assert_eq!(
        charted(&store, org_id).await,
        after,
        "deltas and totals together"
    );
    store.fold_delivery_hours().await.unwrap();
    assert_eq!(charted(&store, org_id).await, after, "after the last fold");
    let unfolded: i64 = c
        .query_one("SELECT count(*) FROM delivery_hour_deltas", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(unfolded, 0, "a fold leaves no delta behind");
    assert_eq!(charted(&store, other_id).await, counted(&c, other_id).await);
    assert_eq!(
        charted(&store, other_id)
            .await
            .values()
            .map(|v| v[3])
            .sum::<i64>(),
        5,
        "another org's writes are not in its chart"
    );

    // An event older than the chart's window, replayed and finished: nothing in the chart
    // moves, and the change writes no delta.
    c.execute(
        "UPDATE outbox SET created_at = now() - interval '3 days' WHERE seq = $1",
        &[&seqs[0]],
    )
    .await
    .unwrap();
    // (Moving created_at is what only this test does; the chart's own count is redone.)
    c.execute("DELETE FROM delivery_hours", &[]).await.unwrap();
    c.execute(
        "INSERT INTO delivery_hours
         SELECT org_id, date_trunc('hour', created_at, 'UTC'),
                count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status = 'dead'),
                count(*) FILTER (WHERE status = 'skipped'),
                count(*) FILTER (WHERE status IN ('pending', 'failed')), sum(failed_attempts)
         FROM outbox WHERE created_at >= now() - interval '25 hours' GROUP BY 1, 2",
        &[],
    )
    .await
    .unwrap();
    let before_replay = charted(&store, org_id).await;
    c.execute(
        "UPDATE outbox SET status = 'pending', failed_attempts = 9 WHERE seq = $1",
        &[&seqs[0]],
    )
    .await
    .unwrap();
    store.fold_delivery_hours().await.unwrap();
    let old: i64 = c
        .query_one(
            "SELECT (SELECT count(*) FROM delivery_hour_deltas WHERE hour < now() - interval '2 days')
                  + (SELECT count(*) FROM delivery_hours WHERE hour < now() - interval '2 days')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        old, 0,
        "a change to an event older than the window is not counted anywhere"
    );
    assert_eq!(charted(&store, org_id).await, before_replay);
    assert_eq!(before_replay, counted(&c, org_id).await);

    // Removing a row (retention run with a short window, or by hand) takes it out of its hour.
    c.execute("DELETE FROM outbox WHERE seq = $1", &[&seqs[1]])
        .await
        .unwrap();
    assert_eq!(charted(&store, org_id).await, counted(&c, org_id).await);

    // Hours past the window leave with housekeeping; the current ones stay.
    c.execute(
        "INSERT INTO delivery_hours (org_id, hour, succeeded) VALUES ($1::text::uuid, now() - interval '30 hours', 7)",
        &[&org],
    )
    .await
    .unwrap();
    store.expire_delivery_hours().await.unwrap();
    let stale: i64 = c
        .query_one(
            "SELECT count(*) FROM delivery_hours WHERE hour < now() - interval '26 hours'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stale, 0);
    assert_eq!(charted(&store, org_id).await, counted(&c, org_id).await);
}
