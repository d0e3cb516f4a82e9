//! The outbox relay: moves committed events from the `outbox` table to RabbitMQ.
//!
//! It runs inside every `lead-api` process (one less thing to deploy). Replicas take turns: a
//! batch starts by locking the one `feed_head` row (which also assigns the events' feed
//! positions in commit order), so two relays never publish the same rows at once and positions
//! never interleave; see `qualifier_store::outbox::relay_batch`. A batch is published with
//! publisher confirms and marked published in the same transaction only after every confirm
//! arrived, so a crash at any point re-publishes (same delivery ids) and never drops. A
//! batch's new deliveries of one org go several to a message, a bundle
//! (`qualifier_bus::bundle`, at most `QUALIFIER_RELAY_BUNDLE_MAX` each), on the bundles' queue;
//! retries, replays and turns go one a message, through the events exchange. It wakes when
//! this process's lead writes commit (`qualifier_store::LocalRelay`, while it is connected), on
//! the `qualifier_outbox` NOTIFY every other writer sends at commit ([`crate::notifications`]),
//! and on a one-second poll as a safety net.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use qualifier_bus::lapin::Connection;
use qualifier_bus::{BusError, DeliveryMeta, Outgoing, Publisher, Topology};
use qualifier_store::outbox::{Unpublished, relay_batch};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio::sync::Notify;

use tokio_util::sync::CancellationToken;

const BATCH: i64 = 500;
/// The longest sleep between rounds; the outcome statement leaves a row due later unwoken.
const POLL: Duration = qualifier_store::deliveries::state::RELAY_POLL;
const BACKLOG_SAMPLE: Duration = Duration::from_secs(2);
/// The shortest sleep before a scheduled row (a retry, a replay, a throttle's turn): the rows
/// due within it go in one round. A failing endpoint's retries are due at instants of their
/// own, a few hundred a second at a steady pace; a round for each (its transaction, its
/// publish, its commit) was what they cost everyone else's events. A retry or a replay goes
/// at most this much after its instant; a turn is sent `SENT_AHEAD` (100 ms) before it, so
/// it is still sent ahead.
const DUE_TOGETHER: Duration = Duration::from_millis(25);

#[derive(Default)]
pub struct RelayStatus {
    /// True while connected to RabbitMQ with the topology declared (half of `/readyz`).
    pub broker_ready: AtomicBool,
}

pub struct Relay {
    pub store: Store,
    /// Notified when an outbox row commits (or the LISTEN connection came back).
    pub wake: Arc<Notify>,
    pub brokers: qualifier_bus::Brokers,
    pub topology: Topology,
    pub status: Arc<RelayStatus>,
    /// The most new deliveries of one org in one message (`QUALIFIER_RELAY_BUNDLE_MAX`).
    pub bundle_max: usize,
}

async fn sleep_or_cancel(d: Duration, shutdown: &CancellationToken) {
    tokio::select! { _ = tokio::time::sleep(d) => {}, _ = shutdown.cancelled() => {} }
}

fn meta_of(row: &Unpublished) -> DeliveryMeta {
    DeliveryMeta {
        delivery_id: row.delivery_id,
        event_id: row.event_id,
        org_id: row.org_id,
        event_type: row.event_type,
        attempt: row.start_attempt(),
        occurred_at_ms: Some(qualifier_domain::timefmt::unix_millis(row.created_at)),
        traceparent: row.traceparent.clone(),
        not_before_ms: None,
        test: row.is_test,
        seq: Some(row.seq),
        endpoint_id: Some(row.endpoint_id),
    }
}

/// Whether a row goes in a bundle: a new delivery's first publication (from its queue, at
/// attempt 1). Retries, replays, turns and resumed deliveries stay one message each, as dead
/// letters do.
fn bundled(row: &Unpublished) -> bool {
    !row.due && row.start_attempt() == 1
}

/// A batch's messages, as bodies and headers: each bundled row's part in its org's bundles
/// (at most `bundle_max` parts each, in the batch's order; a bundle may hold one), every other
/// row alone. Returns the singles' row indexes and the bundles' bodies with their part counts.
fn plan_messages(rows: &[Unpublished], bundle_max: usize) -> (Vec<usize>, Vec<(Vec<u8>, usize)>) {
    let mut singles = Vec::new();
    // Each org's bundled rows, the orgs in the order their first one came (a batch may hold
    // hundreds of orgs: found by key, not by a walk of the list).
    let mut orgs: Vec<Vec<usize>> = Vec::new();
    let mut place: std::collections::HashMap<uuid::Uuid, usize> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        if bundle_max <= 1 || !bundled(r) {
            singles.push(i);
            continue;
        }
        let at = *place.entry(r.org_id).or_insert_with(|| {
            orgs.push(Vec::new());
            orgs.len() - 1
        });
        orgs[at].push(i);
    }
    let mut bundles = Vec::new();
    for idx in orgs {
        // A chunk of one is a bundle too: every new delivery goes to the bundles' queue, and
        // the work queue keeps what comes back (parks expiring, retries and waits coming due,
        // replays), which can come a thousand at once when a slow org's parks expire together.
        // A new delivery behind them waited until the worker had read them all.
        for chunk in idx.chunks(bundle_max) {
            let metas: Vec<DeliveryMeta> = chunk.iter().map(|&i| meta_of(&rows[i])).collect();
            let body = qualifier_bus::bundle::encode(
                metas
                    .iter()
                    .zip(chunk.iter().map(|&i| rows[i].payload.as_slice())),
            );
            bundles.push((body, chunk.len()));
        }
    }
    (singles, bundles)
}

