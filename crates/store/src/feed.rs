//! The events feed (`GET /api/v1/events`): an org's events in feed order, a page at a time
//! within a byte budget, from the two places positions are kept (the outbox's `feed_pos` and
//! `event_feed`).

use crate::answer::ReadToEnd;
use diesel::QueryDsl;
use diesel::sql_types::Int8;
use diesel_async::{AsyncConnection, RunQueryDsl};
use qualifier_domain::EventType;
use uuid::Uuid;

use crate::StoreError;
use crate::schema::feed_head;

/// A feed page ([`Leads::events_feed`]): the parameters, then the page's rows with a running
/// sum of their sizes, and those within the byte budget (the first always).
const FEED_HEAD: &str = "SELECT w.feed_pos, w.payload FROM (VALUES (";
/// The rest of a feed page's statement, `$outbox` and `$feed` added to the conditions of the
/// two places positions are kept: the outbox's `feed_pos` (every position given before the
/// outbox retired) and `event_feed` (those given after). Each is
/// walked through its own index in position order up to a page, and the two merged: a
/// position is in one of them only.
macro_rules! feed_tail {
    ($outbox:literal, $feed:literal) => {
        concat!(
            ")) AS p(org_id, after, lim, budget, ty)
     CROSS JOIN LATERAL (
         SELECT x.feed_pos, x.payload,
                sum(envelope_bytes(x.payload) + 1) OVER (ORDER BY x.feed_pos) AS upto,
                row_number() OVER (ORDER BY x.feed_pos) AS n
         FROM (SELECT y.feed_pos, y.payload
               FROM ((SELECT o.feed_pos, o.payload FROM outbox o
                      WHERE o.org_id = p.org_id AND o.feed_pos > p.after",
            $outbox,
            "
                      ORDER BY o.feed_pos LIMIT p.lim)
                     UNION ALL
                     (SELECT f.pos, o.payload FROM event_feed f
                      JOIN outbox o ON o.seq = f.seq AND (o.seq >> 32) = (f.seq >> 32)
                      WHERE f.org_id = p.org_id AND f.pos > p.after",
            $feed,
            "
                      ORDER BY f.pos LIMIT p.lim)) y
               ORDER BY y.feed_pos LIMIT p.lim) x) w
     WHERE w.n = 1 OR w.upto <= p.budget
     ORDER BY w.feed_pos"
        )
    };
}
const FEED_TAIL: &str = feed_tail!("", "");
/// [`FEED_TAIL`] for one event type.
const FEED_TYPE_TAIL: &str = feed_tail!(" AND o.event_type = p.ty", " AND f.event_type = p.ty");

/// One page of the events feed: the envelopes exactly as delivered, and the position of the last.
#[derive(Debug, Clone)]
pub struct FeedPage {
    pub payloads: Vec<Vec<u8>>,
    /// Each payload's feed position (where a page cut short continues).
    pub positions: Vec<i64>,
    /// The last event's position, or the `after` asked for when the page is empty.
    pub last: i64,
}

/// Why a feed page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The cursor is older than what retention keeps: events after it may be gone.
    #[error("cursor expired")]
    Expired,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// For [`Leads::events_feed`]'s transaction, which diesel begins and ends itself.
impl From<diesel::result::Error> for FeedError {
    fn from(e: diesel::result::Error) -> Self {
        FeedError::Store(e.into())
    }
}

impl crate::facets::Leads<'_> {
    /// The org's events after position `after` (from the oldest kept when `None`), in feed
    /// order (the `outbox_feed` and `event_feed_org` indexes, or their `_type` pairs with a type),
    /// at most `limit`.
    /// `budget`: the most payload bytes (plus one separator each) the page may hold; the rows
    /// past it are not read out at all (the first is always sent, so a walk moves on).
    pub async fn events_feed(
        &self,
        org_id: Uuid,
        after: Option<i64>,
        event_type: Option<EventType>,
        limit: i64,
        budget: usize,
    ) -> Result<FeedPage, FeedError> {
        let mut conn = self.conn().await?;
        let tail = match event_type {
            None => FEED_TAIL,
            Some(_) => FEED_TYPE_TAIL,
        };
        let rows: Vec<FeedRow> = conn
            .transaction::<_, FeedError, _>(async move |conn| {
                // Every org's page has the same best plan, whatever it holds: a walk of the
                // feed indexes in their order, the page's entries and one of each older
                // partition. It keeps that plan rather than making it again on each call, and
                // never sorts: while today's partition is small, reading all of it and sorting
                // looks cheaper than the walk, and then reads the whole day for every page.
                crate::planner::in_index_order(conn, true).await?;
                let (expired_through,): (i64,) = feed_head::table
                    .select((feed_head::expired_through,))
                    .first_row(conn)
                    .await?;
                // A client that starts without a cursor gets what is kept; one that resumes
                // from a position retention has passed may have missed events, and must be
                // told.
                if after.is_some_and(|a| a < expired_through) {
                    return Err(FeedError::Expired);
                }
                // The page's rows through the indexes (`outbox_feed` and `event_feed_org`, or
                // the `_type` ones with a type), then only those within the byte budget read
                // out: a payload's
                // size comes from its stored length, so the ones past the budget are never
                // fetched whole. Fixed text, so each form is prepared once per connection.
                Ok(
                    crate::prepared::prepared::<diesel::sql_types::Uuid, _>(
                        FEED_HEAD, tail, org_id,
                    )
                    .bind::<Int8, _>(after.unwrap_or(0))
                    .bind::<Int8, _>(limit)
                    .bind::<Int8, _>(i64::try_from(budget).unwrap_or(i64::MAX))
                    .bind::<diesel::sql_types::Text, _>(event_type.map_or("", |t| t.as_str()))
                    .load(conn)
                    .await?,
                )
            })
            .await?;
        let after = after.unwrap_or(0);
        let last = rows.last().map_or(after, |r| r.feed_pos);
        let positions = rows.iter().map(|r| r.feed_pos).collect();
        // A compressed envelope's stored length is about a third of its own, so the budget
        // above may let through more than fits: the caller cuts the page to its byte limit
        // on the envelopes themselves (`lead-api`'s `page::fitting`).
        let payloads = rows
            .into_iter()
            .map(|r| crate::payload::unpack_owned(r.payload))
            .collect::<Result<_, _>>()
            .map_err(StoreError::from)?;
        Ok(FeedPage {
            positions,
            payloads,
            last,
        })
    }

    /// The last feed position and outbox sequence that existed before cursors were sealed: an
    /// unsealed cursor past them is refused (the migrations recorded them).
    pub async fn legacy_cursor_limits(&self) -> Result<(i64, i64), StoreError> {
        let mut conn = self.conn().await?;
        let (pos, seq): (Option<i64>, Option<i64>) = feed_head::table
            .select((feed_head::legacy_pos_limit, feed_head::legacy_seq_limit))
            .first_row(&mut conn)
            .await?;
        Ok((pos.unwrap_or(0), seq.unwrap_or(0)))
    }
}

#[derive(diesel::QueryableByName)]
struct FeedRow {
    #[diesel(sql_type = Int8)]
    feed_pos: i64,
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    payload: Vec<u8>,
}
