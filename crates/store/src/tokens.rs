//! Org API tokens and the shared rate-limit bucket.
//!
//! Authentication and admission are one SQL statement: it finds the token by the hash of what
//! the client sent, refills its bucket by the time elapsed, and takes one unit if there is one.
//! The row lock serializes concurrent requests for the same token across every replica, so the
//! limit is exact however many `lead-api` processes share the database.

use diesel::sql_types::{Bool, Bytea, Double, Uuid as SqlUuid};
use diesel::{ExpressionMethods, QueryDsl, QueryableByName};
use diesel_async::RunQueryDsl;
use qualifier_domain::timefmt::now_millis;
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::api_tokens;
use crate::secrets::{hash_token, looks_like_org_token, new_org_token};
use crate::{Store, StoreError};

#[derive(Debug, Clone, Serialize)]
pub struct TokenInfo {
    pub id: Uuid,
    pub name: Option<String>,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub created_at: OffsetDateTime,
}

/// The outcome of presenting a token.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Missing, malformed, unknown or revoked.
    Unauthorized,
    Allowed {
        org_id: Uuid,
        token_id: Uuid,
        remaining: u32,
    },
    Limited {
        org_id: Uuid,
        token_id: Uuid,
        retry_after_secs: u64,
    },
}

#[derive(QueryableByName)]
struct AdmitRow {
    #[diesel(sql_type = SqlUuid)]
    token_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    org_id: Uuid,
    #[diesel(sql_type = Bool)]
    allowed: bool,
    #[diesel(sql_type = Double)]
    level: f64,
}

/// The first 8 bytes of a token's SHA-256: what replicas announce to each other when a token is
/// created (migration 5), to refuse unknown tokens without a round trip. Not the token, and not
/// enough of its hash to look it up.
pub fn token_fingerprint(token: &str) -> [u8; 8] {
    fingerprint_of_hash(&hash_token(token)).unwrap_or_default()
}

fn fingerprint_of_hash(hash: &[u8]) -> Option<[u8; 8]> {
    hash.get(..8)?.try_into().ok()
}

/// The function `qualifier_admit` (migration 4), with $1 token hash, $2 capacity and $3 refill
/// per second. A NULL bucket is a full one. Refusals
/// (level < 1) store the refilled level without taking a unit, so 429s consume nothing.
const ADMIT_SQL: &str = "SELECT token_id, org_id, allowed, level FROM qualifier_admit($1, $2, $3)";

impl Store {
    /// Creates a token; the secret is returned once and only its hash is stored.
    pub async fn create_token(
        &self,
        org_id: Uuid,
        name: Option<String>,
    ) -> Result<(TokenInfo, String), StoreError> {
        let secret = new_org_token();
        let info = TokenInfo {
            id: Uuid::now_v7(),
            name,
            created_at: now_millis(),
        };
        let mut conn = self.conn().await?;
        diesel::insert_into(api_tokens::table)
            .values((
                api_tokens::id.eq(info.id),
                api_tokens::org_id.eq(org_id),
                api_tokens::name.eq(&info.name),
                api_tokens::token_hash.eq(hash_token(&secret)),
                api_tokens::created_at.eq(info.created_at),
            ))
            .execute(&mut conn)
            .await
            .map_err(crate::orgs::org_missing)?;
        Ok((info, secret))
    }

    /// Revokes at once: the next request with it is 401 (the lookup filters on `revoked_at`).
    pub async fn revoke_token(&self, org_id: Uuid, token_id: Uuid) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let n = diesel::update(
            api_tokens::table
                .filter(api_tokens::id.eq(token_id))
                .filter(api_tokens::org_id.eq(org_id))
                .filter(api_tokens::revoked_at.is_null()),
        )
        .set(api_tokens::revoked_at.eq(now_millis()))
        .execute(&mut conn)
        .await?;
        if n == 0 {
            Err(StoreError::NotFound("Token not found"))
        } else {
            Ok(())
        }
    }

    /// The fingerprints ([`token_fingerprint`]) of every token that exists, revoked or not.
    pub async fn token_fingerprints(&self) -> Result<Vec<[u8; 8]>, StoreError> {
        let mut conn = self.conn().await?;
        let hashes: Vec<Vec<u8>> = api_tokens::table
            .select(api_tokens::token_hash)
            .load(&mut conn)
            .await?;
        Ok(hashes
            .iter()
            .filter_map(|h| fingerprint_of_hash(h))
            .collect())
    }

    /// Authenticates `token` and takes one request from its bucket of `per_minute`.
    pub async fn admit(&self, token: &str, per_minute: u32) -> Result<Admission, StoreError> {
        if !looks_like_org_token(token) {
            return Ok(Admission::Unauthorized);
        }
        let capacity = f64::from(per_minute);
        let per_second = capacity / 60.0;
        // The bucket is advisory state: it commits without waiting for the WAL flush, which
        // took most of a GET's time (see docs/performance.md).
        let mut conn = match &self.limiter_pool {
            Some(p) => p.get().await.map_err(StoreError::from_pool)?,
            None => self.conn().await?,
        };
        let rows: Vec<AdmitRow> = diesel::sql_query(ADMIT_SQL)
            .bind::<Bytea, _>(hash_token(token))
            .bind::<Double, _>(capacity)
            .bind::<Double, _>(per_second)
            .load(&mut conn)
            .await?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(Admission::Unauthorized);
        };
        Ok(if row.allowed {
            Admission::Allowed {
                org_id: row.org_id,
                token_id: row.token_id,
                remaining: row.level.max(0.0).floor() as u32,
            }
        } else {
            let wait = if per_second > 0.0 {
                ((1.0 - row.level) / per_second).ceil()
            } else {
                60.0
            };
            Admission::Limited {
                org_id: row.org_id,
                token_id: row.token_id,
                retry_after_secs: (wait as u64).max(1),
            }
        })
    }
}
