//! Housekeeping: the periodic jobs of every `lead-api` replica, each named, in one place.
//!
//! Every job is idempotent, so replicas may overlap, and none is needed for correctness: what
//! they remove is already refused or unused (expired tickets, sessions, idempotency keys,
//! retired secrets) or past retention. They only keep tables small and data at rest minimal,
//! with no cron job to deploy. A new job is a variant of [`Job`] and a line in [`Job::ALL`].

use std::time::Duration;

use qualifier_store::deliveries::Fill;
use qualifier_store::partitions::upkeep::partition_days;
use qualifier_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;

/// How often the jobs run.
pub const EVERY: Duration = Duration::from_secs(60);

/// Rows one statement removes at most (the tables other than the outbox), so no statement holds
/// many row locks for long.
const BATCH: i64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Previous signing secrets whose overlap window ended: already unused, but a retired
    /// secret should not outlive its window at rest.
    DropRetiredSecrets,
    /// Expired console tickets and sessions (already refused).
    PurgeConsoleSessions,
    /// Expired idempotency keys (already ignored).
    PurgeIdempotencyKeys,
    /// Outbox partitions through tomorrow ([`partition_days`] each), and the outbox's sequence in
    /// today's numbers (`Upkeep::roll_outbox`). First, so a new day's events have their day.
    RollOutbox,
    /// Events older than `QUALIFIER_EVENT_RETENTION_DAYS`, with their delivery records, a
    /// partition (a span of days) at a time (`Upkeep::expire_events`); a delivery still
    /// unfinished then ends `dead` with `Event expired` and leaves with it.
    ExpireEvents,
    /// The indexes of an outbox partition that stopped taking new events, rebuilt once
    /// (`Upkeep::compact_outbox`): about 40% smaller.
    CompactOutbox,
    /// The delivery rows' index by id on every partition, built concurrently where an upgrade
    /// left it out, and the index it replaces dropped once it is whole
    /// (`Upkeep::index_delivery_ids`).
    IndexDeliveryIds,
    /// Operational events older than the same retention, delivered to the operator or not.
    ExpireOpsEvents,
    /// Hourly delivery totals no longer needed: past the chart's 24-hour window and behind
    /// the dry run's cover, which retention moves forward (`Console::expire_delivery_hours`).
    ExpireChartHours,
}

impl Job {
    pub const ALL: [Job; 9] = [
        Job::RollOutbox,
        Job::DropRetiredSecrets,
        Job::PurgeConsoleSessions,
        Job::PurgeIdempotencyKeys,
        Job::ExpireEvents,
        Job::CompactOutbox,
        Job::IndexDeliveryIds,
        Job::ExpireOpsEvents,
        Job::ExpireChartHours,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Job::DropRetiredSecrets => "drop_retired_secrets",
            Job::PurgeConsoleSessions => "purge_console_sessions",
            Job::PurgeIdempotencyKeys => "purge_idempotency_keys",
            Job::RollOutbox => "roll_outbox",
            Job::ExpireEvents => "expire_events",
            Job::CompactOutbox => "compact_outbox",
            Job::IndexDeliveryIds => "index_delivery_ids",
            Job::ExpireOpsEvents => "expire_ops_events",
            Job::ExpireChartHours => "expire_chart_hours",
        }
    }

    /// One run; how many rows it removed (partitions, for the outbox's jobs: created by
    /// `RollOutbox`, dropped by `ExpireEvents`, rebuilt by `CompactOutbox`).
    pub async fn run(self, store: &Store, retention: Duration) -> Result<usize, StoreError> {
        match self {
            Job::DropRetiredSecrets => store.endpoints().drop_expired_previous_secrets().await,
            Job::PurgeConsoleSessions => store.console().purge_console(BATCH).await,
            Job::PurgeIdempotencyKeys => store.idempotency_purge(BATCH).await,
            Job::ExpireOpsEvents => store.upkeep().expire_ops_events(retention, BATCH).await,
            Job::ExpireChartHours => store.console().expire_delivery_hours().await,
            Job::RollOutbox => store.upkeep().roll_outbox(partition_days(retention)).await,
            Job::ExpireEvents => store.upkeep().expire_events(retention).await,
            Job::CompactOutbox => store.upkeep().compact_outbox().await,
            Job::IndexDeliveryIds => store.upkeep().index_delivery_ids().await,
        }
    }
}

