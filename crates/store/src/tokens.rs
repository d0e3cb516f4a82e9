//! Org API tokens and the shared rate-limit bucket.
//!
//! Authentication and admission are one SQL statement: it finds the token by the hash of what
//! the client sent, refills its bucket by the time elapsed, and takes one unit if there is one.
//! The row lock serializes concurrent requests for the same token across every replica, so the
//! limit is exact however many `lead-api` processes share the database.

use crate::answer::ReadToEnd;
use diesel::sql_types::{Array, Bytea, Double, Integer, Uuid as SqlUuid};
use diesel::{ExpressionMethods, QueryDsl, QueryableByName};
use diesel_async::RunQueryDsl;
use qualifier_domain::FieldError;
use qualifier_domain::timefmt::now_millis;
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::api_tokens;
use crate::secrets::{hash_token, looks_like_org_token, new_org_token};
use crate::{Store, StoreError};

/// Unrevoked API tokens one org may hold (docs/reliability.md, "Strangers, quotas and pages").
pub const MAX_TOKENS_PER_ORG: i64 = 100;

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
    #[diesel(sql_type = Bytea)]
    token_hash: Vec<u8>,
    #[diesel(sql_type = SqlUuid)]
    token_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    org_id: Uuid,
    /// The bucket's level after refilling, before this batch took anything.
    #[diesel(sql_type = Double)]
    level: f64,
    /// How many of the batch's requests for this token were admitted (the first ones).
    #[diesel(sql_type = Integer)]
    granted: i32,
}

/// The first 8 bytes of a token's SHA-256: what replicas announce to each other when a token is
/// created, to refuse unknown tokens without a round trip. Not the token, and not
/// enough of its hash to look it up.
pub fn token_fingerprint(token: &str) -> [u8; 8] {
    fingerprint_of_hash(&hash_token(token)).unwrap_or_default()
}

fn fingerprint_of_hash(hash: &[u8]) -> Option<[u8; 8]> {
    hash.get(..8)?.try_into().ok()
}

/// The function `qualifier_admit_batch`, with $1 the distinct token
/// hashes, $2 how many requests present each, $3 capacity and $4 refill per second. A NULL
/// bucket is a full one. Refusals store the refilled level without taking a unit, so 429s
/// consume nothing.
const ADMIT_HEAD: &str = "SELECT token_hash, token_id, org_id, level, granted \
     FROM qualifier_admit_batch(";
const ADMIT_TAIL: &str = ")";

/// What the `i`-th request (0-based) of a batch presenting one token gets, when the bucket held
/// `level` units after refilling and the batch was granted `granted` of them.
fn admission_of(row: &AdmitRow, i: usize, per_second: f64) -> Admission {
    let granted = usize::try_from(row.granted).unwrap_or(0);
    if i < granted {
        Admission::Allowed {
            org_id: row.org_id,
            token_id: row.token_id,
            remaining: (row.level - (i + 1) as f64).max(0.0).floor() as u32,
        }
    } else {
        let left = row.level - granted as f64;
        let wait = if per_second > 0.0 {
            ((1.0 - left) / per_second).ceil()
        } else {
            60.0
        };
        Admission::Limited {
            org_id: row.org_id,
            token_id: row.token_id,
            retry_after_secs: (wait as u64).max(1),
        }
    }
}

