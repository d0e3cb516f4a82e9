//! The worker's hot path, its read: what attempts start from, for a batch in one round trip,
//! each delivery's state from its own row (`deliveries`) beside its event's org, lead and test
//! mark.
//! What they lead to is written by [`super::state`], the one home of a delivery's state.

use diesel::{ExpressionMethods, JoinOnDsl, NullableExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use uuid::Uuid;

use super::{DeliveryContext, EndpointGlance, LeadOrder};
use crate::StoreError;
use crate::endpoints::EndpointKey;
use crate::partitions::{DeliveryRef, day_bounds, in_days};
use crate::schema::{deliveries, endpoint_health, outbox, webhooks};
use crate::webhooks::WebhookRow;
use qualifier_domain::delivery::DeliveryState;
use qualifier_domain::health::EndpointState;
use qualifier_domain::pace::DeliveryOrdering;
use time::OffsetDateTime;

impl crate::facets::Deliveries<'_> {
    /// What attempts need to know, for many deliveries in one round trip, in the order asked
    /// (the worker batches the reads of attempts starting at the same time): each delivery's
    /// current status (to drop duplicates of finished work) and its endpoint as it is now,
    /// secret opened. `None` for a delivery that does not exist.
    pub async fn delivery_contexts(
        &self,
        deliveries: &[DeliveryRef],
    ) -> Result<Vec<Option<DeliveryContext>>, StoreError> {
        let delivery_ids: Vec<Uuid> = deliveries.iter().map(|d| d.id).collect();
        let days = day_bounds(deliveries.iter().map(|d| d.seq));
        let mut conn = self.conn().await?;
        // Each delivery by its key's first column (its event's `seq`, which the message
        // carries) and its own id. A message of a release that did not carry the `seq` names
        // an event's one delivery by the event's delivery id: its `seq` is read from the event.
        let mut seqs: Vec<i64> = deliveries.iter().filter_map(|d| d.seq).collect();
        if seqs.len() < deliveries.len() {
            let unknown: Vec<Uuid> = deliveries
                .iter()
                .filter(|d| d.seq.is_none())
                .map(|d| d.id)
                .collect();
            let found: Vec<i64> = outbox::table
                .filter(outbox::delivery_id.eq_any(&unknown))
                .filter(in_days(days))
                .select(outbox::seq)
                .load(&mut conn)
                .await?;
            seqs.extend(found);
        }
        type Row = (
            (
                Uuid,
                DeliveryState,
                bool,
                i64,
                Uuid,
                Uuid,
                Option<Uuid>,
                bool,
                bool,
            ),
            (Option<OffsetDateTime>, Option<OffsetDateTime>),
            Option<WebhookRow>,
            Option<EndpointState>,
            Option<i32>,
        );
        // The delivery's row (the state), its event's (its org, lead and test mark), its
        // endpoint's settings and health. Both rows are bounded by the batch's `seq`s, not the
        // delivery alone: the worker's sessions keep the generic plan made at their first call,
        // and one made while the day's partitions were nearly empty may start from the event
        // rather than the delivery. Without the event's condition that start was a walk of the
        // day's events in primary-key order with the day as a filter (seen in the bench's
        // `auto_explain`: 11 ms and every event of the day read for each batch); with it, the
        // walk is a probe per `seq` whichever side the plan starts from.
        let rows: Vec<Row> = deliveries::table
            .inner_join(outbox::table.on(outbox::seq.eq(deliveries::seq)))
            .left_join(webhooks::table.on(webhooks::id.eq(deliveries::endpoint_id)))
            .left_join(
                endpoint_health::table.on(endpoint_health::endpoint_id.eq(deliveries::endpoint_id)),
            )
            .filter(deliveries::seq.eq_any(&seqs))
            .filter(outbox::seq.eq_any(&seqs))
            .filter(deliveries::delivery_id.eq_any(&delivery_ids))
            .filter(in_days(days))
            .select((
                (
                    deliveries::delivery_id,
                    deliveries::state,
                    deliveries::retrying,
                    outbox::seq,
                    outbox::org_id,
                    deliveries::endpoint_id,
                    outbox::lead_id,
                    outbox::is_test,
                    deliveries::replayed,
                ),
                (deliveries::turn_at, deliveries::due_at),
                Option::<WebhookRow>::as_select(),
                endpoint_health::state.nullable(),
                endpoint_health::consecutive_failures.nullable(),
            ))
            .load(&mut conn)
            .await?;
        drop(conn);
        let read_at = OffsetDateTime::now_utc();
        let mut by_id: std::collections::HashMap<Uuid, DeliveryContext> = rows
            .into_iter()
            .map(
                |(
                    (id, state, retrying, seq, org_id, endpoint_id, lead, is_test, replayed),
                    (paced_at, due_at),
                    hook,
                    health_state,
                    failures,
                )| {
                    let webhook = hook.map(|r| self.endpoints().open_for_delivery(r));
                    let health = EndpointGlance {
                        state: health_state.unwrap_or(EndpointState::Healthy),
                        consecutive_failures: failures.unwrap_or(0).max(0) as u32,
                    };
                    // In its lead's order: the webhook orders per lead, and the delivery is
                    // neither a test event nor a replay (docs/delivery.md, "Throttle and order").
                    let per_lead = matches!(&webhook, Some(Ok(w))
                        if w.webhook.ordering == DeliveryOrdering::PerLead);
                    let order = lead
                        .filter(|_| per_lead && !is_test && !replayed)
                        .map(|lead_id| LeadOrder {
                            org_id,
                            endpoint_id,
                            lead_id,
                            seq,
                            earlier_pending: false,
                        });
                    (
                        id,
                        DeliveryContext {
                            status: state.status(retrying),
                            state,
                            due_at,
                            read_at,
                            endpoint: EndpointKey {
                                org_id,
                                endpoint_id,
                            },
                            webhook,
                            health,
                            paced_at,
                            order,
                        },
                    )
                },
            )
            .collect();
        // Only deliveries in a lead's order ask whether an earlier one is pending: one more
        // round trip for them, none for anyone else.
        let ordered: Vec<(Uuid, Uuid, Uuid, Uuid, i64)> = by_id
            .iter()
            .filter(|(_, c)| !c.status.is_final())
            .filter_map(|(id, c)| {
                let o = c.order.as_ref()?;
                Some((*id, o.org_id, o.endpoint_id, o.lead_id, o.seq))
            })
            .collect();
        if !ordered.is_empty() {
            let blocked = self.earlier_pending(&ordered).await?;
            for ((id, ..), b) in ordered.iter().zip(blocked) {
                if let Some(o) = by_id.get_mut(id).and_then(|c| c.order.as_mut()) {
                    o.earlier_pending = b;
                }
            }
        }
        // Cloned, not moved: an id twice in one batch (a redelivery racing its original) gets
        // its row both times.
        Ok(delivery_ids
            .iter()
            .map(|id| by_id.get(id).cloned())
            .collect())
    }
}
