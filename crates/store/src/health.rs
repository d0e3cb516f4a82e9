//! Endpoint health (docs/delivery.md, "Endpoint health"), kept in PostgreSQL so every
//! `webhook-delivery` replica sees one truth: the state, the held deliveries of a failing
//! endpoint, the probe lease that lets one replica probe at a time, and the operational events a
//! change of state sends.
//!
//! The rules that decide a new state, and what it does to held deliveries, have one home:
//! `qualifier_domain::health` (`crates/domain/src/health.rs`), which both services apply;
//! [`Endpoints::change_health`] runs them under the row's lock and carries out the plan they
//! return, in the same transaction. This file decides nothing.

use crate::answer::ReadToEnd;
use diesel::sql_types::{BigInt, Bool, Bytea, Int4, Nullable, Text, Uuid as SqlUuid};
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::health::{
    EndpointHealth, EndpointState, HealthChange, HealthPlan, HeldDeliveries,
};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::endpoints::{EndpointKey, EndpointRef};
use crate::schema::endpoint_health;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = endpoint_health)]
pub(crate) struct HealthRow {
    state: EndpointState,
    failing_since: Option<OffsetDateTime>,
    last_success_at: Option<OffsetDateTime>,
    last_failure_at: Option<OffsetDateTime>,
    last_error: Option<String>,
    consecutive_failures: i32,
    streak_started_at: Option<OffsetDateTime>,
    next_probe_at: Option<OffsetDateTime>,
    probe_interval_ms: Option<i64>,
    disabled_reason: Option<String>,
}

impl From<HealthRow> for EndpointHealth {
    fn from(r: HealthRow) -> Self {
        EndpointHealth {
            state: r.state,
            failing_since: r.failing_since,
            last_success_at: r.last_success_at,
            last_failure_at: r.last_failure_at,
            last_error: r.last_error,
            consecutive_failures: r.consecutive_failures.max(0) as u32,
            streak_started_at: r.streak_started_at,
            next_probe_at: r.next_probe_at,
            probe_interval_ms: r.probe_interval_ms.map(|n| n.max(0) as u64),
            disabled_reason: r.disabled_reason,
        }
    }
}

/// An operational event to send to the operator's webhook.
#[derive(Debug, Clone, diesel::QueryableByName)]
pub struct OpsEvent {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub event_type: String,
    #[diesel(sql_type = Bytea)]
    pub payload: Vec<u8>,
    #[diesel(sql_type = Int4)]
    pub attempts: i32,
}

#[derive(diesel::QueryableByName)]
struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    org_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
}

