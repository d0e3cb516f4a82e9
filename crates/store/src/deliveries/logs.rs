//! Rewriting old attempt logs into the form the worker writes now
//! (`qualifierctl compact-attempt-logs`).

use diesel::sql_types::Array;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use serde::Serialize;
use serde_json::Value;

use crate::StoreError;
use crate::schema::deliveries;
use qualifier_domain::delivery::AttemptEntry;

/// One batch of [`Deliveries::compact_attempt_logs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompactedBatch {
    /// The highest sequence the batch looked at (where the next one starts); `None` when
    /// there was nothing after `after`.
    pub through_seq: Option<i64>,
    pub rows_read: usize,
    pub rows_rewritten: usize,
}

impl crate::facets::Deliveries<'_> {
    /// Rewrites the attempt logs of up to `batch` rows after sequence `after` into the form
    /// the worker writes now: each entry's `request_headers` replaced by its two signatures,
    /// shortened (`AttemptEntry::signatures`), and, in compact storage
    /// ([`Store::compress_payloads`]), every entry in the compact form; nothing else changes. One short
    /// transaction per batch, its rows locked while it runs (an attempt recorded meanwhile
    /// waits, rather than being overwritten). Idempotent: a row already compact is read and
    /// left alone, so a run cut short is resumed from the last `through_seq` it printed, or
    /// from the start (`qualifierctl compact-attempt-logs`).
    pub async fn compact_attempt_logs(
        &self,
        after: i64,
        batch: i64,
    ) -> Result<CompactedBatch, StoreError> {
        use diesel::sql_types::{Int8, Jsonb};
        let compact = self.compress_payloads;
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            // The delivery rows, where the attempts are written (and, while the outbox follows
            // them, written back to the event's row by a trigger).
            let rows: Vec<(i64, Value)> = deliveries::table
                .filter(deliveries::seq.gt(after))
                .order(deliveries::seq.asc())
                .limit(batch)
                .select((deliveries::seq, deliveries::attempt_log))
                .for_update()
                .load(conn)
                .await?;
            let through_seq = rows.last().map(|r| r.0);
            let rows_read = rows.len();
            let (seqs, logs): (Vec<i64>, Vec<Value>) = rows
                .into_iter()
                .filter_map(|(seq, log)| compact_log(log, compact).map(|l| (seq, l)))
                .unzip();
            if !seqs.is_empty() {
                diesel::sql_query(super::state::within::LOGS_COMPACTED)
                    .bind::<Array<Int8>, _>(&seqs)
                    .bind::<Array<Jsonb>, _>(&logs)
                    .execute(conn)
                    .await?;
            }
            Ok(CompactedBatch {
                through_seq,
                rows_read,
                rows_rewritten: seqs.len(),
            })
        })
        .await
    }
}

/// A log with its entries' headers replaced by their signatures and, with `compact`, every
/// entry in the compact form ([`AttemptEntry::stored`]); `None` when nothing would change. An
/// entry neither form reads is left as it is.
fn compact_log(mut log: Value, compact: bool) -> Option<Value> {
    let mut changed = false;
    for e in log.as_array_mut().into_iter().flatten() {
        if compact {
            if e.get("n").is_some() {
                continue;
            }
            let Some(mut entry) = AttemptEntry::from_stored(e) else {
                continue;
            };
            if !entry.request_headers.is_empty() {
                entry.signatures = AttemptEntry::stored_signatures(&entry.request_headers);
                entry.request_headers.clear();
            }
            *e = entry.stored(true);
            changed = true;
            continue;
        }
        let Some(obj) = e.as_object_mut() else {
            continue;
        };
        let Some(headers) = obj.remove("request_headers") else {
            continue;
        };
        changed = true;
        let headers: Vec<(String, String)> = serde_json::from_value(headers).unwrap_or_default();
        let signatures = AttemptEntry::stored_signatures(&headers);
        if !signatures.is_empty() {
            obj.insert("signatures".into(), serde_json::json!(signatures));
        }
    }
    changed.then_some(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_compacted_log_keeps_every_field_but_the_headers_and_shows_the_same() {
        let hex = "c".repeat(64);
        let old = json!([
            {"attempt": 1, "started_at": "2026-11-21T10:15:02.481Z", "duration_ms": 3,
             "status_code": 500, "error": "HTTP 500", "response_body": "no",
             "request_headers": [["Content-Type", "application/json"],
                                 ["X-Qualifier-Event", "lead.created"],
                                 ["X-Qualifier-Signature", format!("sha256={hex}")],
                                 ["X-Qualifier-Delivery", "d-1"],
                                 ["X-Qualifier-Timestamp", "2026-11-21T10:15:02.481Z"],
                                 ["webhook-id", "d-1"],
                                 ["webhook-timestamp", "1795256102"],
                                 ["webhook-signature", "v1,Zm9vYmFyYmF6cXV4"]]},
            {"attempt": 2, "started_at": "2026-11-21T10:15:03.481Z", "duration_ms": 0,
             "status_code": null, "error": "refused", "error_kind": "refused_address"}
        ]);
        let new = compact_log(old.clone(), false).unwrap();
        assert_eq!(
            new[0]["signatures"],
            json!(["sha256=cccccccc…", "v1,Zm9vYmFy…"])
        );
        assert!(new[0].get("request_headers").is_none());
        assert_eq!(new[0]["response_body"], "no");
        assert_eq!(new[1], old[1], "an entry with no request is left as it was");
        assert!(new.to_string().len() < old.to_string().len() / 2);
        // Shown the same before and after.
        let request = qualifier_domain::delivery::Request {
            event_type: "lead.created",
            delivery_id: "d-1",
            test: false,
            probe: false,
        };
        let show = |log: &Value| -> Vec<AttemptEntry> {
            log.as_array()
                .unwrap()
                .iter()
                .map(|e| AttemptEntry::from_stored(e).unwrap().for_display(&request))
                .collect()
        };
        assert_eq!(show(&new), show(&old));
        assert_eq!(
            compact_log(new.clone(), false),
            None,
            "a compact log is left alone"
        );

        // Into the compact form, from the old or from the full one: shown the same again, at
        // a fraction of the size, and left alone on a second pass.
        let short = compact_log(old.clone(), true).unwrap();
        assert_eq!(compact_log(new.clone(), true), Some(short.clone()));
        assert_eq!(short[0]["n"], 1);
        assert_eq!(short[0]["g"], json!(["sha256=cccccccc…", "v1,Zm9vYmFy…"]));
        assert_eq!(show(&short), show(&old));
        assert!(short.to_string().len() + 60 < new.to_string().len());
        assert_eq!(compact_log(short, true), None);
        // An entry neither form reads stays as it was.
        assert_eq!(compact_log(json!([{"x": 1}]), true), None);
    }
}
