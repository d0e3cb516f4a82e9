//! The settings console's sign-in (docs/console.md): one-time tickets minted through the
//! internal API, exchanged for an eight-hour session scoped to one org, and the token list the
//! console shows.

use crate::answer::ReadToEnd;
use diesel::sql_types::{Bytea, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::secrets::{hash_token, random_base62};

/// A ticket is good for ten minutes, once.
pub const TICKET_TTL: time::Duration = time::Duration::minutes(10);
/// A session lasts eight hours from sign-in.
pub const SESSION_TTL: time::Duration = time::Duration::hours(8);

/// A signed-in administrator: which org, and the CSRF token its forms must carry.
#[derive(Debug, Clone, diesel::QueryableByName)]
pub struct ConsoleSession {
    #[diesel(sql_type = SqlUuid)]
    pub org_id: Uuid,
    #[diesel(sql_type = Text)]
    pub csrf_token: String,
    /// The org's name, shown on every page (docs/reliability.md, "Strangers, quotas and pages").
    #[diesel(sql_type = Text)]
    pub org_name: String,
}

/// Which org a sign-in ticket is for, read without using it up.
#[derive(Debug, Clone, diesel::QueryableByName)]
pub struct TicketOrg {
    #[diesel(sql_type = SqlUuid)]
    pub org_id: Uuid,
    #[diesel(sql_type = Text)]
    pub org_name: String,
}

/// An API token as the console lists it (never its secret).
#[derive(Debug, Clone, diesel::QueryableByName)]
pub struct TokenListing {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    /// The last admission through the rate limiter, i.e. the last authenticated request.
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_used_at: Option<OffsetDateTime>,
}

#[derive(diesel::QueryableByName)]
struct OrgRow {
    #[diesel(sql_type = SqlUuid)]
    org_id: Uuid,
    #[diesel(sql_type = Text)]
    org_name: String,
}

impl crate::facets::Console<'_> {
    /// A new sign-in ticket for `org_id` and when it expires; the ticket is returned once.
    pub async fn mint_console_ticket(
        &self,
        org_id: Uuid,
    ) -> Result<(String, OffsetDateTime), StoreError> {
        let ticket = format!("qlf_ct_{}", random_base62(40));
        let expires_at = qualifier_domain::timefmt::now_millis() + TICKET_TTL;
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "INSERT INTO console_tickets (ticket_hash, org_id, expires_at) VALUES ($1, $2, $3)",
        )
        .bind::<Bytea, _>(hash_token(&ticket))
        .bind::<SqlUuid, _>(org_id)
        .bind::<Timestamptz, _>(expires_at)
        .execute(&mut conn)
        .await
        .map_err(crate::orgs::org_missing)?;
        Ok((ticket, expires_at))
    }

    /// Uses `ticket` up and opens a session: (session secret, session), or `None` when the
    /// ticket is unknown, used or expired. Using it and opening the session are one transaction,
    /// so a ticket opens at most one session even when two requests race with it.
    pub async fn redeem_console_ticket(
        &self,
        ticket: &str,
    ) -> Result<Option<(String, ConsoleSession)>, StoreError> {
        let hash = hash_token(ticket);
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            let org: Option<OrgRow> = diesel::sql_query(
                "UPDATE console_tickets t SET used_at = clock_timestamp()
                     WHERE t.ticket_hash = $1 AND t.used_at IS NULL
                       AND t.expires_at > clock_timestamp()
                     RETURNING t.org_id,
                               (SELECT o.name FROM orgs o WHERE o.id = t.org_id) AS org_name",
            )
            .bind::<Bytea, _>(&hash)
            .one(&mut *conn)
            .await
            .map(Some)
            .or_else(not_found_is_none)?;
            let Some(org) = org else { return Ok(None) };
            let secret = random_base62(43);
            let session = ConsoleSession {
                org_id: org.org_id,
                csrf_token: random_base62(32),
                org_name: org.org_name,
            };
            diesel::sql_query(
                "INSERT INTO console_sessions (session_hash, org_id, csrf_token, expires_at)
                     VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 second')",
            )
            .bind::<Bytea, _>(hash_token(&secret))
            .bind::<SqlUuid, _>(session.org_id)
            .bind::<Text, _>(&session.csrf_token)
            .bind::<diesel::sql_types::Int8, _>(SESSION_TTL.whole_seconds())
            .execute(conn)
            .await?;
            Ok(Some((secret, session)))
        })
        .await
    }

    /// The org a ticket would sign in to, if it is unused and unexpired; the ticket stays
    /// usable (the console asks before switching orgs).
    pub async fn peek_console_ticket(&self, ticket: &str) -> Result<Option<TicketOrg>, StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "SELECT t.org_id, (SELECT o.name FROM orgs o WHERE o.id = t.org_id) AS org_name
             FROM console_tickets t
             WHERE t.ticket_hash = $1 AND t.used_at IS NULL AND t.expires_at > clock_timestamp()",
        )
        .bind::<Bytea, _>(hash_token(ticket))
        .one(&mut conn)
        .await
        .map(Some)
        .or_else(not_found_is_none)
    }

    /// The live session behind a cookie's secret, if any. The org's name is a subquery, not
    /// a join: a join let the planner scan every org (a hash join, when the sessions table's
    /// estimate is off), a cost that grows with the number of orgs on every console page.
    pub async fn console_session(
        &self,
        secret: &str,
    ) -> Result<Option<ConsoleSession>, StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "SELECT s.org_id, s.csrf_token,
                    (SELECT o.name FROM orgs o WHERE o.id = s.org_id) AS org_name
             FROM console_sessions s
             WHERE s.session_hash = $1 AND s.expires_at > clock_timestamp()",
        )
        .bind::<Bytea, _>(hash_token(secret))
        .one(&mut conn)
        .await
        .map(Some)
        .or_else(not_found_is_none)
    }

    /// Signs out: the session's cookie opens nothing from now on.
    pub async fn end_console_session(&self, secret: &str) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query("DELETE FROM console_sessions WHERE session_hash = $1")
            .bind::<Bytea, _>(hash_token(secret))
            .execute(&mut conn)
            .await?;
        Ok(())
    }

    /// Expired tickets and sessions, removed in one batch (housekeeping; expired rows are
    /// already refused).
    pub async fn purge_console(&self, batch: i64) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let mut n = 0;
        for table in ["console_tickets", "console_sessions"] {
            n += diesel::sql_query(format!(
                "DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table}
                 WHERE expires_at < clock_timestamp() - interval '1 day' LIMIT $1)"
            ))
            .bind::<diesel::sql_types::Int8, _>(batch)
            .execute(&mut conn)
            .await?;
        }
        Ok(n)
    }

    /// The org's tokens that are not revoked, newest first.
    pub async fn list_tokens(&self, org_id: Uuid) -> Result<Vec<TokenListing>, StoreError> {
        let mut conn = self.conn().await?;
        Ok(diesel::sql_query(
            "SELECT id, name, created_at, bucket_updated_at AS last_used_at FROM api_tokens
             WHERE org_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC",
        )
        .bind::<SqlUuid, _>(org_id)
        .load(&mut conn)
        .await?)
    }
}