#[derive(diesel::QueryableByName)]
struct StateCount {
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The key of `at`: its id as named (the health row is then read within its org), or the org's
/// primary's; `None` when the org has no endpoint.
async fn key_of(
    conn: &mut AsyncPgConnection,
    at: EndpointRef,
) -> Result<Option<EndpointKey>, StoreError> {
    let id = match at.id {
        Some(id) => Some(id),
        None => crate::endpoints::resolve(conn, at).await?,
    };
    Ok(id.map(|endpoint_id| EndpointKey {
        org_id: at.org_id,
        endpoint_id,
    }))
}

async fn read(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    lock: bool,
) -> Result<EndpointHealth, StoreError> {
    Ok(read_row(conn, at, lock).await?.unwrap_or_default())
}

/// The endpoint's health row, `None` when it has none (it never failed).
async fn read_row(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    lock: bool,
) -> Result<Option<EndpointHealth>, StoreError> {
    let q = endpoint_health::table
        .filter(endpoint_health::endpoint_id.eq(at.endpoint_id))
        .filter(endpoint_health::org_id.eq(at.org_id));
    let row: Option<HealthRow> = if lock {
        q.select(<HealthRow as diesel::SelectableHelper<diesel::pg::Pg>>::as_select())
            .for_update()
            .first_row(conn)
            .await
            .optional()?
    } else {
        q.select(<HealthRow as diesel::SelectableHelper<diesel::pg::Pg>>::as_select())
            .first_row(conn)
            .await
            .optional()?
    };
    Ok(row.map(EndpointHealth::from))
}

/// Writes `h` as the endpoint's health (the probe lease ends with it).
async fn write(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    h: &EndpointHealth,
) -> Result<(), StoreError> {
    diesel::update(endpoint_health::table.filter(endpoint_health::endpoint_id.eq(at.endpoint_id)))
        .set((
            endpoint_health::state.eq(h.state),
            endpoint_health::failing_since.eq(h.failing_since),
            endpoint_health::last_success_at.eq(h.last_success_at),
            endpoint_health::last_failure_at.eq(h.last_failure_at),
            endpoint_health::last_error.eq(h.last_error.as_deref()),
            endpoint_health::consecutive_failures
                .eq(i32::try_from(h.consecutive_failures).unwrap_or(i32::MAX)),
            endpoint_health::streak_started_at.eq(h.streak_started_at),
            endpoint_health::next_probe_at.eq(h.next_probe_at),
            endpoint_health::probe_interval_ms.eq(h.probe_interval_ms.map(|n| n as i64)),
            endpoint_health::probe_lease_until.eq(None::<OffsetDateTime>),
            endpoint_health::disabled_reason.eq(h.disabled_reason.as_deref()),
            endpoint_health::updated_at.eq(OffsetDateTime::now_utc()),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Queues the operational event of `change` for the endpoint's org, naming the endpoint (its
/// id and url), with its settings as they are now.
async fn queue_ops_event(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    change: HealthChange,
    h: &EndpointHealth,
) -> Result<(), StoreError> {
    use crate::schema::webhooks;
    let hook: Option<(String, bool)> = webhooks::table
        .filter(webhooks::id.eq(at.endpoint_id))
        .select((webhooks::url, webhooks::enabled))
        .first_row(conn)
        .await
        .optional()?;
    let Some((url, enabled)) = hook else {
        return Ok(());
    };
    queue_notice(
        conn,
        at.org_id,
        change.event_type(),
        serde_json::json!({
            "endpoint_id": at.endpoint_id,
            "url": url,
            "webhook": { "url": url, "enabled": enabled, "health": h },
        }),
    )
    .await
}

/// Queues one operational event of `event_type` for the org's operator service, `data` its
/// payload's `data`.
pub(crate) async fn queue_notice(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    event_type: &str,
    data: serde_json::Value,
) -> Result<(), StoreError> {
    let id = Uuid::new_v4();
    let payload = serde_json::json!({
        "id": id,
        "type": event_type,
        "version": "1",
        "occurred_at": qualifier_domain::timefmt::format(qualifier_domain::timefmt::now_millis()),
        "org_id": org_id,
        "data": data,
    });
    diesel::sql_query(
        "INSERT INTO ops_events (id, event_type, org_id, payload) VALUES ($1, $2, $3, $4)",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(event_type)
    .bind::<SqlUuid, _>(org_id)
    .bind::<Bytea, _>(serde_json::to_vec(&payload).unwrap_or_default())
    .execute(conn)
    .await?;
    Ok(())
}

impl crate::facets::Endpoints<'_> {
    /// The endpoint's health (healthy, with nothing to report, when it never failed, or when
    /// the org has no such endpoint).
    pub async fn endpoint_health(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<EndpointHealth, StoreError> {
        let mut conn = self.conn().await?;
        let Some(at) = key_of(&mut conn, at.into()).await? else {
            return Ok(EndpointHealth::default());
        };
        read(&mut conn, at, false).await
    }

    /// Runs a health rule atomically across replicas: locks the endpoint's row (creating it),
    /// asks `decide` for the plan given the current health (`None`: nothing changes, nothing is
    /// written), writes the new health, and carries out the plan in the same transaction: held
    /// deliveries released or skipped, the webhook disabled, and the change's operational event
    /// queued when `notify_operator`. What a change does is the plan's to say, not this one's.
    pub async fn change_health<F>(
        &self,
        at: EndpointKey,
        notify_operator: bool,
        decide: F,
    ) -> Result<(EndpointHealth, Option<HealthChange>), StoreError>
    where
        F: FnOnce(&EndpointHealth) -> Option<HealthPlan> + Send,
    {
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            // The row, once it exists, is locked and read in one statement; it is created
            // first only when it is missing (an endpoint's first failure). Inserting it on
            // every write was a statement and a plan more per write, and a failing endpoint's
            // writes come with each of its failed attempts.
            let now = match read_row(conn, at, true).await? {
                Some(h) => h,
                None => {
                    diesel::sql_query(
                        "INSERT INTO endpoint_health (org_id, endpoint_id) SELECT $1, $2
                         WHERE EXISTS (SELECT 1 FROM orgs WHERE id = $1) ON CONFLICT DO NOTHING",
                    )
                    .bind::<SqlUuid, _>(at.org_id)
                    .bind::<SqlUuid, _>(at.endpoint_id)
                    .execute(conn)
                    .await?;
                    read(conn, at, true).await?
                }
            };
            let Some(plan) = decide(&now) else {
                return Ok((now, None));
            };
            if plan.only_counts(&now) {
                // Only the counts and times of the streak change (no state, no held
                // delivery, no setting, no operational event): the commit does not wait for
                // the WAL's flush. A database crash may forget the last few hundred
                // milliseconds of them, which only delays an endpoint's being found failing
                // by as many failures; what the worker does next never rests on them
                // (docs/decisions.md, "Endpoint health's counts commit without waiting").
                diesel_async::SimpleAsyncConnection::batch_execute(
                    conn,
                    "SET LOCAL synchronous_commit TO off",
                )
                .await?;
            }
            apply(conn, at, &plan, notify_operator).await?;
            Ok((plan.health, plan.change))
        })
        .await
    }

    /// Claims up to `limit` failing endpoints whose probe is due and that no replica is
    /// probing, for `lease_ms` (after which another replica may try, if this one died).
    pub async fn claim_probes(
        &self,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<EndpointKey>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<Claimed> = diesel::sql_query(
            "UPDATE endpoint_health h
             SET probe_lease_until = clock_timestamp() + make_interval(secs => $1 / 1000.0)
             WHERE h.endpoint_id IN (
                 SELECT endpoint_id FROM endpoint_health
                 WHERE state = 'failing' AND next_probe_at <= clock_timestamp()
                   AND (probe_lease_until IS NULL OR probe_lease_until < clock_timestamp())
                 ORDER BY next_probe_at LIMIT $2
                 FOR UPDATE SKIP LOCKED)
             RETURNING h.org_id, h.endpoint_id",
        )
        .bind::<BigInt, _>(lease_ms)
        .bind::<BigInt, _>(limit)
        .load(&mut conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| EndpointKey {
                org_id: r.org_id,
                endpoint_id: r.endpoint_id,
            })
            .collect())
    }

    /// `Check now`: the next probe of a failing endpoint is due at once. False when the
    /// endpoint is not failing.
    pub async fn probe_now(&self, at: impl Into<EndpointRef>) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let Some(at) = key_of(&mut conn, at.into()).await? else {
            return Ok(false);
        };
        let n = diesel::update(
            endpoint_health::table
                .filter(endpoint_health::org_id.eq(at.org_id))
                .filter(endpoint_health::endpoint_id.eq(at.endpoint_id))
                .filter(endpoint_health::state.eq(EndpointState::Failing)),
        )
        .set(endpoint_health::next_probe_at.eq(OffsetDateTime::now_utc()))
        .execute(&mut conn)
        .await?;
        Ok(n > 0)
    }

    /// Endpoints by state, for `qualifier_webhook_endpoints{state}`: every configured webhook
    /// counts, healthy unless its health row says otherwise.
    pub async fn endpoint_counts(&self) -> Result<[(EndpointState, i64); 3], StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<StateCount> = diesel::sql_query(
            "SELECT COALESCE(h.state, 'healthy') AS state, count(*) AS n
             FROM webhooks w LEFT JOIN endpoint_health h ON h.endpoint_id = w.id
             GROUP BY 1",
        )
        .load(&mut conn)
        .await?;
        let of = |s: &str| rows.iter().find(|r| r.state == s).map_or(0, |r| r.n);
        Ok([
            (EndpointState::Healthy, of("healthy")),
            (EndpointState::Failing, of("failing")),
            (EndpointState::Disabled, of("disabled")),
        ])
    }

