//! The hourly delivery totals, kept by the delivery rows' writers and triggers and a fold
//! every second, and what reads them: the Deliveries page's 24-hour chart
//! (`Console::deliveries_by_hour`) and a dry-run bulk replay's count. What an administrator sees
//! must be what the delivery rows hold, whatever wrote them, whenever the fold ran, and however
//! many writers were busy at once.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::helpers::{TestApp, fold_all, two_endpoints};

type Hours = BTreeMap<i64, [i64; 5]>;

/// A delivery row's status as the API shows it (`succeeded`, `dead`, `skipped`, `failed`
/// while its cycle retries, else `pending`), as SQL over the row `d`.
const STATUS_OF: &str = "CASE WHEN d.state IN ('succeeded', 'dead', 'skipped') THEN d.state::text
                              WHEN d.retrying THEN 'failed' ELSE 'pending' END";

/// The `SET` list that gives a delivery row the status `$2` as a worker's outcome would.
const SET_STATUS: &str = "state = (CASE WHEN $2 IN ('pending', 'failed') THEN 'queued'
                                        ELSE $2 END)::delivery_state,
                          retrying = ($2 = 'failed'), updated_at = clock_timestamp()";

/// An org's last 24 hours by hour, as its delivery rows count them: the hour's first Unix
/// second, then succeeded, dead, skipped, open and failed attempts.
const HOUR_COUNTS: &str = "extract(epoch FROM date_trunc('hour', created_at, 'UTC'))::int8,
        count(*) FILTER (WHERE state = 'succeeded'),
        count(*) FILTER (WHERE state = 'dead'),
        count(*) FILTER (WHERE state = 'skipped'),
        count(*) FILTER (WHERE state NOT IN ('succeeded', 'dead', 'skipped')),
        sum(failed_attempts)::int8
    FROM deliveries
    WHERE org_id = $1::text::uuid
      AND created_at >= date_trunc('hour', now(), 'UTC') - interval '23 hours'";

/// The chart as the delivery rows themselves count it (the query the chart ran before it was
/// kept by the writes): hours since the chart's first, by the Unix second they begin.
async fn counted(c: &tokio_postgres::Client, org: Uuid) -> Hours {
    let org = org.to_string();
    let sql = format!("SELECT {HOUR_COUNTS} GROUP BY 1");
    c.query(&sql, &[&org])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), [r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)]))
        .collect()
}

