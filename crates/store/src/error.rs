//! Store errors, in the vocabulary the API maps to HTTP (one place, in `lead-api`). Every variant
//! that stands for a failure keeps its cause as `source()`, so the log line of an opaque 500 or
//! 503 shows the whole chain down to PostgreSQL's own message.

use qualifier_domain::FieldError;
use uuid::Uuid;

/// A cause of any type, kept for the log.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The thing does not exist in the caller's org; the message is the one docs/api.md lists.
    #[error("{0}")]
    NotFound(&'static str),
    /// POST/inbound/patch hit the (org, phone) uniqueness: the existing lead's id.
    #[error("Lead already exists")]
    LeadExists(Uuid),
    /// A state-machine or uniqueness rule refused the change (409).
    #[error("{0}")]
    Conflict(String),
    /// A conditional write found the lead at another revision than it expected (412); the
    /// lead's current revision, for the response's `ETag`.
    #[error("Lead has changed")]
    Changed { revision: i64 },
    /// A per-org quota of actions is used up for now (docs/reliability.md, "Strangers, quotas and pages"): 429.
    #[error("Rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    /// A field was invalid against the stored state (for example a merged profile too large).
    #[error("{0}")]
    Invalid(FieldError),
    /// A limit of what an org may hold is reached (422, the message the API gives).
    #[error("{0}")]
    LimitReached(&'static str),
    /// The database could not be reached: 503 with Retry-After.
    #[error("database unavailable")]
    Unavailable(#[source] BoxError),
    #[error("database error")]
    Db(#[source] diesel::result::Error),
    /// A stored value no longer parses as its domain type (a manual edit, a row from elsewhere):
    /// refused loudly rather than shown as something it is not.
    #[error("stored {what} does not parse")]
    Corrupt {
        what: &'static str,
        #[source]
        source: FieldError,
    },
    /// The relay's publish step failed; the batch stays in the outbox.
    #[error("publishing the outbox batch failed")]
    Publish(#[source] BoxError),
    /// A stored envelope is in a form this version cannot read (`crate::payload`).
    #[error(transparent)]
    Payload(#[from] crate::payload::PayloadError),
}

impl StoreError {
    pub fn from_pool(e: diesel_async::pooled_connection::deadpool::PoolError) -> Self {
        StoreError::Unavailable(Box::new(e))
    }

    pub fn is_unique_violation(e: &diesel::result::Error, constraint: &str) -> bool {
        use diesel::result::{DatabaseErrorKind, Error};
        matches!(e, Error::DatabaseError(DatabaseErrorKind::UniqueViolation, info)
            if info.constraint_name() == Some(constraint))
    }

    /// `Err(Corrupt)` naming `what` when a stored value fails its parser.
    pub(crate) fn stored<T>(what: &'static str, r: Result<T, FieldError>) -> Result<T, StoreError> {
        r.map_err(|source| StoreError::Corrupt { what, source })
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
                _,
            )
            | Error::BrokenTransactionManager => StoreError::Unavailable(Box::new(e)),
            // `statement_timeout` (lead-api's pools) or `lock_timeout`: the database cannot
            // answer now; the request may be tried again, as for an unreachable one.
            Error::DatabaseError(_, ref info) if timed_out(info.message()) => {
                StoreError::Unavailable(Box::new(e))
            }
            // A statement PostgreSQL could not even read (an unknown column, a syntax error: it
            // names the place in the text) is the code's fault: an opaque 500.
            Error::DatabaseError(DatabaseErrorKind::Unknown, ref info)
                if info.statement_position().is_some() =>
            {
                StoreError::Db(e)
            }
            // A failure the request did not cause: a serialization failure, a standby that took
            // the write (a failover under way). Nothing was changed and the same request may be
            // sent again, so it is 503 with Retry-After, never a success and never a 500 that
            // reads as "do not retry" (docs/reliability.md, "A 2xx is a commit"). A failed
            // `COMMIT` is one too, whatever it says (`crate::tx`).
            Error::DatabaseError(
                DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::ReadOnlyTransaction,
                _,
            ) => StoreError::Unavailable(Box::new(e)),
            // Errors of no kind diesel names, told apart by their words (diesel-async keeps no
            // SQLSTATE): what a retry cannot cure (a data exception, a cancel asked for, one of
            // the schema's own refusals: `cannot_succeed`) is the code's fault or the data's, a
            // 500 without detail; the rest is what the request did not cause (a deadlock, the
            // server going away or not ready, a constraint trigger refusing at a statement's own
            // commit), a 503.
            Error::DatabaseError(DatabaseErrorKind::Unknown, ref info)
                if !cannot_succeed(info.message()) =>
            {
                StoreError::Unavailable(Box::new(e))
            }
            // What is left cannot succeed on a retry either: the statement's own violations (the
            // store turns the ones a request can cause into their answers). `lead-api`'s error
            // answer logs the cause.
            other => StoreError::Db(other),
        }
    }
}

/// Whether PostgreSQL's message is that of a statement cancelled by `statement_timeout` or
/// `lock_timeout` (SQLSTATE 57014 or 55P03, which diesel-async does not hand on), in whatever
/// language the server speaks (`crate::pg_messages`).
pub(crate) fn timed_out(message: &str) -> bool {
    use crate::pg_messages::{LOCK_TIMEOUT, STATEMENT_TIMEOUT};
    STATEMENT_TIMEOUT.contains(&message) || LOCK_TIMEOUT.contains(&message)
}

/// The schema's own refusals (a trigger's `RAISE`): a write the code should never make.
const OWN_REFUSALS: &[&str] = &["a change of lead "];

/// Whether PostgreSQL's message is that of an error a retry cannot cure: a data exception, a
/// statement cancelled on purpose (`crate::pg_messages::CANNOT_SUCCEED`, known by the words
/// before their first placeholder, or after their last for one that starts with it), or one of
/// the schema's own refusals.
pub(crate) fn cannot_succeed(message: &str) -> bool {
    crate::pg_messages::CANNOT_SUCCEED
        .iter()
        .any(|p| message.starts_with(p) || (p.starts_with(' ') && message.ends_with(p)))
        || OWN_REFUSALS.iter().any(|p| message.starts_with(p))
}

/// The cause chain of an error as one line (`outer: inner: innermost`), for logs.
pub fn cause_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let text = s.to_string();
        // Some wrappers repeat their source's text in their own; print it once.
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_error(kind: diesel::result::DatabaseErrorKind, message: &str) -> diesel::result::Error {
        diesel::result::Error::DatabaseError(kind, Box::new(message.to_owned()))
    }

    #[test]
    fn what_the_request_did_not_cause_is_unavailable_and_its_own_violations_are_not() {
        use diesel::result::DatabaseErrorKind as K;
        let timeouts = crate::pg_messages::STATEMENT_TIMEOUT
            .iter()
            .chain(crate::pg_messages::LOCK_TIMEOUT)
            .map(|m| (K::Unknown, *m));
        let not_caused = [
            // What a deferred constraint trigger raises at a statement's own commit.
            (K::Unknown, "refused at commit"),
            (K::Unknown, "deadlock detected"),
            (
                K::Unknown,
                "terminating connection due to administrator command",
            ),
            (K::Unknown, "the database system is starting up"),
            (
                K::Unknown,
                "canceling statement due to conflict with recovery",
            ),
            (K::SerializationFailure, "could not serialize access"),
            (
                K::ReadOnlyTransaction,
                "cannot execute UPDATE in a read-only transaction",
            ),
            (K::ClosedConnection, ""),
            (K::UnableToSendCommand, "connection closed"),
        ];
        for (kind, message) in timeouts.chain(not_caused) {
            assert!(
                matches!(
                    StoreError::from(db_error(kind, message)),
                    StoreError::Unavailable(_)
                ),
                "{message}"
            );
        }
        struct Placed;
        impl diesel::result::DatabaseErrorInformation for Placed {
            fn message(&self) -> &str {
                "column l.channel does not exist"
            }
            fn details(&self) -> Option<&str> {
                None
            }
            fn hint(&self) -> Option<&str> {
                None
            }
            fn table_name(&self) -> Option<&str> {
                None
            }
            fn column_name(&self) -> Option<&str> {
                None
            }
            fn constraint_name(&self) -> Option<&str> {
                None
            }
            fn statement_position(&self) -> Option<i32> {
                Some(12)
            }
        }
        assert!(matches!(
            StoreError::from(diesel::result::Error::DatabaseError(
                K::Unknown,
                Box::new(Placed)
            )),
            StoreError::Db(_)
        ));
        for kind in [
            K::UniqueViolation,
            K::ForeignKeyViolation,
            K::CheckViolation,
            K::NotNullViolation,
        ] {
            assert!(
                matches!(StoreError::from(db_error(kind, "x")), StoreError::Db(_)),
                "{kind:?}"
            );
        }
        // What a retry cannot cure, though diesel names no kind for it and PostgreSQL gives
        // no place in the statement: a data exception, a trigger's refusal, a cancel.
        for message in [
            "invalid input syntax for type uuid: \"x\"",
            "value too long for type character varying(10)",
            "smallint out of range",
            "ungültige Eingabesyntax für Typ uuid: »x«",
            "a change of lead 7 must raise its revision (it is 3, the change wrote 3)",
            "canceling statement due to user request",
        ] {
            assert!(
                matches!(
                    StoreError::from(db_error(K::Unknown, message)),
                    StoreError::Db(_)
                ),
                "{message}"
            );
        }
        assert!(matches!(
            StoreError::from(diesel::result::Error::NotFound),
            StoreError::NotFound(_)
        ));
    }

    #[test]
    fn the_chain_names_every_cause_once() {
        let e = StoreError::Corrupt {
            what: "lead phone",
            source: FieldError::new("phone must be + followed by 7 to 15 digits"),
        };
        assert_eq!(
            cause_chain(&e),
            "stored lead phone does not parse: phone must be + followed by 7 to 15 digits"
        );
    }
}
