//! Organisations.

use diesel::{Queryable, Selectable};
use diesel_async::RunQueryDsl;
use qualifier_domain::timefmt::now_millis;
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::orgs;
use crate::{Store, StoreError};

#[derive(Debug, Clone, Queryable, Selectable, diesel::Insertable, Serialize)]
#[diesel(table_name = orgs)]
pub struct Org {
    pub id: Uuid,
    pub name: String,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub created_at: OffsetDateTime,
}

impl Store {
    pub async fn create_org(&self, name: &str) -> Result<Org, StoreError> {
        let org = Org {
            id: Uuid::now_v7(),
            name: name.to_owned(),
            created_at: now_millis(),
        };
        let mut conn = self.conn().await?;
        diesel::insert_into(orgs::table)
            .values(&org)
            .execute(&mut conn)
            .await?;
        Ok(org)
    }
}

/// Foreign-key violations on an `org_id` column mean the org does not exist.
pub(crate) fn org_missing(e: diesel::result::Error) -> StoreError {
    use diesel::result::{DatabaseErrorKind, Error};
    match e {
        Error::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) => {
            StoreError::NotFound("Org not found")
        }
        other => other.into(),
    }
}

/// Locks the org's row for the caller's transaction (`FOR NO KEY UPDATE`: the rows that
/// reference the org, leads and events, are still written beside it): what is decided about
/// the org's endpoints (how many, which is the oldest) holds until the commit. `Org not found`
/// without it.
/// Whether the org's first endpoint, the one its id named, has been deleted: the org's id
/// then names no endpoint again (an endpoint's id is never reused). Read under the org's lock.
pub(crate) async fn first_endpoint_gone(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
) -> Result<bool, StoreError> {
    use crate::answer::ReadToEnd;
    use diesel::{ExpressionMethods, QueryDsl};
    Ok(orgs::table
        .filter(orgs::id.eq(org_id))
        .select(orgs::first_endpoint_gone)
        .first_row::<bool>(conn)
        .await?)
}

/// Records that the endpoint the org's id named is deleted ([`first_endpoint_gone`]).
pub(crate) async fn first_endpoint_deleted(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
) -> Result<(), StoreError> {
    use diesel::{ExpressionMethods, QueryDsl};
    diesel::update(orgs::table.filter(orgs::id.eq(org_id)))
        .set(orgs::first_endpoint_gone.eq(true))
        .execute(conn)
        .await?;
    Ok(())
}

pub(crate) async fn lock_org(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
) -> Result<(), StoreError> {
    use crate::answer::ReadToEnd;
    use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
    crate::schema::orgs::table
        .filter(crate::schema::orgs::id.eq(org_id))
        .select(crate::schema::orgs::id)
        .for_no_key_update()
        .first_row::<Uuid>(conn)
        .await
        .optional()?
        .map(|_| ())
        .ok_or(StoreError::NotFound("Org not found"))
}
