//! Retention as days pass: rounds that remove the oldest day with housekeeping's own job, and
//! the dry run checked against the outbox after them.

use super::*;

/// After the retention rounds (partitions dropped, the totals' cover moved past them, a span
/// of new events written each round): the dry run the API answers for the big org's month of
/// dead deliveries, mostly from the hourly totals, is what the outbox holds.
pub(super) async fn dry_run_matches(side: &Side) -> anyhow::Result<()> {
    let c = side.env.db.client().await;
    let since = time::OffsetDateTime::now_utc() - time::Duration::days(DAYS);
    let org: uuid::Uuid = side.big.id.parse()?;
    let f = qualifier_store::deliveries::DeliveryFilter {
        statuses: vec![qualifier_domain::DeliveryStatus::Dead],
        since: Some(since),
        ..Default::default()
    };
    let counted = side_store(side)?
        .deliveries()
        .replay_matching(org, &f, true, 50)
        .await?
        .matched;
    let held: i64 = qualifier_testkit::sql::try_one(
        &c,
        "SELECT count(*) FROM outbox WHERE org_id = $1::text::uuid AND status = 'dead'
               AND erased_at IS NULL AND created_at >= to_timestamp($2)",
        &[&side.big.id, &(since.unix_timestamp() as f64)],
    )
    .await?;
    println!("      dry run after retention: {counted} counted, {held} in the outbox");
    anyhow::ensure!(
        counted as i64 == held,
        "the dry run counted {counted} dead deliveries, the outbox holds {held}"
    );
    Ok(())
}

/// A store over the side's database, for housekeeping's jobs.
pub(super) fn side_store(side: &Side) -> anyhow::Result<qualifier_store::Store> {
    use qualifier_store::{SecretKey, Store};
    let key = SecretKey::from_base64(&SecretKey::generate_base64())?;
    Ok(Store::new(
        qualifier_store::connect(&side.env.db.database(), 2)?,
        key,
    ))
}

