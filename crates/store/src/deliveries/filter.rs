//! Which deliveries a list, a count or a bulk replay is about ([`DeliveryFilter`]), and the
//! statements and conditions it becomes.

use diesel::sql_types::Array;
use time::OffsetDateTime;
use uuid::Uuid;

use super::EVENT_WITH_DELIVERY;
use qualifier_domain::delivery::DeliveryState;
use qualifier_domain::{DeliveryStatus, EventType};

/// Which deliveries a list or a bulk replay is about; empty lists mean "any".
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// The endpoint whose deliveries (`None`: the org's primary's, as before several
    /// endpoints; a list is one endpoint's, so that its pages are one row per event).
    pub endpoint_id: Option<Uuid>,
    pub statuses: Vec<DeliveryStatus>,
    pub event_types: Vec<EventType>,
    pub lead_id: Option<Uuid>,
    pub since: Option<OffsetDateTime>,
    pub until: Option<OffsetDateTime>,
}

impl DeliveryFilter {
    /// The org's deliveries that match and whose event was not erased (an empty list of types
    /// matches any; a replay always asks for statuses), for a bulk replay and its dry run:
    /// each delivery's state read from its own row, as the lists read it. `what` is the
    /// statement's select list over the delivery `d` (its `seq` and `created_at`, or a count).
    ///
    /// Each filter reaches its rows through an index (docs/performance.md, "History at
    /// scale"), the same two walks as a page of the list:
    /// - statuses that are few among an org's deliveries and no lead
    ///   ([`Self::walks_states`]): the deliveries' own index by state,
    ///   `deliveries_org_state`, one range per state, counted from the index alone but for
    ///   what only the event knows: its type when one is asked for, and its erasure for a
    ///   `skipped` delivery (an erased event's delivery is always `skipped` or `succeeded`:
    ///   its erasure ends it so, and `outbox_stays_erased` keeps it so);
    /// - otherwise the events' indexes (`outbox_org_lead` with a lead, `outbox_org_type`
    ///   with types, `outbox_org_seq`), each event's delivery found by its key.
    ///
    /// A time bound is a range of sequence numbers beside the exact condition, so neither a
    /// replay that ends a month ago nor a count over a day walks the rest of the org's history.
    pub(super) fn selection(&self, what: &str) -> (String, SelectionBinds) {
        let binds = SelectionBinds {
            retrying: StatusIs::new(&self.statuses).retrying,
            since: self.since,
            until: self.until,
            types: self
                .event_types
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect(),
            lead: self.lead_id,
            endpoint: self.endpoint_id,
        };
        // $1 org, $2 the `retrying` of the states before the end, $3 since, $4 until, $5 types
        // (empty: any), $6 lead (NULL: any), $7 the endpoint (resolved by the caller:
        // `listed_endpoint`).
        let of_state = state_asked(&states_literal(&self.states()), "$2");
        let sql = if self.walks_states() {
            format!(
                "SELECT {what} FROM deliveries d
                 WHERE d.org_id = $1 AND {of_state} AND d.endpoint_id = $7
                   AND ($3::timestamptz IS NULL OR (d.created_at >= $3 AND d.seq >= {since}))
                   AND ($4::timestamptz IS NULL OR (d.created_at < $4 AND d.seq < {until}))
                   AND $6::uuid IS NULL
                   AND ((d.state <> 'skipped' AND cardinality($5::text[]) = 0)
                        OR EXISTS (SELECT 1 FROM outbox o
                                   WHERE o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)
                                     AND o.erased_at IS NULL
                                     AND (cardinality($5::text[]) = 0
                                          OR o.event_type = ANY($5::text[]))))",
                since = seq_at("$3", true),
                until = seq_at("$4", false),
            )
        } else {
            format!(
                "SELECT {what} FROM {EVENT_WITH_DELIVERY}
                 WHERE o.org_id = $1 AND o.erased_at IS NULL AND {of_state}
                   AND d.endpoint_id = $7
                   AND ($3::timestamptz IS NULL OR (o.created_at >= $3 AND o.seq >= {since}))
                   AND ($4::timestamptz IS NULL
                        OR (o.created_at < $4 AND o.seq < {until}
                            AND (o.seq >> 32) <= floor(extract(epoch FROM $4) / 86400)::int8 + 1))
                   AND ($6::uuid IS NULL OR o.lead_id = $6)
                   AND (cardinality($5::text[]) = 0 OR o.event_type = ANY($5::text[]))",
                since = seq_at("$3", true),
                until = seq_at("$4", false),
            )
        };
        (sql, binds)
    }

    /// A list asked for states that are few among an org's deliveries (no `succeeded`) and for
    /// no lead: its page walks the deliveries' index by state ([`Deliveries::list_deliveries_at`]).
    pub(super) fn walks_states(&self) -> bool {
        !self.statuses.is_empty()
            && !self.statuses.contains(&DeliveryStatus::Succeeded)
            && self.lead_id.is_none()
    }

    /// The states the statuses asked for ([`Self::states`]) and the `retrying` asked of those
    /// before the end, as the parameters of [`state_asked`].
    pub(super) fn states_asked(&self) -> (Vec<String>, Vec<bool>) {
        let states = self
            .states()
            .iter()
            .map(|(s, _)| s.as_str().to_owned())
            .collect();
        (states, StatusIs::new(&self.statuses).retrying)
    }

    /// The delivery states the statuses asked for are, each with the `retrying` it must have
    /// (`None`: either): an ended status is its state; `pending` and `failed` are every state
    /// before the end, not retrying or retrying ([`DeliveryState::status`]).
    pub(super) fn states(&self) -> Vec<(DeliveryState, Option<bool>)> {
        let pending = self.statuses.contains(&DeliveryStatus::Pending);
        let failed = self.statuses.contains(&DeliveryStatus::Failed);
        let mut states: Vec<(DeliveryState, Option<bool>)> = DeliveryState::all()
            .iter()
            .filter(|s| !s.is_final() && (pending || failed))
            .map(|s| (*s, (pending != failed).then_some(failed)))
            .collect();
        states.extend(
            DeliveryState::all()
                .iter()
                .filter(|s| s.is_final() && self.statuses.contains(&s.status(false)))
                .map(|s| (*s, None)),
        );
        states
    }
}

