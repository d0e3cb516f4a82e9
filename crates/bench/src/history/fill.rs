//! Writing the history: a month of events in SQL, as the code writes its rows.

use super::*;

/// Writes the history: `n` events over [`DAYS`] days (ending 10 minutes ago, and starting 2
/// hours inside the default retention, so retention has nothing to take during the run), nine in ten for the big org and the rest
/// spread over the small one and [`SMALL_ORGS`] - 1 more, in time order as traffic would have
/// written them. Each lead has about ten events. Statuses as a month of a mostly healthy
/// endpoint leaves them: 1 in 50 dead (five failed attempts), 1 in 100 skipped, 1 in 20
/// succeeded on a second attempt, the rest on the first.
pub(super) async fn fill(side: &Side, n: i64) -> anyhow::Result<()> {
    let mut c = side.env.db.client().await;
    c.execute(
        "INSERT INTO orgs (id, name, created_at) SELECT gen_random_uuid(), 'Bench small ' || g, now()
         FROM generate_series(1, $1::int8) g",
        &[&(SMALL_ORGS - 1)],
    )
    .await?;
    let smalls = small_org_ids(&c, side).await?;
    write_events(&mut c, &side.big.id, &smalls, n, DAYS, true).await?;
    // The sequence's marks of the history, which `lead-api` writes as events come and a list's
    // time bound reads (migrations/2026-12-05-000059_times_by_sequence_marks).
    c.execute("SELECT qualifier_outbox_marks_fill()", &[])
        .await?;
    // Housekeeping rebuilds the indexes of each partition past its days once
    // (`Job::CompactOutbox`, one a round): the history is as a deployment's is after that.
    let store = side_store(side)?;
    // The writes' changes to the hourly totals, folded as `lead-api` folds them every second.
    let t = Instant::now();
    let hours = store.console().fold_delivery_hours().await?;
    println!(
        "      history: {hours} hourly totals folded from the writes in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut rebuilt = 0;
    while lead_api::housekeeping::Job::CompactOutbox
        .run(&store, Duration::ZERO)
        .await?
        > 0
    {
        rebuilt += 1;
    }
    println!(
        "      history: {rebuilt} partitions' indexes rebuilt in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // One statement each: VACUUM cannot run inside a multi-statement string's transaction.
    c.batch_execute("VACUUM ANALYZE outbox").await?;
    // The delivery rows and the feed too: otherwise autovacuum takes them up while the empty
    // side's idle window runs (the two databases share one server), and that side measured
    // 5-6% busy against the history side's 2-3%.
    c.batch_execute("VACUUM ANALYZE deliveries").await?;
    c.batch_execute("VACUUM ANALYZE event_feed").await?;
    c.batch_execute("VACUUM ANALYZE orgs").await?;
    c.batch_execute("VACUUM ANALYZE delivery_hours").await?;
    c.batch_execute("VACUUM ANALYZE delivery_hour_changes")
        .await?;
    c.batch_execute("CHECKPOINT").await?;
    // An index-only count visits the table for every entry on a page the visibility map does
    // not vouch for: how much of the table it vouches for once the history is written.
    let r = c
        .query_one(
            "SELECT sum(relpages)::int8, sum(relallvisible)::int8 FROM pg_class
             WHERE oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'outbox'::regclass)",
            &[],
        )
        .await?;
    let (pages, visible): (i64, i64) = (r.get(0), r.get(1));
    println!("      history: {visible} of {pages} outbox pages all-visible after VACUUM");
    Ok(())
}

/// The history's small orgs, the side's own small org last.
pub(super) async fn small_org_ids(
    c: &tokio_postgres::Client,
    side: &Side,
) -> anyhow::Result<Vec<String>> {
    Ok(c.query(
        "SELECT id::text FROM orgs WHERE name LIKE 'Bench small %' ORDER BY name",
        &[],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .chain(std::iter::once(side.small.id.clone()))
    .collect())
}

/// `n` events of the history's mix over the last `days` days (the big org nine in ten, the rest
/// shared by `smalls`), in one transaction that holds the feed's head, as the relay would.
pub(super) async fn write_events(
    c: &mut tokio_postgres::Client,
    big: &str,
    smalls: &[String],
    n: i64,
    days: i64,
    progress: bool,
) -> anyhow::Result<()> {
    let (tx, head) = crate::feed::holding_feed_head(c).await?;
    // The days' partitions, as housekeeping would have created them as the days came: spans
    // of `partition_days` from the first day, up to the oldest partition there is.
    tx.execute(
        "SELECT qualifier_outbox_partition(s, least(s + $2::int, x.m))
         FROM (SELECT min(substring(relname FROM '^outbox_d([0-9]+)_')::int) AS m
               FROM pg_class WHERE relname ~ '^outbox_d[0-9]+_[0-9]+$') x,
              generate_series(
                  floor(extract(epoch FROM now() - make_interval(days => $1::int8::int))
                        / 86400)::int,
                  x.m - 1, $2::int) s",
        &[&days, &span_days()],
    )
    .await?;
    let now: f64 = tx
        .query_one("SELECT extract(epoch FROM now())::float8", &[])
        .await?
        .get(0);
    // In slices, so progress shows and no single statement holds millions of rows in memory.
    let slice: i64 = 50_000;
    let mut from = 1;
    while from <= n {
        let to = (from + slice - 1).min(n);
        let s = Slice::make(big, smalls, now, n, days, from, to);
        tx.execute(
            FILL_SQL,
            &[
                &s.g, &s.event, &s.org, &s.at, &s.ty, &s.lead, &s.payload, &head, &s.status,
                &s.tries, &s.log,
            ],
        )
        .await?;
        if progress && (to % 250_000 == 0 || to == n) {
            println!("      history: {to} of {n} events written");
        }
        from = to + 1;
    }
    tx.execute("UPDATE feed_head SET pos = $1", &[&(head + n)])
        .await?;
    tx.commit().await?;
    Ok(())
}

/// The history's stored envelopes take the form `lead-api` writes with
/// `QUALIFIER_PAYLOAD_STORAGE=compressed`, which both sides of the phase run with
/// ([`Side::start`]).
pub(super) const COMPRESS: bool = true;

/// One slice of the history: rows `from..=to` of `n` spread over `days` days before `now`
/// (seconds since the epoch, the writing transaction's), each event in the partition of its
/// day. The envelope is a real `lead.updated`'s shape and size, made and stored here as
/// `lead-api` stores it ([`qualifier_store::payload::pack`]), and the attempt log as the
/// delivery worker stores it ([`AttemptEntry::stored`]), so the rows are what the code writes:
/// one delivery in fifty dead after five attempts, one in a hundred skipped, one in twenty
/// succeeded at the second attempt; the rest is [`FILL_SQL`]'s.
pub(super) struct Slice {
    g: Vec<i64>,
    event: Vec<String>,
    org: Vec<String>,
    at: Vec<f64>,
    ty: Vec<&'static str>,
    lead: Vec<String>,
    payload: Vec<Vec<u8>>,
    status: Vec<&'static str>,
    tries: Vec<i32>,
    log: Vec<String>,
}

impl Slice {
    pub(super) fn make(
        big: &str,
        smalls: &[String],
        now: f64,
        n: i64,
        days: i64,
        from: i64,
        to: i64,
    ) -> Slice {
        let len = (to - from + 1) as usize;
        let mut s = Slice {
            g: Vec::with_capacity(len),
            event: Vec::with_capacity(len),
            org: Vec::with_capacity(len),
            at: Vec::with_capacity(len),
            ty: Vec::with_capacity(len),
            lead: Vec::with_capacity(len),
            payload: Vec::with_capacity(len),
            status: Vec::with_capacity(len),
            tries: Vec::with_capacity(len),
            log: Vec::with_capacity(len),
        };
        let span = (days * 86_400) as f64;
        for g in from..=to {
            // A tenth of the events are the small orgs', interleaved in time with the big one's.
            let org = match g % 10 {
                0 => smalls[((g / 10) as usize) % smalls.len()].as_str(),
                _ => big,
            };
            let at = now - span + 7_200.0 + (g as f64 / n as f64) * (span - 7_800.0);
            let ty = [
                "lead.created",
                "lead.updated",
                "lead.updated",
                "lead.stage_changed",
            ][(g % 4) as usize];
            // Ten leads per hundred events of an org: a lead has several events.
            let digest = ring::digest::digest(
                &ring::digest::SHA256,
                format!("{org}/{}/{}", g / 100, g % 10).as_bytes(),
            );
            let lead = uuid::Uuid::from_slice(&digest.as_ref()[..16]).expect("16 bytes");
            let event = uuid::Uuid::new_v4();
            let when = qualifier_domain::timefmt::format(
                time::OffsetDateTime::from_unix_timestamp_nanos((at * 1e9) as i128)
                    .expect("a time of this century"),
            );
            let envelope = serde_json::to_vec(&json!({
                "id": event, "type": ty, "version": "1", "occurred_at": when, "org_id": org,
                "data": {"lead": {
                    "id": lead, "revision": 1 + g % 7, "name": "Bench Lead",
                    "email": format!("lead{g}@example.com"),
                    "phone": format!("+4477{:08}", g % 100_000_000), "channel": "sms",
                    "qualification_stage": "qualifying", "route_target": null,
                    "profile": {"budget": "10k", "step": g % 9},
                    "external_ref": null, "ai_paused": false,
                    "conversation_url": format!("https://app.qualifier.local/conversations/{lead}"),
                    "created_at": when, "updated_at": when},
                    "previous": {"profile": {"step": g % 9 + 1}}}
            }))
            .expect("JSON");
            s.g.push(g);
            s.event.push(event.to_string());
            s.org.push(org.to_owned());
            s.at.push(at);
            s.ty.push(ty);
            s.lead.push(lead.to_string());
            s.payload
                .push(qualifier_store::payload::pack(envelope, COMPRESS));
            let (status, tries) = match (g % 50, g % 100, g % 20) {
                (7, _, _) => ("dead", 5),
                (_, 3, _) => ("skipped", 0),
                (_, _, 1) => ("succeeded", 2),
                _ => ("succeeded", 1),
            };
            let sig = hex_prefix(event.as_bytes());
            let log: Vec<Value> = (1..=tries)
                .map(|a| {
                    let failed = status == "dead" || a < tries;
                    AttemptEntry {
                        attempt: a as u32,
                        started_at: time::OffsetDateTime::from_unix_timestamp_nanos(
                            ((at + f64::from(a)) * 1e9) as i128,
                        )
                        .expect("a time of this century"),
                        duration_ms: 12 + a as u64,
                        status_code: Some(if failed { 500 } else { 200 }),
                        error: failed.then(|| "HTTP 500".to_owned()),
                        error_kind: None,
                        response_body: Some(
                            if failed {
                                r#"{"error":"internal"}"#
                            } else {
                                "ok"
                            }
                            .to_owned(),
                        ),
                        request_headers: Vec::new(),
                        signatures: vec![format!("sha256={sig}…"), format!("v1,{sig}…")],
                    }
                    .stored(COMPRESS)
                })
                .collect();
            s.status.push(status);
            s.tries.push(tries);
            s.log.push(Value::Array(log).to_string());
        }
        s
    }
}

/// Eight hex digits, as a shortened signature shows.
pub(super) fn hex_prefix(b: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, b);
    d.as_ref()[..4].iter().map(|x| format!("{x:02x}")).collect()
}

/// Inserts a [`Slice`] (`$1`-`$7`, `$9`-`$11`) at feed positions after `$8`, with the
/// outcome columns the delivery worker leaves beside each attempt log.
///
/// Each row's sequence number carries its day (the partition key), numbered
/// from the outbox's own sequence. A day the sequence has already left (it moved on at
/// midnight) takes the upper half of that day's numbers: the services drew the lower half
/// from the sequence while that day lasted, and a run that crossed midnight once wrote a
/// number they had used.
pub(super) const FILL_SQL: &str = "
INSERT INTO outbox (seq, event_id, org_id, event_type, payload, created_at, delivery_id, lead_id,
                    published_at, status, attempts, failed_attempts, last_status_code, last_error,
                    attempt_log, updated_at, feed_pos)
SELECT CASE WHEN floor(x.at / 86400)::int8 < (SELECT last_value >> 32 FROM outbox_seq_seq)
            THEN (floor(x.at / 86400)::int8 << 32) | 2147483648
                 | (nextval('outbox_seq_seq') & 2147483647)
            ELSE (floor(x.at / 86400)::int8 << 32) | (nextval('outbox_seq_seq') & 4294967295)
       END,
       x.e::uuid, x.org::uuid, x.ty, x.payload,
       to_timestamp(x.at), gen_random_uuid(), x.lead::uuid,
       to_timestamp(x.at) + interval '20 milliseconds', x.st, x.tries,
       CASE WHEN x.st = 'dead' THEN 5 WHEN x.tries = 2 THEN 1 ELSE 0 END,
       CASE WHEN x.st = 'skipped' THEN NULL WHEN x.st = 'dead' THEN 500 ELSE 200 END,
       CASE WHEN x.st = 'dead' THEN 'HTTP 500' WHEN x.st = 'skipped' THEN 'webhook disabled' END,
       x.log::jsonb, to_timestamp(x.at) + interval '1 second' * x.tries, $8::int8 + x.g
FROM unnest($1::int8[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::text[],
            $7::bytea[], $9::text[], $10::int4[], $11::text[])
     AS x(g, e, org, at, ty, lead, payload, st, tries, log)";