impl Store {
    /// Creates a token; the secret is returned once and only its hash is stored.
    /// Creates an API token; at most [`MAX_TOKENS_PER_ORG`] unrevoked per org (
    /// docs/reliability.md, "Strangers, quotas and pages": each token brings its own rate limit, and every replica keeps its
    /// fingerprint).
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
        let row = info.clone();
        let hash = hash_token(&secret);
        crate::tx::transaction(&mut conn, async move |conn| {
            // The org's row lock makes the count and the insert one step across replicas.
            crate::orgs::lock_org(conn, org_id).await?;
            let live: i64 = api_tokens::table
                .filter(api_tokens::org_id.eq(org_id))
                .filter(api_tokens::revoked_at.is_null())
                .count()
                .one(conn)
                .await?;
            if live >= MAX_TOKENS_PER_ORG {
                return Err(StoreError::Invalid(FieldError::new("Token limit reached")));
            }
            diesel::insert_into(api_tokens::table)
                .values((
                    api_tokens::id.eq(row.id),
                    api_tokens::org_id.eq(org_id),
                    api_tokens::name.eq(&row.name),
                    api_tokens::token_hash.eq(hash),
                    api_tokens::created_at.eq(row.created_at),
                ))
                .execute(conn)
                .await
                .map_err(crate::orgs::org_missing)?;
            Ok(())
        })
        .await?;
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
        // Live tokens only: a revoked one is refused by the database anyway, and keeping every
        // token ever made would grow each replica's filter (and each reload) without bound.
        let hashes: Vec<Vec<u8>> = api_tokens::table
            .filter(api_tokens::revoked_at.is_null())
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
        let mut one = self
            .admit_batch(vec![hash_token(token)], per_minute)
            .await?;
        Ok(one.pop().unwrap_or(Admission::Unauthorized))
    }

    /// Admits many requests at once, one per token hash in `hashes` (a hash may repeat: each
    /// occurrence is one request); answers in the same order. One statement, and one bucket
    /// update per distinct token, whatever the batch's size.
    pub async fn admit_batch(
        &self,
        hashes: Vec<Vec<u8>>,
        per_minute: u32,
    ) -> Result<Vec<Admission>, StoreError> {
        let capacity = f64::from(per_minute);
        let per_second = capacity / 60.0;
        let mut distinct: Vec<Vec<u8>> = Vec::new();
        let mut counts: Vec<i32> = Vec::new();
        for h in &hashes {
            match distinct.iter().position(|d| d == h) {
                Some(k) => counts[k] += 1,
                None => {
                    distinct.push(h.clone());
                    counts.push(1);
                }
            }
        }
        // The bucket is advisory state: it commits without waiting for the WAL flush, which
        // took most of a GET's time (see docs/performance.md).
        let mut conn = match &self.limiter_pool {
            Some(p) => p.get().await.map_err(StoreError::from_pool)?,
            None => self.conn().await?,
        };
        // Prepared (fixed text, `crate::prepared`): every API request waits on one of these,
        // and at a low request rate each request is its own batch, parsed and planned on every
        // call as `sql_query` (docs/performance.md).
        let rows: Vec<AdmitRow> =
            crate::prepared::prepared::<Array<Bytea>, _>(ADMIT_HEAD, ADMIT_TAIL, &distinct)
                .bind::<Array<Integer>, _>(&counts)
                .bind::<Double, _>(capacity)
                .bind::<Double, _>(per_second)
                .load(&mut conn)
                .await?;
        drop(conn);
        let mut seen = vec![0usize; distinct.len()];
        Ok(hashes
            .iter()
            .map(|h| {
                let Some(k) = distinct.iter().position(|d| d == h) else {
                    return Admission::Unauthorized;
                };
                let i = seen[k];
                seen[k] += 1;
                match rows.iter().find(|r| &r.token_hash == h) {
                    Some(row) => admission_of(row, i, per_second),
                    None => Admission::Unauthorized,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(level: f64, granted: i32) -> AdmitRow {
        AdmitRow {
            token_hash: vec![1],
            token_id: Uuid::nil(),
            org_id: Uuid::nil(),
            level,
            granted,
        }
    }

    #[test]
    fn the_first_granted_requests_of_a_batch_are_admitted_with_falling_remaining() {
        // 3.5 units, four requests: three admitted (2, 1, 0 left), the fourth refused.
        let r = row(3.5, 3);
        let got: Vec<Admission> = (0..4).map(|i| admission_of(&r, i, 2.0)).collect();
        let remaining: Vec<Option<u32>> = got
            .iter()
            .map(|a| match a {
                Admission::Allowed { remaining, .. } => Some(*remaining),
                _ => None,
            })
            .collect();
        assert_eq!(remaining, vec![Some(2), Some(1), Some(0), None]);
        // 0.5 unit left, refilling 2 per second: the next unit is a quarter second away,
        // and Retry-After is whole seconds, at least one.
        assert_eq!(
            got[3],
            Admission::Limited {
                org_id: Uuid::nil(),
                token_id: Uuid::nil(),
                retry_after_secs: 1
            }
        );
    }

    #[test]
    fn an_empty_bucket_refuses_with_the_wait_for_one_unit() {
        // 0.2 units, refilling 0.1 per second: 8 seconds to the next whole unit.
        assert_eq!(
            admission_of(&row(0.2, 0), 0, 0.1),
            Admission::Limited {
                org_id: Uuid::nil(),
                token_id: Uuid::nil(),
                retry_after_secs: 8
            }
        );
    }
}