/// Retention as days pass, through housekeeping's own job (`Job::ExpireEvents`, what `lead-api`
/// runs: the oldest partition dropped): each round moves the cutoff on by a partition's span,
/// which removes the oldest partition left, vacuums the outbox (what autovacuum would do; with
/// partitions dropped whole there is nothing dead in it), then writes that span's worth of new
/// events. The outbox's size after each round shows whether it stays level; the times show what
/// removing a partition costs beside the history.
pub(super) async fn retention_rounds(
    side: &Side,
    per_day: i64,
    rounds: i64,
) -> anyhow::Result<Value> {
    let span = i64::from(span_days());
    let mut c = side.env.db.client().await;
    // For `retention_steps`; a server without the module leaves the steps untracked.
    let _ = c
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await;
    let smalls = small_org_ids(&c, side).await?;
    let store = side_store(side)?;
    let mut out = Vec::new();
    let count = async |c: &tokio_postgres::Client| -> anyhow::Result<i64> {
        Ok(qualifier_testkit::sql::try_one(c, "SELECT count(*) FROM outbox", &[]).await?)
    };
    for round in 1..=rounds {
        // A partition's span further each round, and a day more: its last day's end then lies
        // before the cutoff whatever the time of day the history was written at.
        let keep = Duration::from_secs(((DAYS - round * span - 1) * 86_400) as u64);
        let before = count(&c).await?;
        let steps_before = retention_steps(&c).await;
        let t = Instant::now();
        let partitions = lead_api::housekeeping::Job::ExpireEvents
            .run(&store, keep)
            .await?;
        let expire_ms = t.elapsed().as_secs_f64() * 1000.0;
        let steps = retention_steps(&c)
            .await
            .zip(steps_before)
            .map(|((d1, x1), (d0, x0))| (d1 - d0, x1 - x0));
        let removed = before - count(&c).await?;
        let t = Instant::now();
        c.batch_execute("VACUUM outbox").await?;
        let vacuum_ms = t.elapsed().as_secs_f64() * 1000.0;
        write_events(&mut c, &side.big.id, &smalls, per_day * span, span, false).await?;
        c.execute("SELECT qualifier_outbox_marks_fill()", &[])
            .await?;
        let (written_into, reindex_ms) = rebuild_written(&c, span).await?;
        let r = c
            .query_one(
                "SELECT (SELECT count(*) FROM outbox)::float8, sum(pg_relation_size(p))::float8,
                        sum(pg_indexes_size(p))::float8
                 FROM (SELECT inhrelid AS p FROM pg_inherits
                       WHERE inhparent = 'outbox'::regclass) parts",
                &[],
            )
            .await?;
        let (rows, table, indexes): (f64, f64, f64) = (r.get(0), r.get(1), r.get(2));
        println!(
            "      retention round {round}: {removed} events ({partitions} partitions) removed in {expire_ms:.0} ms ({}), VACUUM {vacuum_ms:.0} ms; then {} written ({written_into} partitions' indexes rebuilt after, {reindex_ms:.0} ms): {rows:.0} stored, table {:.1} MiB, indexes {:.1} MiB",
            steps.map_or("steps not tracked".into(), |(d, x)| format!(
                "detach {d:.0} ms, drop {x:.0} ms; the rest is the checks and the files freed as the drop commits"
            )),
            per_day * span,
            table / 1048576.0,
            indexes / 1048576.0
        );
        out.push(json!({
            "round": round,
            "removed": removed,
            "partitions_dropped": partitions,
            "expire_ms": r3(expire_ms),
            "expire_us_per_event": r3(expire_ms * 1000.0 / (removed.max(1) as f64)),
            "detach_ms": steps.map(|s| r3(s.0)),
            "drop_ms": steps.map(|s| r3(s.1)),
            "vacuum_ms": r3(vacuum_ms),
            "written": per_day * span,
            "reindexed_partitions": written_into,
            "reindex_ms": r3(reindex_ms),
            "events_stored": rows,
            "table_bytes": table,
            "index_bytes": indexes,
        }));
    }
    Ok(Value::Array(out))
}

/// The indexes of the partitions holding the last `span` days, rebuilt after a round wrote its
/// days into them: how many, and the ms it took. A round can only write into days that have
/// passed, so its rows land in partitions that, in a deployment, took their rows before
/// housekeeping compacted them once closed (`Job::CompactOutbox`); left as written, their
/// indexes would grow by page splits round after round, and the size the rounds compare would
/// be the bench's way of writing, not what retention leaves behind.
pub(super) async fn rebuild_written(
    c: &tokio_postgres::Client,
    span: i64,
) -> anyhow::Result<(usize, f64)> {
    let t = Instant::now();
    let names: Vec<String> = qualifier_testkit::sql::try_column(
        c,
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass
               AND substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::int
                   >= floor(extract(epoch FROM now() - make_interval(days => $1::int8::int))
                            / 86400)::int",
        &[&span],
    )
    .await?;
    for n in &names {
        c.batch_execute(&format!("REINDEX TABLE {n}")).await?;
    }
    Ok((names.len(), t.elapsed().as_secs_f64() * 1000.0))
}

/// The time PostgreSQL spent so far in retention's two steps that touch a partition whole, its
/// concurrent detach and its drop, in ms, from `pg_stat_statements` (which tracks utility
/// statements, their text as sent); `None` without it. The rest of a round is its checks and
/// the bounded reads before the detach.
pub(super) async fn retention_steps(c: &tokio_postgres::Client) -> Option<(f64, f64)> {
    let r = c
        .query_one(
            "SELECT coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'ALTER TABLE outbox DETACH%'), 0),
                    coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'DROP TABLE %'), 0)
             FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .await
        .ok()?;
    Some((r.get(0), r.get(1)))
}