/// The filters of a [`DeliveryFilter`] on its events (types, lead, time bounds) applied to `q`,
/// any boxed query that reads `outbox`: the events' own, or joined to their deliveries.
macro_rules! events_narrowed {
    ($f:expr, $q:expr) => {{
        let f: &DeliveryFilter = $f;
        let mut q = $q;
        match f.event_types.as_slice() {
            [] => {}
            [one] => q = q.filter(outbox::event_type.eq(*one)),
            many => q = q.filter(outbox::event_type.eq_any(many.to_vec())),
        }
        if let Some(l) = f.lead_id {
            q = q.filter(outbox::lead_id.eq(l));
        }
        // Each time bound as a range of sequence numbers, with the exact condition beside it
        // (`SeqBound`).
        if let Some(t) = f.since {
            q = q
                .filter(SeqBound { at: t, since: true })
                .filter(outbox::created_at.ge(t));
        }
        if let Some(t) = f.until {
            q = q
                .filter(SeqBound {
                    at: t,
                    since: false,
                })
                .filter(outbox::created_at.lt(t))
                .filter(UpToDay { day: until_day(t) });
        }
        q
    }};
}
pub(super) use events_narrowed;

/// Deliveries whose status is one of these, on their own rows (`deliveries`): an ended state
/// asked for, or before the end with the `retrying` a `pending` or `failed` asks for. Fixed
/// text, so a page with it is prepared once per connection.
#[derive(Debug, Clone, diesel::query_builder::QueryId)]
pub(super) struct StatusIs {
    ended: Vec<String>,
    retrying: Vec<bool>,
}