/// The rows as the debug lines name them: `delivery#attempt`, and with `changed` the event's
/// change time (`@` Unix milliseconds), which `scripts/delivery-steps.py` times from.
fn labels(rows: &[Unpublished], changed: bool) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let label = format!("{}#{}", r.delivery_id, r.start_attempt());
            if changed {
                format!(
                    "{label}@{}",
                    r.created_at.unix_timestamp_nanos() / 1_000_000
                )
            } else {
                label
            }
        })
        .collect()
}

impl Relay {
    /// Publishes batches until the outbox is empty; returns how many rows it published.
    async fn drain(&self, publisher: &Publisher) -> Result<usize, StoreError> {
        let exchange = self.topology.events_exchange();
        let bundle_queue = self.topology.bundle_queue();
        let bundle_max = self.bundle_max;
        let mut total = 0;
        loop {
            let mut conn = self.store.pool.get().await.map_err(StoreError::from_pool)?;
            let (exchange, bundle_queue) = (&exchange, &bundle_queue);
            let batch = relay_batch(&mut conn, BATCH, |rows| async move {
                // With the publish below and the worker's lines, where each delivery's time
                // goes from its event's change (scripts/delivery-steps.py).
                if tracing::enabled!(tracing::Level::DEBUG) {
                    tracing::debug!(deliveries = ?labels(&rows, true), "claimed");
                }
                let (singles, bundles) = plan_messages(&rows, bundle_max);
                let mut msgs: Vec<Outgoing<'_>> = singles
                    .iter()
                    .map(|&i| {
                        let r = &rows[i];
                        Outgoing {
                            exchange,
                            routing_key: r.event_type.as_str(),
                            body: &r.payload,
                            headers: meta_of(r).headers(),
                            message_id: Some(r.delivery_id.to_string()),
                            content_type: "application/json",
                        }
                    })
                    .collect();
                // Straight to the bundles' queue: only a worker that reads bundles consumes it.
                msgs.extend(bundles.iter().map(|(body, n)| Outgoing {
                    exchange: "",
                    routing_key: bundle_queue,
                    body,
                    headers: vec![(qualifier_bus::bundle::HEADER, n.to_string())],
                    message_id: None,
                    content_type: qualifier_bus::bundle::CONTENT_TYPE,
                }));
                let published = publisher.publish_all(&msgs).await;
                if published.is_ok() && tracing::enabled!(tracing::Level::DEBUG) {
                    tracing::debug!(deliveries = ?labels(&rows, false), "published, not yet marked");
                }
                published
            })
            .await?;
            total += batch.published;
            // A claim short of a batch emptied the queue; a full one, even of rows that were
            // only taken out of it, may have left more.
            if batch.claimed < BATCH as usize {
                return Ok(total);
            }
        }
    }

    /// Samples the backlog gauges every few seconds (a scrape never touches the database).
    async fn sample_backlog(store: Store, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(BACKLOG_SAMPLE);
        while !shutdown.is_cancelled() {
            tokio::select! { _ = tick.tick() => {}, _ = shutdown.cancelled() => return }
            if let Ok(b) = store.upkeep().outbox_backlog().await {
                metrics::gauge!(m::OUTBOX_BACKLOG).set(b.count as f64);
                metrics::gauge!(m::OUTBOX_OLDEST_AGE).set(b.oldest_age_seconds);
            }
        }
    }

    pub async fn run(self, shutdown: CancellationToken) {
        let sampler = tokio::spawn(Self::sample_backlog(self.store.clone(), shutdown.clone()));
        qualifier_bus::keep_connected(
            &self.brokers,
            &format!("lead-api relay {}", self.topology.prefix),
            &self,
            &self.status.broker_ready,
            &shutdown,
        )
        .await;
        sampler.abort();
    }
}

impl qualifier_bus::Session for Relay {
    type Ready = Publisher;

    async fn set_up(&self, conn: &Connection) -> Result<Publisher, BusError> {
        let publisher = Publisher::new(conn).await?;
        self.topology.declare(publisher.channel()).await?;
        Ok(publisher)
    }

