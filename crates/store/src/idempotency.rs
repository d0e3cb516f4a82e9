//! Idempotency keys: the first response to a key is kept for [`KEEP`], so a client may repeat a
//! POST or PATCH safely (docs/api.md).

use std::time::Duration;

use diesel::QueryableByName;
use diesel::sql_types::{Bytea, Int2, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;

use crate::{Store, StoreError};

/// How long a response is kept.
pub const KEEP: Duration = Duration::from_secs(24 * 3600);

/// A first request that has not finished after this long is taken as abandoned (its process
/// died); a repeat then runs afresh instead of getting 409 for a day.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(60);

/// A kept response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub status: u16,
    pub body: Vec<u8>,
    pub location: Option<String>,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is ours: process the request, then [`Store::idempotency_keep`] or
    /// [`Store::idempotency_release`].
    Claimed,
    /// The same key with another method, path or body.
    Mismatch,
    /// The first request with this key is still being processed.
    InProgress,
    /// The first request's response.
    Replay(Kept),
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = Bytea)]
    fingerprint: Vec<u8>,
    #[diesel(sql_type = Nullable<Int2>)]
    status: Option<i16>,
    #[diesel(sql_type = Nullable<Bytea>)]
    response_body: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    location: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    claimed: bool,
}

impl Store {
    /// Claims `key` for a request with `fingerprint`, in one statement: a new key, an expired
    /// one or an abandoned one becomes ours; otherwise the kept row says what to answer.
    ///
    /// `lead`: the lead the request is about when its path names one (a PATCH), kept with the
    /// key from the start, so that erasing that lead removes the key whatever it holds by then.
    pub async fn idempotency_claim(
        &self,
        org_id: Uuid,
        key: &str,
        fingerprint: &[u8],
        lead: Option<Uuid>,
    ) -> Result<Claim, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<Row> = diesel::sql_query(
            "INSERT INTO idempotency_keys AS k (org_id, key, fingerprint, lead_id, lead_unknown)
             VALUES ($1, $2, $3, $6, false)
             ON CONFLICT (org_id, key) DO UPDATE
                 SET fingerprint = EXCLUDED.fingerprint, status = NULL, response_body = NULL,
                     location = NULL, created_at = clock_timestamp(),
                     lead_id = EXCLUDED.lead_id, lead_unknown = false
                 WHERE k.created_at < clock_timestamp() - make_interval(secs => $4)
                    OR (k.status IS NULL
                        AND k.created_at < clock_timestamp() - make_interval(secs => $5))
             RETURNING fingerprint, status, response_body, location, true AS claimed",
        )
        .bind::<SqlUuid, _>(org_id)
        .bind::<Text, _>(key)
        .bind::<Bytea, _>(fingerprint)
        .bind::<diesel::sql_types::Double, _>(KEEP.as_secs_f64())
        .bind::<diesel::sql_types::Double, _>(ABANDONED_AFTER.as_secs_f64())
        .bind::<Nullable<SqlUuid>, _>(lead)
        .load(&mut conn)
        .await
        .map_err(crate::orgs::org_missing)?;
        if !rows.is_empty() {
            return Ok(Claim::Claimed);
        }
        // Taken and live: read what it holds.
        let rows: Vec<Row> = diesel::sql_query(
            "SELECT fingerprint, status, response_body, location, false AS claimed
             FROM idempotency_keys WHERE org_id = $1 AND key = $2",
        )
        .bind::<SqlUuid, _>(org_id)
        .bind::<Text, _>(key)
        .load(&mut conn)
        .await?;
        let Some(row) = rows.into_iter().next() else {
            // Purged between the two statements (rare): a retry will claim it.
            return Ok(Claim::InProgress);
        };
        debug_assert!(!row.claimed);
        Ok(if row.fingerprint != fingerprint {
            Claim::Mismatch
        } else {
            match (row.status, row.response_body) {
                (Some(status), Some(body)) => Claim::Replay(Kept {
                    status: status as u16,
                    body,
                    location: row.location,
                }),
                _ => Claim::InProgress,
            }
        })
    }

    /// Keeps the response to a claimed key. `lead`: the lead the answer holds or points to.
    ///
    /// Such an answer is kept only while the lead exists, checked in the same statement under a
    /// key-share lock on the lead's row: the erasure locks the row first (`crates/store/src/
    /// erasure.rs`), so either this commits first and the erasure then removes the answer with
    /// the lead's other keys, or the erasure commits first and this finds no lead and gives the
    /// key up instead of keeping the lead it no longer may. The change the answer reports has
    /// committed either way; only its replay is lost, and a repeat of the request finds no lead.
    pub async fn idempotency_keep(
        &self,
        org_id: Uuid,
        key: &str,
        kept: &Kept,
        lead: Option<Uuid>,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "WITH l AS (SELECT id FROM leads WHERE org_id = $1 AND id = $6 FOR KEY SHARE),
                  gone AS (DELETE FROM idempotency_keys
                           WHERE org_id = $1 AND key = $2 AND $6 IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM l))
             UPDATE idempotency_keys
             SET status = $3, response_body = $4, location = $5, lead_id = $6,
                 lead_unknown = false
             WHERE org_id = $1 AND key = $2 AND ($6 IS NULL OR EXISTS (SELECT 1 FROM l))",
        )
        .bind::<SqlUuid, _>(org_id)
        .bind::<Text, _>(key)
        .bind::<Int2, _>(kept.status as i16)
        .bind::<Bytea, _>(&kept.body)
        .bind::<Nullable<Text>, _>(kept.location.as_deref())
        .bind::<Nullable<SqlUuid>, _>(lead)
        .execute(&mut conn)
        .await?;
        Ok(())
    }

    /// Removes the kept answers about `lead_id` (its erasure's transaction, after the lead's
    /// row is locked): those that say their lead, through `idempotency_keys_lead`; then those
    /// written by a version that did not say (`lead_unknown`, through their own index), whose
    /// answer or Location is searched for the lead's id as before. Answers the number removed.
    pub(crate) async fn forget_idempotency_answers(
        conn: &mut diesel_async::AsyncPgConnection,
        org_id: Uuid,
        lead_id: Uuid,
    ) -> Result<usize, diesel::result::Error> {
        let by_lead =
            diesel::sql_query("DELETE FROM idempotency_keys WHERE org_id = $1 AND lead_id = $2")
                .bind::<SqlUuid, _>(org_id)
                .bind::<SqlUuid, _>(lead_id)
                .execute(conn)
                .await?;
        let unknown = diesel::sql_query(
            "DELETE FROM idempotency_keys
             WHERE org_id = $1 AND lead_unknown
               AND (location = '/api/v1/leads/' || $2::text
                    OR position(convert_to($2::text, 'UTF8') IN response_body) > 0)",
        )
        .bind::<SqlUuid, _>(org_id)
        .bind::<SqlUuid, _>(lead_id)
        .execute(conn)
        .await?;
        Ok(by_lead + unknown)
    }

    /// Gives a claimed key up (the response was a 5xx, which is not kept: a repeat runs afresh).
    pub async fn idempotency_release(&self, org_id: Uuid, key: &str) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query("DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2")
            .bind::<SqlUuid, _>(org_id)
            .bind::<Text, _>(key)
            .execute(&mut conn)
            .await?;
        Ok(())
    }

    /// Deletes up to `limit` expired keys (housekeeping, in batches so it never holds long
    /// locks). Expired keys are already ignored by [`Store::idempotency_claim`].
    pub async fn idempotency_purge(&self, limit: i64) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        Ok(diesel::sql_query(
            "DELETE FROM idempotency_keys WHERE ctid IN (
                 SELECT ctid FROM idempotency_keys
                 WHERE created_at < clock_timestamp() - make_interval(secs => $1)
                 LIMIT $2)",
        )
        .bind::<diesel::sql_types::Double, _>(KEEP.as_secs_f64())
        .bind::<diesel::sql_types::Int8, _>(limit)
        .execute(&mut conn)
        .await?)
    }
}