impl StatusIs {
    pub(super) fn new(statuses: &[DeliveryStatus]) -> StatusIs {
        StatusIs {
            ended: statuses
                .iter()
                .filter(|s| s.is_final())
                .map(|s| s.as_str().to_owned())
                .collect(),
            retrying: [
                (DeliveryStatus::Pending, false),
                (DeliveryStatus::Failed, true),
            ]
            .iter()
            .filter(|(s, _)| statuses.contains(s))
            .map(|(_, r)| *r)
            .collect(),
        }
    }
}

crate::partitions::boolean_filter!(StatusIs);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for StatusIs {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        use diesel::sql_types::{Array, Bool, Text};
        out.push_sql("(deliveries.state::text = ANY(");
        out.push_bind_param::<Array<Text>, _>(&self.ended)?;
        out.push_sql(concat!(
            ") OR (deliveries.state NOT IN ",
            crate::deliveries::state::ended!(),
            " AND deliveries.retrying = ANY("
        ));
        out.push_bind_param::<Array<Bool>, _>(&self.retrying)?;
        out.push_sql(")))");
        Ok(())
    }
}

/// The delivery row `d` is in one of the states `states` (a `delivery_state[]` expression),
/// with one of the `retrying` values `retrying` (a `bool[]` parameter) if it has not ended: the
/// condition of [`DeliveryFilter::states_asked`], for a statement written whole.
pub(super) fn state_asked(states: &str, retrying: &str) -> String {
    format!(
        "d.state = ANY({states})
         AND (d.state IN {} OR d.retrying = ANY({retrying}::bool[]))",
        crate::deliveries::state::ended!()
    )
}

/// `states` as a constant of the statement's text (`'{dead,failed}'::delivery_state[]`), for
/// a count or a selection that walks `deliveries_org_state`. That index leaves the succeeded
/// deliveries out, and PostgreSQL uses a partial index only where the statement proves its
/// condition while it is planned: a constant array proves `state <> 'succeeded'`, a parameter
/// cast from `text[]` does not (the cast is evaluated only when the statement runs). Given the
/// parameter, a dry run's count walked the primary key over its time range instead, every
/// org's deliveries (4,598 rows read for 90 counted, on the bench's history of 2.5 million),
/// and its cost estimate passed `jit_above_cost`. The names are the enum's own, never input.
pub(super) fn states_literal(states: &[(DeliveryState, Option<bool>)]) -> String {
    let names: Vec<&str> = states.iter().map(|(s, _)| s.as_str()).collect();
    format!("'{{{}}}'::delivery_state[]", names.join(","))
}

/// [`SeqBound`]'s sequence number for the time parameter `param` (`$n`), a lower bound
/// (`since`) or an upper one, for a statement written whole.
pub(super) fn seq_at(param: &str, since: bool) -> String {
    let (before, after) = crate::partitions::seq_bound_text(since);
    format!("{before}{param}{after}")
}

/// The values of a [`DeliveryFilter::selection`]'s parameters after the org's.
pub(super) struct SelectionBinds {
    retrying: Vec<bool>,
    since: Option<OffsetDateTime>,
    until: Option<OffsetDateTime>,
    types: Vec<String>,
    lead: Option<Uuid>,
    endpoint: Option<Uuid>,
}

impl SelectionBinds {
    /// `sql`, a [`DeliveryFilter::selection`], with its parameters bound.
    pub(super) fn bound(
        self,
        sql: String,
        org_id: Uuid,
    ) -> diesel::query_builder::BoxedSqlQuery<
        'static,
        diesel::pg::Pg,
        diesel::query_builder::SqlQuery,
    > {
        use diesel::sql_types::{Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
        diesel::sql_query(sql)
            .into_boxed()
            .bind::<SqlUuid, _>(org_id)
            .bind::<Array<Bool>, _>(self.retrying)
            .bind::<Nullable<Timestamptz>, _>(self.since)
            .bind::<Nullable<Timestamptz>, _>(self.until)
            .bind::<Array<Text>, _>(self.types)
            .bind::<Nullable<SqlUuid>, _>(self.lead)
            .bind::<SqlUuid, _>(self.endpoint.unwrap_or(org_id))
    }
}