    /// Claims up to `limit` operational events that are due, for `lease_ms`: of each org, only
    /// its oldest undelivered event, so an org's events leave in the order they happened (the
    /// next waits for the one before it, even through its retries; one given up no longer
    /// holds the others back) while different orgs' go
    /// side by side. The due check is repeated on the row being claimed, so two replicas never
    /// claim the same event.
    pub async fn claim_ops_events(
        &self,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<OpsEvent>, StoreError> {
        let mut conn = self.conn().await?;
        Ok(diesel::sql_query(
            "UPDATE ops_events e
             SET next_attempt_at = clock_timestamp() + make_interval(secs => $1 / 1000.0)
             WHERE e.next_attempt_at <= clock_timestamp() AND e.delivered_at IS NULL
               AND e.id IN (
                 SELECT id FROM (
                     SELECT DISTINCT ON (org_id) id, next_attempt_at, created_at
                     FROM ops_events
                     WHERE delivered_at IS NULL AND next_attempt_at <> 'infinity'
                     ORDER BY org_id, created_at) oldest
                 WHERE next_attempt_at <= clock_timestamp()
                 ORDER BY created_at LIMIT $2)
             RETURNING e.id, e.event_type, e.payload, e.attempts",
        )
        .bind::<BigInt, _>(lease_ms)
        .bind::<BigInt, _>(limit)
        .load(&mut conn)
        .await?)
    }

    /// Records one attempt at an operational event: delivered, or due again after `retry_ms`
    /// (`None`: given up).
    pub async fn ops_event_attempted(
        &self,
        id: Uuid,
        delivered: bool,
        error: Option<&str>,
        retry_after: Option<std::time::Duration>,
    ) -> Result<(), StoreError> {
        let retry_ms = retry_after.map(|d| d.as_millis() as i64);
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "UPDATE ops_events SET attempts = attempts + 1, last_error = $3,
                    delivered_at = CASE WHEN $2 THEN clock_timestamp() END,
                    next_attempt_at = CASE WHEN $4 IS NULL THEN 'infinity'::timestamptz
                                           ELSE clock_timestamp() + make_interval(secs => $4 / 1000.0) END
             WHERE id = $1",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Bool, _>(delivered)
        .bind::<Nullable<Text>, _>(error)
        .bind::<Nullable<BigInt>, _>(retry_ms)
        .execute(&mut conn)
        .await?;
        Ok(())
    }
}

/// Carries out a health plan in the caller's transaction, the endpoint's row locked: the new
/// health (its probe lease ends with it), the webhook disabled, held deliveries released or
/// skipped, and the change's operational event queued when `notify_operator`.
pub(crate) async fn apply(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    plan: &HealthPlan,
    notify_operator: bool,
) -> Result<(), StoreError> {
    write(conn, at, &plan.health).await?;
    if plan.disable_webhook {
        diesel::sql_query(
            "UPDATE webhooks SET enabled = false, updated_at = clock_timestamp()
             WHERE id = $1",
        )
        .bind::<SqlUuid, _>(at.endpoint_id)
        .execute(&mut *conn)
        .await?;
    }
    match plan.held {
        HeldDeliveries::Keep => {}
        HeldDeliveries::Release => crate::deliveries::state::release_held(conn, at).await?,
        HeldDeliveries::Skip => {
            crate::deliveries::state::skip_held(conn, at, "webhook disabled").await?;
        }
    }
    if let (Some(c), true) = (plan.change, notify_operator) {
        queue_ops_event(conn, at, c, &plan.health).await?;
    }
    Ok(())
}

/// Saving the webhook (`PUT`, the console's `Save`): the endpoint's health as
/// `qualifier_domain::health::on_save` says, in the `PUT`'s transaction. A change it makes
/// (disabling a failing endpoint) queues its operational event whether or not an operator
/// webhook is configured (`lead-api` does not know); unsent ones leave with retention.
pub(crate) async fn on_save(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    enabled: bool,
) -> Result<(), StoreError> {
    // No row is a healthy endpoint with nothing to forget, which no save changes: only an
    // existing row is locked and planned for.
    let now = read(conn, at, true).await?;
    match qualifier_domain::health::on_save(&now, enabled, OffsetDateTime::now_utc()) {
        Some(plan) => apply(conn, at, &plan, true).await,
        None => Ok(()),
    }
}