fn not_found_is_none<T>(e: diesel::result::Error) -> Result<Option<T>, StoreError> {
    match e {
        diesel::result::Error::NotFound => Ok(None),
        e => Err(e.into()),
    }
}

/// One hour of the Deliveries page's chart: the deliveries created in it, by what became of
/// them, and how many of their attempts failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HourOfDeliveries {
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub hour: OffsetDateTime,
    pub succeeded: i64,
    pub dead: i64,
    pub skipped: i64,
    /// Pending or retrying: not finished yet.
    pub in_progress: i64,
    pub failed_attempts: i64,
}

#[derive(diesel::QueryableByName)]
struct HourRow {
    #[diesel(sql_type = Timestamptz)]
    hour: OffsetDateTime,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    succeeded: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    dead: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    skipped: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    in_progress: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    failed_attempts: i64,
}

/// The advisory lock that makes one folder at a time (`pg_try_advisory_xact_lock`): the
/// others skip their round instead of queueing behind it.
const FOLD_LOCK: i64 = 0x5146_4844_5253; // "QFHDRS"

/// How long an hour of the chart is kept after it began: the 24 hours shown, the one in
/// progress, and one more so that a delta of a row written at the window's edge is never
/// folded into an hour already removed.
pub const CHART_HOURS_KEPT: time::Duration = time::Duration::hours(26);

