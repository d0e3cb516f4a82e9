//! Which endpoint a settings page or action is about ([`Place`]): plain data the pages and the
//! handlers share, read from the request's path by `super::extract`.

/// The endpoint a settings page or action is about, from its path: the org's first endpoint
/// (`/console`, `/console/webhook…`, the v1.0 `webhook`) or one of the org's endpoints by id
/// (`/console/endpoints/{id}…`). One set of handlers serves both. The id is
/// only ever looked up inside the session's org ([`Place::at`]): another org's id is
/// "Endpoint not found", as in the API.
#[derive(Clone, Copy)]
pub struct Place {
    pub id: Option<uuid::Uuid>,
}

impl Place {
    pub const ENDPOINT_NOT_FOUND: &'static str = "Endpoint not found";

    pub fn at(&self, org_id: uuid::Uuid) -> qualifier_store::endpoints::EndpointRef {
        use qualifier_store::endpoints::EndpointRef;
        match self.id {
            None => EndpointRef::primary(org_id),
            Some(id) => EndpointRef::id(org_id, id),
        }
    }

    /// The page's address.
    pub fn page(&self) -> String {
        match self.id {
            None => "/console".to_owned(),
            Some(id) => format!("/console/endpoints/{id}"),
        }
    }

    /// Where its forms post (`{actions}`, `{actions}/rotate`, …).
    pub fn actions(&self) -> String {
        match self.id {
            None => "/console/webhook".to_owned(),
            Some(id) => format!("/console/endpoints/{id}"),
        }
    }
}
