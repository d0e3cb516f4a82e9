//! The names of an endpoint: [`EndpointRef`], which of an org's endpoints a call asks for (its
//! primary, or one by id, found only among the org's own), and [`EndpointKey`], one endpoint
//! found (its org and its own id: the key of its health, its throttle and its deliveries). Apart
//! from the endpoints' table (`crate::webhooks`) so that what keys by an endpoint (health,
//! pacing, the deliveries' statements) names it without depending on the settings' home.

use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
use uuid::Uuid;

use crate::StoreError;
use crate::answer::ReadToEnd;
use crate::schema::webhooks;

/// Which of an org's endpoints a call acts on: its primary (`id` `None`: the oldest, what the
/// `webhook` routes act on), or the one of that id, found only among the org's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointRef {
    pub org_id: Uuid,
    pub id: Option<Uuid>,
}

impl EndpointRef {
    pub fn primary(org_id: Uuid) -> Self {
        EndpointRef { org_id, id: None }
    }

    pub fn id(org_id: Uuid, id: Uuid) -> Self {
        EndpointRef {
            org_id,
            id: Some(id),
        }
    }

    /// The answer when there is no such endpoint, in the words of the route that asked.
    pub fn missing(&self) -> StoreError {
        match self.id {
            None => StoreError::NotFound("Webhook not configured"),
            Some(_) => StoreError::NotFound("Endpoint not found"),
        }
    }
}

/// An org's id names its primary endpoint.
impl From<Uuid> for EndpointRef {
    fn from(org_id: Uuid) -> Self {
        EndpointRef::primary(org_id)
    }
}

/// One endpoint, found: its org and its own id (the key of its health, its throttle and its
/// deliveries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointKey {
    pub org_id: Uuid,
    pub endpoint_id: Uuid,
}

impl From<EndpointKey> for EndpointRef {
    fn from(k: EndpointKey) -> Self {
        EndpointRef::id(k.org_id, k.endpoint_id)
    }
}

/// The id of `at`: the org's endpoint of that id, or its oldest (`None`: there is none).
pub(crate) async fn resolve(
    conn: &mut diesel_async::AsyncPgConnection,
    at: EndpointRef,
) -> Result<Option<Uuid>, diesel::result::Error> {
    let q = webhooks::table
        .filter(webhooks::org_id.eq(at.org_id))
        .select(webhooks::id);
    match at.id {
        Some(id) => q
            .filter(webhooks::id.eq(id))
            .first_row(conn)
            .await
            .optional(),
        None => q
            .order((webhooks::created_at, webhooks::id))
            .first_row(conn)
            .await
            .optional(),
    }
}
