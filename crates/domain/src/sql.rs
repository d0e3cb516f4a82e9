//! The domain's enums as PostgreSQL `text` columns (feature `diesel`, enabled by the store).
//!
//! Each is written as its documented name and read back through the same name table, so a stored
//! value that does not parse is a deserialization error naming the type, never a silent default.
//! The columns also carry CHECK constraints, so such a value can only come from outside the
//! service (a manual edit, a newer version's row).

use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Text;
use std::io::Write;

use crate::{DeliveryStatus, EventType, HandoffState, Stage};

macro_rules! text_column {
    ($($t:ty),+) => {$(
        impl FromSql<Text, Pg> for $t {
            fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
                let raw = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
                raw.parse::<$t>().map_err(|_| {
                    format!("stored {} {raw:?} is not a known value", stringify!($t)).into()
                })
            }
        }

        impl ToSql<Text, Pg> for $t {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
                out.write_all(self.as_str().as_bytes())?;
                Ok(IsNull::No)
            }
        }
    )+};
}

text_column!(
    Stage,
    HandoffState,
    EventType,
    DeliveryStatus,
    crate::delivery::DeliveryState,
    crate::health::EndpointState,
    crate::pace::DeliveryOrdering,
    crate::pace::WaitingFor
);

/// The PostgreSQL enum `delivery_state`: a delivery row's state.
#[derive(diesel::query_builder::QueryId, diesel::sql_types::SqlType)]
#[diesel(postgres_type(name = "delivery_state"))]
pub struct DeliveryStateSql;

// An enum's value travels as its label, in text and binary alike, so it reads and writes as
// the name does.
impl FromSql<DeliveryStateSql, Pg> for crate::delivery::DeliveryState {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        <Self as FromSql<Text, Pg>>::from_sql(bytes)
    }
}

impl ToSql<DeliveryStateSql, Pg> for crate::delivery::DeliveryState {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(self.as_str().as_bytes())?;
        Ok(IsNull::No)
    }
}