/// The chart as the console draws it, its empty hours left out.
async fn charted(store: &qualifier_store::Store, org: Uuid) -> Hours {
    store
        .console()
        .deliveries_by_hour(org, None)
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

/// A folded chart's deliveries still in progress, and those in any other column (succeeded,
/// dead, skipped, failed attempts).
fn in_progress_and_others(chart: &Hours) -> (i64, i64) {
    (
        chart.values().map(|v| v[3]).sum(),
        chart.values().map(|v| v[0] + v[1] + v[2] + v[4]).sum(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chart_is_what_the_delivery_rows_hold_through_concurrent_outcomes_and_folds() {
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
    let seqs: Vec<i64> = qualifier_testkit::sql::column(
        &c,
        "SELECT seq FROM outbox WHERE org_id = $1::text::uuid ORDER BY seq",
        &[&org],
    )
    .await;
    let stop = tokio_util::sync::CancellationToken::new();
    let folder = {
        let store = app.store();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut folds = 0;
            while !stop.is_cancelled() {
                store.console().fold_delivery_hours().await.unwrap();
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
                    let status =
                        ["failed", "succeeded", "dead", "skipped", "pending"][(round + k) % 5];
                    db.execute(
                        &format!(
                            "UPDATE deliveries SET {SET_STATUS},
                                 failed_attempts = failed_attempts + 1
                             WHERE seq = $1"
                        ),
                        &[seq, &status],
                    )
                    .await
                    .unwrap();
                }
                // Publishing changes neither status nor failed attempts: no delta.
                db.execute(
                    "UPDATE deliveries SET state = 'out' WHERE seq = ANY($1) AND state = 'queued'",
                    &[&mine],
                )
                .await
                .unwrap();
                db.execute(
                    "UPDATE deliveries SET state = 'dead'
                     WHERE seq = ANY($1) AND retrying
                       AND state NOT IN ('succeeded', 'dead', 'skipped')",
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
    fold_all(&store, &c).await;
    assert_eq!(charted(&store, org_id).await, after, "after the last fold");
    let unfolded: i64 =
        qualifier_testkit::sql::one(&c, "SELECT count(*) FROM delivery_hour_changes", &[]).await;
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

    // An event older than the chart's window, replayed: the chart does not move, and the
    // change is counted in the event's own hour, which the totals keep for the whole retention
    // (a dry-run bulk replay counts from them).
    c.execute(
        "UPDATE deliveries SET created_at = now() - interval '3 days' WHERE seq = $1",
        &[&seqs[0]],
    )
    .await
    .unwrap();
    // (Moving created_at is what only this test does; the totals are counted again, as a
    // truncate, which the guard on covered hours does not see.)
    c.batch_execute(
        "TRUNCATE delivery_hours, delivery_hour_changes;
         INSERT INTO delivery_hours (org_id, hour, succeeded, dead, skipped, in_progress,
                                     failed_attempts, failed, erased_skipped, endpoint_id)
         SELECT org_id, date_trunc('hour', created_at, 'UTC'),
                count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'dead'),
                count(*) FILTER (WHERE state = 'skipped'),
                count(*) FILTER (WHERE state NOT IN ('succeeded', 'dead', 'skipped')),
                sum(failed_attempts),
                count(*) FILTER (WHERE retrying AND state NOT IN ('succeeded', 'dead', 'skipped')),
                count(*) FILTER (WHERE state = 'skipped' AND erased), endpoint_id
         FROM deliveries GROUP BY org_id, 2, endpoint_id",
    )
    .await
    .unwrap();
    let before_replay = charted(&store, org_id).await;
    c.execute(
        "UPDATE deliveries SET state = 'queued', retrying = false, failed_attempts = 9
         WHERE seq = $1",
        &[&seqs[0]],
    )
    .await
    .unwrap();
    fold_all(&store, &c).await;
    let old = c
        .query_one(
            "SELECT in_progress, failed_attempts FROM delivery_hours
             WHERE hour = (SELECT date_trunc('hour', created_at, 'UTC') FROM deliveries
                           WHERE seq = $1)",
            &[&seqs[0]],
        )
        .await
        .unwrap();
    assert_eq!(
        (old.get::<_, i64>(0), old.get::<_, i64>(1)),
        (1, 9),
        "a change to an event older than the chart is counted in its hour"
    );
    assert_eq!(charted(&store, org_id).await, before_replay);
    assert_eq!(before_replay, counted(&c, org_id).await);

    // Removing a row (retention run with a short window, or by hand) takes it out of its hour.
    c.execute("DELETE FROM outbox WHERE seq = $1", &[&seqs[1]])
        .await
        .unwrap();
    assert_eq!(charted(&store, org_id).await, counted(&c, org_id).await);

    // Hours past the chart's window stay while the totals vouch for them (the dry run counts
    // from them), even against a delete (the version before this one removed every hour past
    // 26 once a minute); once retention moves the cover past them, housekeeping removes them.
    c.execute(
        "INSERT INTO delivery_hours (org_id, hour, succeeded) VALUES ($1::text::uuid, date_trunc('hour', now()) - interval '30 hours', 7)",
        &[&org],
    )
    .await
    .unwrap();
    let stale = || async {
        c.query_one(
            "SELECT count(*) FROM delivery_hours WHERE hour < now() - interval '26 hours'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
    };
    store.console().expire_delivery_hours().await.unwrap();
    c.execute(
        "DELETE FROM delivery_hours WHERE hour < now() - interval '26 hours'",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(stale().await, 2, "the hour above and the replayed event's");
    c.execute(
        "UPDATE delivery_hour_cover SET covered_from = date_trunc('hour', now()) - interval '27 hours'",
        &[],
    )
    .await
    .unwrap();
    store.console().expire_delivery_hours().await.unwrap();
    assert_eq!(stale().await, 0);
    assert_eq!(charted(&store, org_id).await, counted(&c, org_id).await);
}

/// The org's deliveries a dry run should count, straight from the delivery rows.
async fn dead_or_so(
    c: &tokio_postgres::Client,
    org: &str,
    statuses: &[&str],
    since: Option<time::OffsetDateTime>,
    until: Option<time::OffsetDateTime>,
) -> usize {
    let statuses: Vec<String> = statuses.iter().map(|s| s.to_string()).collect();
    let text = |t: Option<time::OffsetDateTime>| {
        t.map(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap()
        })
    };
    let (since, until) = (text(since), text(until));
    let n: i64 = qualifier_testkit::sql::one(
        c,
        &format!(
            "SELECT count(*) FROM deliveries d
             WHERE org_id = $1::text::uuid AND {STATUS_OF} = ANY($2) AND NOT erased
               AND ($3::text IS NULL OR created_at >= $3::text::timestamptz)
               AND ($4::text IS NULL OR created_at < $4::text::timestamptz)"
        ),
        &[&org, &statuses, &since, &until],
    )
    .await;
    n as usize
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_counts_from_the_hourly_totals_what_the_delivery_rows_hold() {
    use qualifier_domain::DeliveryStatus::{Dead, Failed, Skipped};
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let (other, _) = app.org().await;
    let org_id: Uuid = org.parse().unwrap();
    let store = app.store();
    let c = app.db.client().await;
    // Three weeks of deliveries every 97 minutes, in every final status, one in nine
    // another org's, oldest first, each in the partition of its day: sequence numbers follow
    // creation times and carry their day, as the service's inserts make them, which the time
    // bounds rely on (crates/store/src/deliveries.rs, `until_day`); numbered above the
    // sequence's own for the day, which the service's inserts draw from its start.
    c.batch_execute(
        "SELECT qualifier_outbox_partition(d, d + 1)
         FROM generate_series(floor(extract(epoch FROM now() - interval '25 days') / 86400)::int,
                              floor(extract(epoch FROM now()) / 86400)::int - 1) d",
    )
    .await
    .unwrap();
    c.execute(
        "INSERT INTO outbox (seq, event_id, org_id, event_type, payload, created_at, delivery_id,
                             status, published_at, failed_attempts)
         SELECT (floor(extract(epoch FROM now() - (361 - g) * interval '97 minutes')
                       / 86400)::int8 << 32) + 2147483648 + g,
                gen_random_uuid(),
                CASE WHEN g % 9 = 0 THEN $2::text::uuid ELSE $1::text::uuid END,
                'lead.created', '\\x7b7d'::bytea, now() - (361 - g) * interval '97 minutes',
                gen_random_uuid(), (ARRAY['dead', 'failed', 'skipped', 'succeeded'])[1 + g % 4],
                now(), g % 3
         FROM generate_series(1, 360) g ORDER BY g",
        &[&org, &other],
    )
    .await
    .unwrap();
    // The sequence's marks as the service writes them over those weeks, which the time
    // bounds read (migrations/2026-12-05-000059_times_by_sequence_marks), in place of the one
    // the app wrote when it started, before this history was numbered above it.
    c.batch_execute("DELETE FROM outbox_seq_marks; SELECT qualifier_outbox_marks_fill()")
        .await
        .unwrap();
    fold_all(&store, &c).await;
    // Then what happens to deliveries later, some folded and some not yet: erasures (a
    // skipped one stays skipped, erased; a dead one becomes skipped), replays, retries that
    // died.
    for step in [
        "WITH e AS (UPDATE deliveries SET erased = true, state = 'skipped'
                    WHERE org_id = $1::text::uuid AND seq % 7 = 0
                      AND state IN ('skipped', 'dead')
                    RETURNING seq)
         UPDATE outbox o SET erased_at = now() FROM e WHERE o.seq = e.seq",
        "UPDATE deliveries SET state = 'queued', retrying = false
         WHERE org_id = $1::text::uuid AND seq % 5 = 0 AND state = 'dead' AND NOT erased",
        "UPDATE deliveries SET state = 'dead' WHERE org_id = $1::text::uuid AND seq % 3 = 0
         AND retrying AND state NOT IN ('succeeded', 'dead', 'skipped')",
    ] {
        c.execute(step, &[&org]).await.unwrap();
        fold_all(&store, &c).await;
    }
    c.execute(
        "UPDATE deliveries SET retrying = true WHERE org_id = $1::text::uuid AND seq % 11 = 0
         AND NOT retrying AND state NOT IN ('succeeded', 'dead', 'skipped')",
        &[&org],
    )
    .await
    .unwrap();

    let now = time::OffsetDateTime::now_utc();
    let hour = now.replace_time(time::Time::from_hms(now.hour(), 0, 0).unwrap());
    let times = [
        None,
        Some(now - time::Duration::days(30)),
        Some(now - time::Duration::hours(5) - time::Duration::minutes(17)),
        Some(hour - time::Duration::days(1)),
        Some(now - time::Duration::days(9) + time::Duration::seconds(41)),
    ];
    let check = |label: &'static str| {
        let (store, c, org) = (&store, &c, &org);
        async move {
            for statuses in [
                &[Dead][..],
                &[Failed],
                &[Skipped],
                &[Dead, Skipped],
                &[Dead, Failed, Skipped],
            ] {
                for since in times {
                    for until in times {
                        let f = qualifier_store::deliveries::DeliveryFilter {
                            statuses: statuses.to_vec(),
                            since,
                            until,
                            ..Default::default()
                        };
                        let names: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
                        let want = dead_or_so(c, org, &names, since, until).await;
                        let got = store
                            .deliveries()
                            .replay_matching(org_id, &f, true, 50)
                            .await
                            .unwrap()
                            .matched;
                        assert_eq!(
                            got, want,
                            "{label}: {names:?} since {since:?} until {until:?}"
                        );
                    }
                }
            }
        }
    };
    check("covered from the start").await;

    // A deployment that had history before the totals were kept: its hours before the cover
    // are not trusted (here made wrong on purpose) and counted from the rows.
    c.batch_execute(
        "UPDATE delivery_hour_cover SET covered_from = date_trunc('hour', now()) - interval '8 days';
         UPDATE delivery_hours SET dead = dead + 1000, failed = failed + 1000
         WHERE hour < date_trunc('hour', now()) - interval '8 days'",
    )
    .await
    .unwrap();
    check("covered for the last 8 days").await;
    let all_dead = dead_or_so(&c, &org, &["dead"], None, None).await;
    assert!(
        all_dead > 20,
        "the history holds dead deliveries: {all_dead}"
    );
}

/// A new contact's event is written with its deliveries by the lead's own statement, one per
/// endpoint, each queued for the relay and counted once in the hourly totals; an event any
/// other writer inserts (here as a fixture does, a release's erasure or handoff in the same
/// way) is fanned out and counted once by the outbox's row trigger
/// (migrations/2026-12-05-000057_the_event_writes_its_deliveries).
#[tokio::test(flavor = "multi_thread")]
async fn each_new_delivery_is_counted_once_whoever_wrote_its_event() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let org_id: Uuid = org.parse().unwrap();
    let store = app.store();
    let c = app.db.client().await;
    two_endpoints(&c, &org).await;
    for i in 0..5 {
        app.inbound_lead(&org, &format!("+4477007{i:05}")).await;
    }
    c.execute(
        "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id)
         VALUES (gen_random_uuid(), $1::text::uuid, 'lead.created', '\\x7b7d'::bytea,
                 gen_random_uuid(), gen_random_uuid())",
        &[&org],
    )
    .await
    .unwrap();

    let written: Vec<Option<bool>> = qualifier_testkit::sql::column(
        &c,
        "SELECT deliveries_written FROM outbox WHERE org_id = $1::text::uuid ORDER BY seq",
        &[&org],
    )
    .await;
    assert_eq!(
        written,
        [
            Some(true),
            Some(true),
            Some(true),
            Some(true),
            Some(true),
            None
        ],
        "the lead's writes wrote their deliveries, the fixture left them to the trigger"
    );
    let per_event: Vec<i64> = qualifier_testkit::sql::column(
        &c,
        "SELECT count(*) FROM outbox o LEFT JOIN deliveries d ON d.seq = o.seq
         WHERE o.org_id = $1::text::uuid GROUP BY o.seq ORDER BY o.seq",
        &[&org],
    )
    .await;
    assert_eq!(per_event, [2; 6], "one delivery an endpoint, none twice");
    let firsts: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT count(*) FROM outbox o JOIN deliveries d
             ON d.seq = o.seq AND d.delivery_id = o.delivery_id
         WHERE o.org_id = $1::text::uuid",
        &[&org],
    )
    .await;
    assert_eq!(
        firsts, 6,
        "the first endpoint's delivery keeps the event's id"
    );
    // Each row says whether its id is its own: a first delivery's is found through its
    // event's index and left out of the delivery rows' (`deliveries_own_id`), whoever wrote it.
    let marks = c
        .query_one(
            "SELECT count(*) FILTER (WHERE d.delivery_id = o.delivery_id AND d.own_id IS FALSE),
                    count(*) FILTER (WHERE d.delivery_id <> o.delivery_id AND d.own_id)
             FROM outbox o JOIN deliveries d ON d.seq = o.seq
             WHERE o.org_id = $1::text::uuid",
            &[&org],
        )
        .await
        .unwrap();
    assert_eq!((marks.get::<_, i64>(0), marks.get::<_, i64>(1)), (6, 6));
    let fresh: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT count(*) FROM deliveries
         WHERE org_id = $1::text::uuid AND state = 'queued' AND due_at IS NULL AND attempts = 0",
        &[&org],
    )
    .await;
    assert_eq!(fresh, 12);

    fold_all(&store, &c).await;
    // Each endpoint's chart counts its six, once each.
    let endpoints: Vec<String> = qualifier_testkit::sql::column(
        &c,
        "SELECT DISTINCT endpoint_id::text FROM deliveries WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await;
    let charts =
        charted_per_endpoint(&store, org_id, endpoints.iter().map(|e| e.parse().unwrap())).await;
    let counts: Vec<(i64, i64)> = charts.values().map(in_progress_and_others).collect();
    assert_eq!(counts, [(6, 0), (6, 0)], "{charts:?}");
    assert_eq!(charts, counted_per_endpoint(&c, org_id).await);
}

/// Each endpoint's last 24 hours as its delivery rows count them, by endpoint id.
async fn counted_per_endpoint(c: &tokio_postgres::Client, org: Uuid) -> BTreeMap<Uuid, Hours> {
    let mut out: BTreeMap<Uuid, Hours> = BTreeMap::new();
    for r in c
        .query(
            &format!("SELECT endpoint_id::text, {HOUR_COUNTS} GROUP BY 1, 2"),
            &[&org.to_string()],
        )
        .await
        .unwrap()
    {
        let endpoint: String = r.get(0);
        out.entry(endpoint.parse().unwrap())
            .or_default()
            .insert(r.get(1), [r.get(2), r.get(3), r.get(4), r.get(5), r.get(6)]);
    }
    out
}

/// Every endpoint's chart, as the Deliveries page draws it above that endpoint's list.
async fn charted_per_endpoint(
    store: &qualifier_store::Store,
    org: Uuid,
    endpoints: impl Iterator<Item = Uuid>,
) -> BTreeMap<Uuid, Hours> {
    let mut out = BTreeMap::new();
    for e in endpoints {
        let hours: Hours = store
            .console()
            .deliveries_by_hour(org, Some(e))
            .await
            .unwrap()
            .into_iter()
            .map(|h| {
                let v = [
                    h.succeeded,
                    h.dead,
                    h.skipped,
                    h.in_progress,
                    h.failed_attempts,
                ];
                (h.hour.unix_timestamp(), v)
            })
            .filter(|(_, v)| v.iter().any(|n| *n != 0))
            .collect();
        out.insert(e, hours);
    }
    out
}

/// The moves a worker writes: some deliveries succeed, some fail once, some die.
async fn outcomes(c: &tokio_postgres::Client, org: &str, step: i64) {
    c.execute(
        "UPDATE deliveries
         SET state = (ARRAY['succeeded', 'dead', 'skipped']::delivery_state[])[(1 + (seq + $2) % 3)::int],
             failed_attempts = failed_attempts + (seq % 2)::int
         WHERE org_id = $1::text::uuid AND (seq + $2) % 4 = 0",
        &[&org, &step],
    )
    .await
    .unwrap();
}

/// Each endpoint's chart counts that endpoint's deliveries (the list below it shows no other),
/// and the hours counted before the counts were kept per endpoint are moved to their endpoints
/// by the upgrade that keeps them so (migrations/2026-12-06-000061_hours_per_endpoint), the
/// org's sums unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn each_endpoints_chart_counts_its_own_deliveries_before_and_after_the_upgrade() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let org_id: Uuid = org.parse().unwrap();
    let c = app.db.client().await;
    two_endpoints(&c, &org).await;
    let store = app.store();
    for i in 0..12 {
        app.inbound_lead(&org, &format!("+4477007{i:05}")).await;
    }
    outcomes(&c, &org, 0).await;
    let want = counted_per_endpoint(&c, org_id).await;
    assert_eq!(want.len(), 2, "two endpoints got deliveries: {want:?}");
    let got = charted_per_endpoint(&store, org_id, want.keys().copied()).await;
    assert_eq!(got, want, "each endpoint's own, before a fold");
    fold_all(&store, &c).await;
    assert_eq!(
        charted_per_endpoint(&store, org_id, want.keys().copied()).await,
        want
    );

    // The release before: the totals the org's, moves counted without the endpoint.
    const UPGRADE: [(&str, &str); 1] = [(
        "20261206000061",
        include_str!("../../../../migrations/2026-12-06-000061_hours_per_endpoint/down.sql"),
    )];
    qualifier_testkit::sql::undo_migrations(&c, &UPGRADE).await;
    outcomes(&c, &org, 1).await;
    let before: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT sum(in_progress + succeeded + dead + skipped)::int8
         FROM (SELECT in_progress, succeeded, dead, skipped FROM delivery_hours
               UNION ALL SELECT in_progress, succeeded, dead, skipped FROM delivery_hour_changes) t",
        &[],
    )
    .await;
    let applied = qualifier_store::run_migrations(&app.db.database())
        .await
        .unwrap();
    assert_eq!(applied.len(), 1);
    fold_all(&store, &c).await;
    let want = counted_per_endpoint(&c, org_id).await;
    assert_eq!(
        charted_per_endpoint(&store, org_id, want.keys().copied()).await,
        want,
        "the upgrade moved each hour's counts to their endpoints"
    );
    let after: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT sum(in_progress + succeeded + dead + skipped)::int8 FROM delivery_hours",
        &[],
    )
    .await;
    assert_eq!(after, before, "the org's sums did not move");
    let nil: i64 = qualifier_testkit::sql::one(
        &c,
        "SELECT count(*) FROM delivery_hours
         WHERE endpoint_id = '00000000-0000-0000-0000-000000000000'
           AND (succeeded, dead, skipped, in_progress, failed_attempts) <> (0, 0, 0, 0, 0)",
        &[],
    )
    .await;
    assert_eq!(
        nil, 0,
        "nothing left under no endpoint in the chart's hours"
    );
}
