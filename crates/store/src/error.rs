//! Store errors, in the vocabulary the API maps to HTTP (one place, in `lead-api`).

use qualifier_domain::FieldError;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The thing does not exist in the caller's org; the message is the contract's.
    #[error("{0}")]
    NotFound(&'static str),
    /// POST/inbound/patch hit the (org, phone) uniqueness: the existing lead's id.
    #[error("Lead already exists")]
    LeadExists(Uuid),
    /// A state-machine or uniqueness rule refused the change (409).
    #[error("{0}")]
    Conflict(String),
    /// A field was invalid against the stored state (for example a merged profile too large).
    #[error("{0}")]
    Invalid(FieldError),
    /// The database could not be reached: 503 with Retry-After.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database error: {0}")]
    Db(diesel::result::Error),
}

impl StoreError {
    pub fn from_pool(e: diesel_async::pooled_connection::deadpool::PoolError) -> Self {
        StoreError::Unavailable(e.to_string())
    }

    pub fn is_unique_violation(e: &diesel::result::Error, constraint: &str) -> bool {
        use diesel::result::{DatabaseErrorKind, Error};
        matches!(e, Error::DatabaseError(DatabaseErrorKind::UniqueViolation, info)
            if info.constraint_name() == Some(constraint))
    }
}

impl From<diesel::result::Error> for StoreError {
    fn from(e: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error};
        match e {
            Error::NotFound => StoreError::NotFound("Not found"),
            // diesel-async reports errors without an SQLSTATE (socket closed, server gone) as
            // UnableToSendCommand: the database is unreachable, not the request wrong.
            Error::DatabaseError(
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
                info,
            ) => StoreError::Unavailable(info.message().to_owned()),
            Error::BrokenTransactionManager => StoreError::Unavailable("broken transaction".into()),
            other => StoreError::Db(other),
        }
    }
}
