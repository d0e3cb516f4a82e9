//! The public API: the documented error table (docs/api.md), order of checks, isolation and headers.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of, failure_log_line};

#[tokio::test(flavor = "multi_thread")]
async fn get_returns_the_callers_lead_with_headers() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    let r = app
        .public_expect(
            200,
            Method::GET,
            &format!("/api/v1/leads/{id}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.headers()["x-ratelimit-limit"], "120");
    assert_eq!(r.headers()["x-ratelimit-remaining"], "119");
    assert!(!r.headers()["x-request-id"].is_empty());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["lead"], lead);
    let l = &body["lead"];
    assert_eq!(
        l["conversation_url"],
        format!("https://app.qualifier.test/conversations/{id}")
    );
    assert_eq!(l["qualification_stage"], "qualifying");
    assert_eq!(l["external_ref"], Value::Null);
    assert_eq!(l["route_target"], Value::Null);
    assert_eq!(l["ai_paused"], false);
    let ts = l["created_at"].as_str().unwrap();
    assert_eq!(ts.len(), 24, "YYYY-MM-DDTHH:MM:SS.mmmZ: {ts}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.');
}

#[tokio::test(flavor = "multi_thread")]
async fn unauthorized_for_missing_malformed_unknown_tokens() {
    let app = TestApp::spawn().await;
    let (_, _token, lead) = app.org_with_lead("+447700900123").await;
    let path = format!(
        "{}/api/v1/leads/{}",
        app.public,
        lead["id"].as_str().unwrap()
    );
    let unknown = format!("qlf_org_{}", "A".repeat(40));
    for auth in [
        None,
        Some("Bearer".to_owned()),
        Some("Basic abc".into()),
        Some("Bearer qlf_org_x".into()),
        Some(format!("Bearer {unknown}")),
    ] {
        let mut rb = app.http.get(&path);
        if let Some(a) = &auth {
            rb = rb.header("Authorization", a);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.headers()["www-authenticate"], "Bearer", "{auth:?}");
        assert!(r.headers().get("x-ratelimit-limit").is_none());
        assert_eq!(error_of(r).await, (401, "Unauthorized".into()), "{auth:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_orgs_lead_and_bad_ids_are_not_found() {
    let app = TestApp::spawn().await;
    let (_org_b, token_b) = app.org().await;
    let (_, _, lead) = app.org_with_lead("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    assert_eq!(
        app.public_error(Method::GET, &format!("/api/v1/leads/{id}"), &token_b, None)
            .await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.public_error(
            Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token_b,
            Some(json!({"status": "closed"})),
        )
        .await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.public_error(Method::GET, "/api/v1/leads/not-a-uuid", &token_b, None)
            .await,
        (404, "Lead not found".into())
    );
    // B's failed close did not touch A's lead.
    let stage = app
        .db
        .client()
        .await
        .query_one("SELECT qualification_stage FROM leads", &[])
        .await
        .unwrap();
    assert_eq!(stage.get::<_, String>(0), "qualifying");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_route_and_wrong_method() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    assert_eq!(
        app.public_error(Method::GET, "/api/v1/nothing", &token, None)
            .await,
        (404, "Not found".into())
    );
    assert_eq!(
        app.public_error(
            Method::PUT,
            &format!("/api/v1/leads/{}", uuid()),
            &token,
            None,
        )
        .await,
        (405, "Method not allowed".into())
    );
    // GET /api/v1/leads is the lead list (docs/api.md); DELETE is not a method of it.
    assert_eq!(
        app.public_error(Method::DELETE, "/api/v1/leads", &token, None)
            .await,
        (405, "Method not allowed".into())
    );
    assert_eq!(
        app.public_error(Method::POST, "/api/v1/events", &token, None)
            .await,
        (405, "Method not allowed".into())
    );
}

fn uuid() -> String {
    "0190a0b0-0000-7000-8000-000000000001".into()
}

async fn raw_patch(
    app: &TestApp,
    token: &str,
    id: &str,
    ctype: Option<&str>,
    body: Vec<u8>,
) -> reqwest::Response {
    let mut rb = app
        .http
        .patch(format!("{}/api/v1/leads/{id}", app.public))
        .bearer_auth(token)
        .body(body);
    if let Some(c) = ctype {
        rb = rb.header("Content-Type", c);
    }
    rb.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_error_table_rows() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    let json_ct = Some("application/json");

    let r = raw_patch(&app, &token, id, json_ct, b"{not json".to_vec()).await;
    assert_eq!(error_of(r).await, (400, "Invalid JSON body".into()));
    let r = raw_patch(&app, &token, id, json_ct, Vec::new()).await;
    assert_eq!(error_of(r).await, (400, "Invalid JSON body".into()));
    let r = raw_patch(&app, &token, id, Some("text/plain"), b"{}".to_vec()).await;
    assert_eq!(
        error_of(r).await,
        (415, "Content-Type must be application/json".into())
    );
    let r = raw_patch(&app, &token, id, None, b"{}".to_vec()).await;
    assert_eq!(
        error_of(r).await,
        (415, "Content-Type must be application/json".into())
    );
    let big = format!(
        "{{\"status\":\"closed\",\"pad\":\"{}\"}}",
        "x".repeat(64 * 1024)
    );
    let r = raw_patch(&app, &token, id, json_ct, big.into_bytes()).await;
    assert_eq!(error_of(r).await, (413, "Request body too large".into()));
    let r = raw_patch(
        &app,
        &token,
        id,
        Some("application/json; charset=utf-8"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(
        error_of(r).await,
        (
            422,
            "Provide at least one of external_ref, ai_paused, status.".into()
        )
    );
    for body in [
        json!([]),
        json!(null),
        json!({"external_ref": null, "ai_paused": null, "status": null}),
        json!({"name": "x"}),
    ] {
        assert_eq!(
            app.public_error(
                Method::PATCH,
                &format!("/api/v1/leads/{id}"),
                &token,
                Some(body),
            )
            .await,
            (
                422,
                "Provide at least one of external_ref, ai_paused, status.".into()
            )
        );
    }
    assert_eq!(
        app.public_error(
            Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token,
            Some(json!({"status": "qualified"})),
        )
        .await,
        (422, "Invalid status: only \"closed\" can be set.".into())
    );
    assert_eq!(
        app.public_error(
            Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token,
            Some(json!({"ai_paused": "yes"})),
        )
        .await,
        (422, "ai_paused must be a boolean".into())
    );
    assert_eq!(
        app.public_error(
            Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token,
            Some(json!({"external_ref": {"system": "hs", "id": "x".repeat(256)}})),
        )
        .await,
        (
            422,
            "external_ref.id must be a string of 1 to 255 characters".into()
        )
    );
    // Nothing above changed the stored lead.
    let r = app
        .public(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["lead"], lead);
}

#[tokio::test(flavor = "multi_thread")]
async fn order_of_checks_is_auth_rate_size_type_json_fields_lookup() {
    let app = TestApp::spawn_with(|c| c.rate_limit_per_minute = 3).await;
    let (_, token) = app.org().await;
    let missing = uuid();
    // 401 before everything, even an oversized non-JSON body.
    let r = raw_patch(
        &app,
        "qlf_org_nope",
        &missing,
        Some("text/plain"),
        vec![b'x'; 70_000],
    )
    .await;
    assert_eq!(r.status(), 401);
    // 413 before 415, 415 before 400, 400 before 422, 422 before 404.
    let r = raw_patch(
        &app,
        &token,
        &missing,
        Some("text/plain"),
        vec![b'x'; 70_000],
    )
    .await;
    assert_eq!(error_of(r).await.0, 413);
    let r = raw_patch(&app, &token, &missing, Some("text/plain"), b"{bad".to_vec()).await;
    assert_eq!(error_of(r).await.0, 415);
    let r = raw_patch(
        &app,
        &token,
        &missing,
        Some("application/json"),
        b"{bad".to_vec(),
    )
    .await;
    assert_eq!(error_of(r).await.0, 400);
    // The bucket of 3 is now empty: 429 comes before the body is even looked at.
    let r = raw_patch(
        &app,
        &token,
        &missing,
        Some("application/json"),
        b"{bad".to_vec(),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert!(
        r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );

    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let r = raw_patch(
        &app,
        &token,
        &missing,
        Some("application/json"),
        b"{bad".to_vec(),
    )
    .await;
    assert_eq!(error_of(r).await.0, 400);
    let r = raw_patch(
        &app,
        &token,
        "not-a-uuid",
        Some("application/json"),
        b"{\"status\":\"open\"}".to_vec(),
    )
    .await;
    assert_eq!(error_of(r).await.0, 422);
    let r = raw_patch(
        &app,
        &token,
        "not-a-uuid",
        Some("application/json"),
        b"{\"status\":\"closed\"}".to_vec(),
    )
    .await;
    assert_eq!(error_of(r).await, (404, "Lead not found".into()));
}

#[tokio::test(flavor = "multi_thread")]
async fn request_id_is_echoed_or_generated() {
    let app = TestApp::spawn().await;
    let r = app
        .http
        .get(format!("{}/api/v1/leads/x", app.public))
        .header("X-Request-Id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let r = app
        .http
        .get(format!("{}/nowhere", app.public))
        .send()
        .await
        .unwrap();
    let rid = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(rid.len(), 36);
    let r = app
        .http
        .get(format!("{}/healthz", app.internal))
        .send()
        .await
        .unwrap();
    assert!(r.headers().contains_key("x-request-id"));
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_applies_write_back_fields_and_ignores_unknown_ones() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    let l = app.public_json(200, Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token,
            Some(json!({"external_ref": {"system": "hubspot", "id": "9001", "url": "https://crm.example/9001"}, "ai_paused": true, "qualification_stage": "qualified", "name": "Eve"}))).await["lead"].clone();
    assert_eq!(
        l["external_ref"],
        json!({"system": "hubspot", "id": "9001", "url": "https://crm.example/9001"})
    );
    assert_eq!(l["ai_paused"], true);
    assert_eq!(l["qualification_stage"], "qualifying");
    assert_eq!(l["name"], "Ada Lovelace");
    let r = app
        .public(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["lead"], l);
}

#[tokio::test(flavor = "multi_thread")]
async fn post_creates_with_location_and_refuses_a_duplicate_phone() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let body = json!({"name": "Grace", "phone": "+1 555 010 9999", "email": "g@Example.com", "profile": {"area": "Soho"}, "route_target": "hotLead"});
    let r = app
        .public_expect(
            201,
            Method::POST,
            "/api/v1/leads",
            &token,
            Some(body.clone()),
        )
        .await;
    let loc = r.headers()["location"].to_str().unwrap().to_owned();
    let l = r.json::<Value>().await.unwrap()["lead"].clone();
    assert_eq!(loc, format!("/api/v1/leads/{}", l["id"].as_str().unwrap()));
    assert_eq!(l["phone"], "+15550109999");
    assert_eq!(l["channel"], "api");
    assert_eq!(l["email"], "g@example.com");
    assert_eq!(l["profile"], json!({"area": "Soho"}));
    let r = app
        .public(
            Method::POST,
            "/api/v1/leads",
            &token,
            Some(json!({"name": "Other", "phone": "+15550109999"})),
        )
        .await;
    assert_eq!(r.headers()["location"].to_str().unwrap(), loc);
    assert_eq!(error_of(r).await, (409, "Lead already exists".into()));
    for (bad, msg) in [
        (json!({"phone": "+15550100000"}), "name is required"),
        (
            json!({"name": "A", "phone": "555"}),
            "phone must be + followed by 7 to 15 digits",
        ),
        (
            json!({"name": "A", "phone": "+15550100000", "channel": "Web"}),
            "channel must match [a-z][a-z0-9_]{0,31}",
        ),
        (
            json!({"name": "A", "phone": "+15550100000", "profile": {"bedrooms": "two"}}),
            "profile.bedrooms must be a non-negative integer",
        ),
        (
            json!({"name": 5, "phone": "+15550100000"}),
            "name must be a string",
        ),
    ] {
        assert_eq!(
            app.public_error(Method::POST, "/api/v1/leads", &token, Some(bad))
                .await,
            (422, msg.into())
        );
    }
    assert!(app.outbox().await.is_empty(), "POST never emits an event");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_token_is_refused_at_once() {
    let app = TestApp::spawn().await;
    let (org, token, lead) = app.org_with_lead("+447700900123").await;
    let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());
    assert_eq!(
        app.public(Method::GET, &path, &token, None).await.status(),
        200
    );
    let r = app
        .internal(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/tokens"),
            None,
        )
        .await;
    let v: Value = r.json().await.unwrap();
    let (token_id, other_secret) = (
        v["token"]["id"].as_str().unwrap().to_owned(),
        v["secret"].as_str().unwrap().to_owned(),
    );
    app.internal_expect(
        204,
        Method::DELETE,
        &format!("/internal/v1/orgs/{org}/tokens/{token_id}"),
        None,
    )
    .await;
    assert_eq!(
        error_of(app.public(Method::GET, &path, &other_secret, None).await).await,
        (401, "Unauthorized".into())
    );
    assert_eq!(
        app.public(Method::GET, &path, &token, None).await.status(),
        200,
        "other tokens keep working"
    );
    assert_eq!(
        app.internal_error(
            Method::DELETE,
            &format!("/internal/v1/orgs/{org}/tokens/{token_id}"),
            None,
        )
        .await,
        (404, "Token not found".into())
    );
    // Only the hash is stored.
    let rows = app
        .db
        .client()
        .await
        .query("SELECT token_hash FROM api_tokens", &[])
        .await
        .unwrap();
    for row in rows {
        let h: Vec<u8> = row.get(0);
        assert_eq!(h.len(), 32);
        assert!(!h.windows(8).any(|w| w == b"qlf_org_"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_database_is_503_with_retry_after_and_no_details() {
    // Nothing listens on port 1: every pool checkout fails at once.
    let app = TestApp::spawn_with(|c| {
        c.database =
            qualifier_store::Database::from_url("postgres://postgres@127.0.0.1:1/none", "test")
                .unwrap()
    })
    .await;
    let token = format!("qlf_org_{}", "A".repeat(40));
    let r = app
        .public(
            Method::GET,
            &format!("/api/v1/leads/{}", uuid()),
            &token,
            None,
        )
        .await;
    assert_eq!(r.headers()["retry-after"], "5");
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(error_of(r).await, (503, "Service unavailable".into()));
    let r = app
        .http
        .get(format!("{}/readyz", app.internal))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unexpected_database_error_is_an_opaque_500() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    // Break the schema under the running service: the query fails with an SQL error.
    app.db
        .client()
        .await
        .batch_execute("ALTER TABLE leads RENAME COLUMN channel TO channel_gone")
        .await
        .unwrap();
    let r = app.get_lead(&token, &lead).await;
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(r.status(), 500);
    let text = r.text().await.unwrap();
    assert_eq!(
        text, r#"{"error":"Internal server error"}"#,
        "no detail of the cause leaks"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_opaque_500_logs_its_whole_cause_chain_with_the_request_id() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    app.db
        .client()
        .await
        .batch_execute("ALTER TABLE leads RENAME COLUMN channel TO channel_gone")
        .await
        .unwrap();
    let (r, rid) = app
        .get_lead_traced(&token, lead["id"].as_str().unwrap())
        .await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.headers()["x-request-id"], rid.as_str());
    let v = failure_log_line(&rid);
    let cause = v["fields"]["cause"].as_str().unwrap();
    // Our context first, then PostgreSQL's own words: the operator sees why, not just "500".
    assert!(cause.starts_with("database error: "), "{cause}");
    assert!(
        cause.contains("channel") && cause.contains("does not exist"),
        "{cause}"
    );
    assert_eq!(v["level"], "ERROR");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stored_stage_that_does_not_parse_is_an_error_not_a_default() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    // Only a hand edit (or a newer version's row) can do this: the CHECK is lifted for it.
    app.db
        .client()
        .await
        .batch_execute(&format!(
            "ALTER TABLE leads DROP CONSTRAINT leads_qualification_stage_check;
             UPDATE leads SET qualification_stage = 'negotiating', revision = revision + 1 WHERE id = '{id}'"
        ))
        .await
        .unwrap();
    let (r, rid) = app.get_lead_traced(&token, id).await;
    // Shown as "qualifying" before; a CRM would have synced a stage the lead is not in.
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.text().await.unwrap(),
        r#"{"error":"Internal server error"}"#
    );
    let line = failure_log_line(&rid).to_string();
    assert!(
        line.contains(r#"stored Stage \"negotiating\" is not a known value"#),
        "{line}"
    );
}

/// GETs are read in batches: a lead whose stored row cannot be read fails its own requests
/// only, never the other leads' requests that shared its statement.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_lead_does_not_fail_the_reads_batched_with_it() {
    let app = TestApp::spawn().await;
    let (org, token, bad) = app.org_with_lead("+447700900124").await;
    let good = app.inbound_lead(&org, "+447700900125").await;
    app.db
        .client()
        .await
        .batch_execute(&format!(
            "ALTER TABLE leads DROP CONSTRAINT leads_qualification_stage_check;
             UPDATE leads SET qualification_stage = 'negotiating', revision = revision + 1 WHERE id = '{}'",
            bad["id"].as_str().unwrap()
        ))
        .await
        .unwrap();
    let http = crate::helpers::client();
    let mut tasks = Vec::new();
    for i in 0..60usize {
        let id = if i % 2 == 0 { &bad["id"] } else { &good["id"] };
        let url = format!("{}/api/v1/leads/{}", app.public, id.as_str().unwrap());
        let (http, token) = (http.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let r = http.get(url).bearer_auth(token).send().await.unwrap();
            (i % 2 == 0, r.status().as_u16())
        }));
    }
    for t in tasks {
        match t.await.unwrap() {
            (true, status) => assert_eq!(status, 500),
            (false, status) => assert_eq!(status, 200, "a good lead's read failed"),
        }
    }
}