    /// Drains the outbox whenever woken, until the broker is lost or refuses a publish.
    async fn run(&self, conn: &Connection, publisher: Publisher, shutdown: &CancellationToken) {
        tracing::info!("outbox relay connected");
        while !shutdown.is_cancelled() {
            match self.drain(&publisher).await {
                Ok(n) => {
                    if n > 0 {
                        metrics::counter!(m::OUTBOX_PUBLISHED).increment(n as u64);
                        tracing::debug!(published = n, "outbox relayed");
                    }
                    // Scheduled rows are due at their own instants: wake for the next one,
                    // and for those due soon after it in the same round.
                    let due = self.store.upkeep().next_replay_due().await.ok().flatten();
                    let nap = due.map_or(POLL, |d| d.clamp(DUE_TOGETHER, POLL));
                    tokio::select! {
                        _ = self.wake.notified() => {}
                        _ = tokio::time::sleep(nap) => {}
                        _ = shutdown.cancelled() => {}
                    }
                    // An idle relay publishes nothing, so it would not notice a lost broker
                    // by itself: checked every poll, which keeps `/readyz` honest.
                    if !conn.status().connected() {
                        tracing::warn!("relay lost RabbitMQ; reconnecting");
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %qualifier_store::cause_chain(&e), "outbox relay batch failed; it stays in the outbox");
                    if !conn.status().connected() {
                        return;
                    }
                    // A broker nack leaves this channel unable to publish (see
                    // `Publisher::nacked`): a new connection, after the usual short wait.
                    let refused = tokio::select! {
                        _ = publisher.nacked() => true,
                        _ = sleep_or_cancel(Duration::from_millis(200), shutdown) => false,
                    };
                    if refused {
                        sleep_or_cancel(Duration::from_millis(200), shutdown).await;
                        tracing::warn!("broker refused a publish; reconnecting");
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualifier_domain::EventType;
    use uuid::Uuid;

    fn row(seq: i64, org: Uuid, due: bool, resume_attempt: Option<i32>) -> Unpublished {
        Unpublished {
            seq,
            delivery_id: Uuid::new_v4(),
            endpoint_id: Uuid::new_v4(),
            event_id: Uuid::new_v4(),
            org_id: org,
            event_type: EventType::LeadCreated,
            payload: format!("{{\"seq\":{seq}}}").into_bytes(),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            traceparent: None,
            is_test: false,
            feed_pos: None,
            resume_attempt,
            due,
            ready: true,
        }
    }

    #[test]
    fn the_debug_lines_name_each_delivery_its_attempt_and_its_change_time() {
        let mut r = row(1, Uuid::new_v4(), false, Some(3));
        r.created_at = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
            + time::Duration::milliseconds(250);
        let id = r.delivery_id;
        // scripts/delivery-steps.py reads `id#attempt@milliseconds`.
        assert_eq!(
            labels(std::slice::from_ref(&r), true),
            [format!("{id}#3@1800000000250")]
        );
        assert_eq!(labels(&[r], false), [format!("{id}#3")]);
    }

    fn seqs_of(body: &[u8]) -> Vec<i64> {
        qualifier_bus::bundle::decode(body)
            .unwrap()
            .iter()
            .map(|p| p.meta.seq.unwrap())
            .collect()
    }

    #[test]
    fn new_deliveries_go_in_bundles_of_their_org_and_the_rest_alone() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let rows = vec![
            row(1, a, false, None),
            row(2, b, false, None),
            row(3, a, false, None),
            row(4, a, true, None),     // a retry or a replay: alone
            row(5, a, false, Some(3)), // resumed after an outage: alone
            row(6, a, false, None),
            row(7, b, false, None),
            row(8, a, false, None),
        ];
        let (singles, bundles) = plan_messages(&rows, 3);
        let bodies: Vec<Vec<i64>> = bundles.iter().map(|(b, _)| seqs_of(b)).collect();
        // The last of a's new rows is a bundle of one: a new delivery never travels in the
        // work queue, where what comes back waits.
        assert_eq!(bodies, vec![vec![1, 3, 6], vec![8], vec![2, 7]]);
        assert_eq!(
            bundles.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
            [3, 1, 2]
        );
        let mut alone: Vec<i64> = singles.iter().map(|&i| rows[i].seq).collect();
        alone.sort();
        assert_eq!(alone, vec![4, 5]);
        // Every row goes exactly once, its envelope unchanged.
        let part = &qualifier_bus::bundle::decode(&bundles[0].0).unwrap()[1];
        assert_eq!(part.body, rows[2].payload);
        assert_eq!(part.meta.delivery_id, rows[2].delivery_id);
        assert_eq!(part.meta.endpoint_id, Some(rows[2].endpoint_id));
        assert_eq!(part.meta.attempt, 1);
    }

    #[test]
    fn a_bundle_max_of_one_sends_every_delivery_alone() {
        let a = Uuid::new_v4();
        let rows: Vec<Unpublished> = (1..=4).map(|s| row(s, a, false, None)).collect();
        let (singles, bundles) = plan_messages(&rows, 1);
        assert!(bundles.is_empty());
        assert_eq!(singles, vec![0, 1, 2, 3]);
    }
}
