//! `qualifierctl compact-attempt-logs` (`Deliveries::compact_attempt_logs`) on attempt logs stored
//! before the compact forms: rewritten in batches that resume where the last one ended, shown
//! exactly as before, and left alone on a second run (docs/operations.md, "Moving a deployment
//! with history to the compact layout").

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestApp;

/// An entry as a version that kept every header wrote it.
fn whole_entry(attempt: u32, delivery: &str) -> Value {
    let hex = "d".repeat(64);
    json!({"attempt": attempt, "started_at": "2026-11-21T10:15:02.481Z", "duration_ms": 40,
           "status_code": 503, "error": "HTTP 503", "response_body": "busy",
           "request_headers": [["Content-Type", "application/json"],
                               ["X-Qualifier-Event", "lead.created"],
                               ["X-Qualifier-Signature", format!("sha256={hex}")],
                               ["X-Qualifier-Delivery", delivery],
                               ["X-Qualifier-Timestamp", "2026-11-21T10:15:02.481Z"],
                               ["webhook-id", delivery],
                               ["webhook-timestamp", "1795256102"],
                               ["webhook-signature", "v1,Zm9vYmFyYmF6cXV4cXV1eA=="]]})
}

#[tokio::test(flavor = "multi_thread")]
async fn old_attempt_logs_are_rewritten_compact_in_resumable_batches_and_show_the_same() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    for phone in ["+447700900601", "+447700900602", "+447700900603"] {
        app.inbound_lead(&org, phone).await;
    }
    let c = app.db.client().await;
    let deliveries: Vec<String> = qualifier_testkit::sql::column(
        &c,
        "SELECT delivery_id::text FROM outbox ORDER BY seq",
        &[],
    )
    .await;
    assert_eq!(deliveries.len(), 3);
    for d in &deliveries {
        let log = json!([whole_entry(1, d), whole_entry(2, d)]).to_string();
        c.execute(
            "UPDATE deliveries SET attempt_log = $1::text::jsonb WHERE delivery_id = $2::text::uuid",
            &[&log, d],
        )
        .await
        .unwrap();
    }
    let shown = |d: String| {
        let app = &app;
        let org = org.clone();
        async move {
            let r = app
                .internal(
                    Method::GET,
                    &format!("/internal/v1/orgs/{org}/deliveries/{d}"),
                    None,
                )
                .await;
            r.json::<Value>().await.unwrap()["delivery"]["attempt_log"].clone()
        }
    };
    let before = shown(deliveries[0].clone()).await;
    assert_eq!(before.as_array().unwrap().len(), 2, "{before}");
    // As text: PostgreSQL may compress a row's large log in place, the compact one it need not.
    let bytes = "SELECT sum(octet_length(attempt_log::text))::int8 FROM deliveries";
    let size_before: i64 = qualifier_testkit::sql::one(&c, bytes, &[]).await;

    // Two rows a batch: the second batch starts after the first one's last sequence.
    let store = app.store().with_payload_compression(true);
    let first = store.deliveries().compact_attempt_logs(0, 2).await.unwrap();
    assert_eq!((first.rows_read, first.rows_rewritten), (2, 2));
    let second = store
        .deliveries()
        .compact_attempt_logs(first.through_seq.unwrap(), 2)
        .await
        .unwrap();
    assert_eq!((second.rows_read, second.rows_rewritten), (1, 1));
    let done = store
        .deliveries()
        .compact_attempt_logs(second.through_seq.unwrap(), 2)
        .await
        .unwrap();
    assert_eq!(done.through_seq, None, "nothing after the last row");

    for row in c
        .query("SELECT attempt_log::text FROM deliveries", &[])
        .await
        .unwrap()
    {
        let log: Value = serde_json::from_str(row.get(0)).unwrap();
        for e in log.as_array().unwrap() {
            assert!(
                e.get("n").is_some() && e.get("request_headers").is_none(),
                "{log}"
            );
        }
    }
    let size_after: i64 = qualifier_testkit::sql::one(&c, bytes, &[]).await;
    assert!(
        size_after * 3 < size_before,
        "{size_after} bytes after, {size_before} before"
    );
    assert_eq!(shown(deliveries[0].clone()).await, before);

    // A second run from the start reads every row and rewrites none.
    let again = store
        .deliveries()
        .compact_attempt_logs(0, 10)
        .await
        .unwrap();
    assert_eq!((again.rows_read, again.rows_rewritten), (3, 0));
}