impl crate::facets::Console<'_> {
    /// The last 24 hours of one endpoint's deliveries (`None`: the primary's, as the list
    /// without a filter shows), hour by hour (24 entries, oldest first, the last one the hour
    /// in progress), by creation time (UTC hours), as the delivery list's `since` filter
    /// counts them: the chart above a list always counts that list's deliveries.
    ///
    /// Cost: at most 25 rows of `delivery_hours`, whatever the endpoint's volume, plus the
    /// `delivery_hour_changes` not folded yet (about a second of every org's writes). The
    /// delivery rows' writers and triggers keep them, per endpoint: no delivery row, index
    /// entry or attempt log is read. (A move written by a release that does not count per
    /// endpoint is counted under the nil endpoint: in the org's sums, such as a dry run's
    /// count, and in no endpoint's chart.) One statement, so one snapshot: a fold committing
    /// meanwhile is seen whole (its changes gone and its totals added) or not at all.
    pub async fn deliveries_by_hour(
        &self,
        org_id: Uuid,
        endpoint_id: Option<Uuid>,
    ) -> Result<Vec<HourOfDeliveries>, StoreError> {
        let now = qualifier_domain::timefmt::now_millis();
        let current = now
            .replace_minute(0)
            .and_then(|t| t.replace_second(0))
            .and_then(|t| t.replace_nanosecond(0))
            .unwrap_or(now);
        let start = current - time::Duration::hours(23);
        let mut conn = self.conn().await?;
        let endpoint = crate::deliveries::listed_endpoint(&mut conn, org_id, endpoint_id).await?;
        let rows: Vec<HourRow> = diesel::sql_query(
            "SELECT hour, sum(succeeded)::int8 AS succeeded, sum(dead)::int8 AS dead,
                    sum(skipped)::int8 AS skipped, sum(in_progress)::int8 AS in_progress,
                    sum(failed_attempts)::int8 AS failed_attempts
             FROM (SELECT hour, succeeded, dead, skipped, in_progress, failed_attempts
                   FROM delivery_hours WHERE org_id = $1 AND hour >= $2 AND endpoint_id = $3
                   UNION ALL
                   SELECT hour, succeeded, dead, skipped, in_progress, failed_attempts
                   FROM delivery_hour_changes
                   WHERE org_id = $1 AND hour >= $2 AND endpoint_id = $3) t
             GROUP BY hour",
        )
        .bind::<SqlUuid, _>(org_id)
        .bind::<Timestamptz, _>(start)
        .bind::<SqlUuid, _>(endpoint)
        .load(&mut conn)
        .await?;
        let mut hours: Vec<HourOfDeliveries> = (0..24)
            .map(|i| HourOfDeliveries {
                hour: start + time::Duration::hours(i),
                succeeded: 0,
                dead: 0,
                skipped: 0,
                in_progress: 0,
                failed_attempts: 0,
            })
            .collect();
        for r in rows {
            let i = ((r.hour - start).whole_hours()).clamp(0, 23) as usize;
            let h = &mut hours[i];
            h.succeeded += r.succeeded;
            h.dead += r.dead;
            h.skipped += r.skipped;
            h.in_progress += r.in_progress;
            h.failed_attempts += r.failed_attempts;
        }
        Ok(hours)
    }

    /// Folds the pending changes into the hourly totals; how many hours it changed (0 when
    /// another replica was folding). Reads only the changes written since the last fold
    /// (`delivery_hour_changes` has no index and stays about a second of writes long); those of
    /// transactions still open stay for the next round. The totals are written in key order,
    /// so two folders could never deadlock, though the lock already keeps them apart.
    pub async fn fold_delivery_hours(&self) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        // `delivery_hour_deltas` is the old form's table (without the last two columns), written
        // by a trigger the migrations replaced; only its last changes can be left there.
        Ok(diesel::sql_query(
            "WITH turn AS (SELECT pg_try_advisory_xact_lock($1) AS mine),
                  gone AS (DELETE FROM delivery_hour_changes WHERE (SELECT mine FROM turn)
                           RETURNING *),
                  gone_before AS (DELETE FROM delivery_hour_deltas WHERE (SELECT mine FROM turn)
                                  RETURNING *)
             INSERT INTO delivery_hours AS h
                 (org_id, hour, endpoint_id, succeeded, dead, skipped, in_progress,
                  failed_attempts, failed, erased_skipped, filtered)
             SELECT org_id, hour, endpoint_id, sum(succeeded), sum(dead), sum(skipped),
                    sum(in_progress), sum(failed_attempts), sum(failed), sum(erased_skipped),
                    sum(filtered)
             FROM (SELECT org_id, hour, endpoint_id, succeeded, dead, skipped, in_progress,
                          failed_attempts, failed, erased_skipped, filtered FROM gone
                   UNION ALL
                   SELECT org_id, hour, '00000000-0000-0000-0000-000000000000'::uuid,
                          succeeded, dead, skipped, in_progress, failed_attempts, 0, 0, 0
                   FROM gone_before) g
             GROUP BY org_id, hour, endpoint_id ORDER BY org_id, hour, endpoint_id
             ON CONFLICT (org_id, hour, endpoint_id) DO UPDATE
                 SET succeeded = h.succeeded + excluded.succeeded,
                     dead = h.dead + excluded.dead,
                     skipped = h.skipped + excluded.skipped,
                     in_progress = h.in_progress + excluded.in_progress,
                     failed_attempts = h.failed_attempts + excluded.failed_attempts,
                     failed = h.failed + excluded.failed,
                     erased_skipped = h.erased_skipped + excluded.erased_skipped,
                     filtered = h.filtered + excluded.filtered",
        )
        .bind::<diesel::sql_types::BigInt, _>(FOLD_LOCK)
        .execute(&mut conn)
        .await?)
    }

    /// Hours no longer needed: older than [`CHART_HOURS_KEPT`] (the chart's) and older than
    /// `delivery_hour_cover.covered_from` (the dry run's; retention moves it forward as it
    /// drops partitions, `Upkeep::expire_events`). Index `delivery_hours_hour`: a few rows per
    /// org per hour.
    pub async fn expire_delivery_hours(&self) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let cutoff = qualifier_domain::timefmt::now_millis() - CHART_HOURS_KEPT;
        Ok(diesel::sql_query(
            "DELETE FROM delivery_hours
             WHERE hour < $1 AND hour < (SELECT covered_from FROM delivery_hour_cover)",
        )
        .bind::<Timestamptz, _>(cutoff)
        .execute(&mut conn)
        .await?)
    }
}