/// Runs every job every [`EVERY`] until `stop`. A failing job is skipped until the next round
/// (the database may be away; the next round retries).
pub async fn run(store: Store, retention: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! { _ = tick.tick() => {}, _ = stop.cancelled() => return }
        for job in Job::ALL {
            match job.run(&store, retention).await {
                Ok(0) => {}
                Ok(removed) => {
                    tracing::info!(job = job.name(), removed, "housekeeping removed rows")
                }
                Err(e) => {
                    tracing::debug!(job = job.name(), error = %qualifier_store::cause_chain(&e), "housekeeping skipped")
                }
            }
        }
    }
}

/// How often the changes to the hourly delivery totals are folded into them.
pub const FOLD_EVERY: Duration = Duration::from_secs(1);

/// Folds the changes to the hourly delivery totals every [`FOLD_EVERY`] until `stop`
/// (`Console::fold_delivery_hours`). Not needed for correctness either (the chart and the dry run
/// add the changes not folded yet); it keeps them to about a second of writes, which is what a
/// chart view or a dry run scans. Its own loop, as the
/// jobs above run once a minute: a minute of a busy org's writes would be a slow chart. Each
/// tick also marks the outbox's sequence, at most once a minute
/// (`Upkeep::mark_outbox_sequence`).
pub async fn fold_chart(store: Store, stop: CancellationToken) {
    let mut tick = tokio::time::interval(FOLD_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! { _ = tick.tick() => {}, _ = stop.cancelled() => return }
        if let Err(e) = store.console().fold_delivery_hours().await {
            tracing::debug!(error = %qualifier_store::cause_chain(&e), "folding the chart skipped");
        }
        // The sequence's mark a minute, which the lists' time bounds read: on the same tick,
        // since it must keep up with the events, not wait for a housekeeping round.
        if let Err(e) = store.upkeep().mark_outbox_sequence().await {
            tracing::debug!(error = %qualifier_store::cause_chain(&e), "marking the sequence skipped");
        }
    }
}

/// Events one batch of the delivery rows' fill reads: at about 20 µs an event, a batch's
/// transaction holds its new rows' locks for 35 to 65 ms.
pub const FILL_BATCH: i32 = 2_000;
/// The pause between two batches of the fill, so that it takes a share of the database, not
/// all of it: the history of a busy deployment fills in minutes, while requests go on.
const FILL_PAUSE: Duration = Duration::from_millis(20);

/// Copies the delivery rows of the events stored before the outbox's triggers kept them
/// (`Deliveries::fill_deliveries`, crates/store/src/deliveries/rows.rs), batch after batch, until
/// every replica finds the fill done; then returns. A replica that finds another's batch
/// running, or the database away, tries again a second later.
pub async fn fill_deliveries(store: Store, stop: CancellationToken) {
    loop {
        let pause = match store.deliveries().fill_deliveries(FILL_BATCH).await {
            Ok(Fill::Done) => {
                tracing::debug!("every stored event has its delivery row");
                return;
            }
            Ok(Fill::Copied(_)) => FILL_PAUSE,
            Ok(Fill::Busy) => Duration::from_secs(1),
            Err(e) => {
                tracing::debug!(error = %qualifier_store::cause_chain(&e), "filling delivery rows skipped");
                Duration::from_secs(1)
            }
        };
        tokio::select! { _ = tokio::time::sleep(pause) => {}, _ = stop.cancelled() => return }
    }
}

/// Once at start: secrets sealed before they were bound to their org are re-sealed bound
/// (docs/reliability.md, "Hostile input"). In the background: a start must not wait for the database, and until
/// it runs they still open.
pub async fn reseal_legacy_secrets(store: Store) {
    match store.endpoints().reseal_legacy_secrets().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(resealed = n, "signing secrets re-sealed to their org"),
        Err(e) => {
            tracing::warn!(error = %qualifier_store::cause_chain(&e), "re-sealing signing secrets failed; next start retries")
        }
    }
}
