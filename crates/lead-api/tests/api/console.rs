//! The settings console's security (docs/console.md): tickets, the session cookie, CSRF,
//! one org per session, and the headers of every page. Browser tests drive the pages
//! themselves; these speak HTTP directly, as an attacker would.

use reqwest::{Client, Method, StatusCode, header};
use serde_json::{Value, json};

use crate::helpers::TestApp;

pub(crate) async fn app() -> TestApp {
    TestApp::spawn_with(|c| {
        c.allow_cidrs = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await
}

/// A client that shows redirects instead of following them and keeps no cookies.
pub(crate) fn browser() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub(crate) async fn mint(app: &TestApp, org: &str) -> String {
    let v = app
        .internal_json(
            201,
            Method::POST,
            &format!("/internal/v1/orgs/{org}/console-sessions"),
            None,
        )
        .await;
    let url = v["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/console/login?ticket=qlf_ct_", app.public)),
        "{url}"
    );
    let expires = time::OffsetDateTime::parse(
        v["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let ttl = expires - time::OffsetDateTime::now_utc();
    assert!(ttl > time::Duration::minutes(9) && ttl <= time::Duration::minutes(10));
    url
}

/// Signs in with a fresh ticket: the cookie header value to send back.
pub(crate) async fn sign_in(app: &TestApp, org: &str) -> String {
    let url = mint(app, org).await;
    let r = browser().get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[header::LOCATION], "/console");
    let set = r.headers()[header::SET_COOKIE].to_str().unwrap().to_owned();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/console", "Max-Age=28800"] {
        assert!(set.contains(attr), "{set} lacks {attr}");
    }
    // The test listener is plain http, where a Secure cookie would never come back.
    assert!(!set.contains("Secure"), "{set}");
    set.split(';').next().unwrap().to_owned()
}

pub(crate) async fn get(app: &TestApp, cookie: Option<&str>, path: &str) -> (StatusCode, String) {
    let mut rb = browser().get(format!("{}{path}", app.public));
    if let Some(c) = cookie {
        rb = rb.header(header::COOKIE, c);
    }
    let r = rb.send().await.unwrap();
    assert_headers(&r, path);
    (r.status(), r.text().await.unwrap())
}

pub(crate) async fn post(
    app: &TestApp,
    cookie: &str,
    path: &str,
    form: &[(&str, &str)],
) -> (StatusCode, String, Option<String>) {
    let r = browser()
        .post(format!("{}{path}", app.public))
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert_headers(&r, path);
    let loc = r
        .headers()
        .get(header::LOCATION)
        .map(|l| l.to_str().unwrap().to_owned());
    (r.status(), r.text().await.unwrap(), loc)
}

fn assert_headers(r: &reqwest::Response, path: &str) {
    let h = r.headers();
    assert_eq!(
        h["content-security-policy"], "default-src 'self'; frame-ancestors 'none'",
        "{path}"
    );
    assert_eq!(h["x-frame-options"], "DENY", "{path}");
    assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
}

/// The CSRF token the page's forms carry.
pub(crate) fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token")
        + 19;
    html[at..].split('"').next().unwrap().to_owned()
}

fn secret_of(html: &str) -> String {
    let at = html.find("data-secret").expect("a secret shown once");
    let from = html[at..].find('>').unwrap() + at + 1;
    html[from..].split('<').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ticket_signs_in_once_and_nothing_else_does() {
    let app = app().await;
    let (org, _) = app.org().await;
    let url = mint(&app, &org).await;
    let r = browser().get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<label for=\"url\">Endpoint URL</label>"),
        "{html}"
    );

    // Used, unknown, malformed, missing, expired: 401 pages, and no cookie.
    let used = browser().get(&url).send().await.unwrap();
    assert_eq!(used.status(), 401);
    assert!(used.headers().get(header::SET_COOKIE).is_none());
    for path in [
        "/console/login?ticket=qlf_ct_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "/console/login?ticket=%00%01",
        "/console/login",
        "/console/login?ticket=qlf_ct_x&ticket=y",
    ] {
        let (status, html) = get(&app, None, path).await;
        assert_eq!(status, 401, "{path}");
        assert!(html.contains("Sign in again"), "{path}");
    }
    let stale = mint(&app, &org).await;
    app.db
        .client()
        .await
        .execute(
            "UPDATE console_tickets SET expires_at = now() - interval '1 second' WHERE used_at IS NULL",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(browser().get(&stale).send().await.unwrap().status(), 401);

    // No session, a forged one, an expired one.
    for cookie in [
        None,
        Some("qlf_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        for path in ["/console", "/console/tokens", "/console/deliveries"] {
            assert_eq!(get(&app, cookie, path).await.0, 401, "{path}");
        }
    }
    app.db
        .client()
        .await
        .execute(
            "UPDATE console_sessions SET expires_at = now() - interval '1 second'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(get(&app, Some(&cookie), "/console").await.0, 401);

    // Tickets are for orgs that exist.
    let r = app
        .internal_expect(
            404,
            Method::POST,
            "/internal/v1/orgs/0190a0b0-0000-7000-8000-000000000001/console-sessions",
            None,
        )
        .await;
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"error": "Org not found"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_without_the_sessions_csrf_token_changes_nothing() {
    let app = app().await;
    let (org, _) = app.org().await;
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console").await;
    let csrf = csrf_of(&html);
    let form = |csrf: &'static str| {
        vec![
            ("csrf", csrf),
            ("url", "https://127.0.0.1:9443/hook"),
            ("event_types", "lead.created"),
            ("enabled", "true"),
        ]
    };
    for bad in ["", "not-the-token"] {
        let (status, html, _) = post(&app, &cookie, "/console/webhook", &form(bad)).await;
        assert_eq!(status, 403, "{html}");
    }
    let mut no_field = form("");
    no_field.remove(0);
    assert_eq!(
        post(&app, &cookie, "/console/webhook", &no_field).await.0,
        403
    );
    assert_eq!(
        post(&app, &cookie, "/console/tokens", &[("name", "x")])
            .await
            .0,
        403
    );
    let r = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/webhook"),
            None,
        )
        .await;
    assert_eq!(r.status(), 404, "nothing was saved");

    // The right token: refused fields show the API's messages beside them, then a save works
    // and shows the new secret once.
    let mut f = form("");
    f[0].1 = csrf.as_str();
    f[1].1 = "http://127.0.0.1:9443/hook";
    f.retain(|(k, _)| *k != "event_types");
    let (status, html, _) = post(&app, &cookie, "/console/webhook", &f).await;
    assert_eq!(status, 422);
    assert!(html.contains("id=\"url-error\""), "{html}");
    assert!(
        html.contains("event_types must be a non-empty list"),
        "{html}"
    );
    let mut f = form("");
    f[0].1 = csrf.as_str();
    let (status, html, _) = post(&app, &cookie, "/console/webhook", &f).await;
    assert_eq!(status, 200, "{html}");
    let secret = secret_of(&html);
    assert!(secret.starts_with("qlf_whsec_"), "{secret}");
    let r = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/webhook"),
            None,
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["webhook"]["url"], "https://127.0.0.1:9443/hook");
    assert_eq!(v["webhook"]["event_types"], json!(["lead.created"]));
    // The page shows the secret only that once.
    let (_, again) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(!again.contains(&secret));
    // The pace: both fields with a sentence each; a refused rate is named beside its field and
    // nothing changes; a good one is saved and shown back.
    assert!(again.contains("Requests per second at most"), "{again}");
    assert!(again.contains("never exceed this many requests in a second"));
    assert!(again.contains("one lead's deliveries one at a time, in event order"));
    let mut f = form("");
    f[0].1 = csrf.as_str();
    f.push(("max_per_second", "0"));
    f.push(("ordering", "per_lead"));
    let (status, html, _) = post(&app, &cookie, "/console/webhook", &f).await;
    assert_eq!(status, 422, "{html}");
    assert!(html.contains("id=\"rate-error\""), "{html}");
    assert!(html.contains("max_per_second must be an integer from 1 to 1000, or null"));
    let mut f = form("");
    f[0].1 = csrf.as_str();
    f.push(("max_per_second", "40"));
    f.push(("ordering", "per_lead"));
    let (status, html, _) = post(&app, &cookie, "/console/webhook", &f).await;
    assert_eq!(status, 303, "saved, then back to the page: {html}");
    let (_, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(html.contains("value=\"40\""), "{html}");
    assert!(
        html.contains("<option value=\"per_lead\" selected"),
        "{html}"
    );
    let v: Value = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/webhook"),
            None,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["webhook"]["max_per_second"], 40);
    assert_eq!(v["webhook"]["ordering"], "per_lead");

    // Sign out needs the token too, then the cookie opens nothing.
    assert_eq!(post(&app, &cookie, "/console/logout", &[]).await.0, 403);
    let (status, _, _) = post(&app, &cookie, "/console/logout", &[("csrf", &csrf)]).await;
    assert_eq!(status, 200);
    assert_eq!(get(&app, Some(&cookie), "/console").await.0, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_of_one_org_cannot_reach_another_orgs_settings() {
    let app = app().await;
    let (org_a, _) = app.org().await;
    let (org_b, token_b) = app.org().await;
    // Org B: a webhook, a named token and a delivery (its test event).
    app.internal_expect(200, Method::PUT,
            &format!("/internal/v1/orgs/{org_b}/webhook"),
            Some(json!({"url": "https://127.0.0.1:9443/b", "event_types": ["lead.created"], "enabled": true}))).await;
    let r = app
        .internal(
            Method::POST,
            &format!("/internal/v1/orgs/{org_b}/tokens"),
            Some(json!({"name": "B's CRM"})),
        )
        .await;
    let b_token_id = r.json::<Value>().await.unwrap()["token"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .internal(
            Method::POST,
            &format!("/internal/v1/orgs/{org_b}/webhook/test"),
            None,
        )
        .await;
    let b_delivery = r.json::<Value>().await.unwrap()["delivery"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let cookie = sign_in(&app, &org_a).await;
    let (_, html) = get(&app, Some(&cookie), "/console/tokens").await;
    let csrf = csrf_of(&html);
    assert!(!html.contains("B&#39;s CRM") && !html.contains("B's CRM"));
    // Another org's ids in URLs and forms: not found, nothing changed.
    assert_eq!(
        get(
            &app,
            Some(&cookie),
            &format!("/console/deliveries/{b_delivery}")
        )
        .await
        .0,
        404
    );
    let (status, _, _) = post(
        &app,
        &cookie,
        &format!("/console/deliveries/{b_delivery}/replay"),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = post(
        &app,
        &cookie,
        &format!("/console/tokens/{b_token_id}/revoke"),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(status, 404);
    let (_, list) = get(&app, Some(&cookie), "/console/deliveries").await;
    assert!(!list.contains(&b_delivery));
    // An org_id smuggled into a form is ignored: the session's org is the only one.
    let (status, _, _) = post(
        &app,
        &cookie,
        "/console/webhook",
        &[
            ("csrf", &csrf),
            ("org_id", &org_b),
            ("url", "https://127.0.0.1:9443/a"),
            ("event_types", "lead.qualified"),
            ("enabled", "true"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let b_hook: Value = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org_b}/webhook"),
            None,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(b_hook["webhook"]["url"], "https://127.0.0.1:9443/b");
    // B's token still works; B's delivery was not replayed.
    app.public_expect(200, Method::GET, "/api/v1/leads", &token_b, None)
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_made_on_the_page_work_and_revoked_ones_stop() {
    let app = app().await;
    let (org, _) = app.org().await;
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console/tokens").await;
    let csrf = csrf_of(&html);
    let (status, html, _) = post(
        &app,
        &cookie,
        "/console/tokens",
        &[("csrf", &csrf), ("name", "HubSpot sync")],
    )
    .await;
    assert_eq!(status, 200);
    let secret = secret_of(&html);
    assert!(secret.starts_with("qlf_org_"));
    assert!(html.contains("HubSpot sync"));
    app.public_expect(200, Method::GET, "/api/v1/leads", &secret, None)
        .await;
    let (_, html) = get(&app, Some(&cookie), "/console/tokens").await;
    assert!(!html.contains(&secret), "shown once");
    let row = html.split("HubSpot sync</td>").nth(1).unwrap();
    let row = row.split("</tr>").next().unwrap();
    assert!(!row.contains("never"), "its use shows as last used: {row}");
    // A control character in the name: the API's message, nothing created.
    let (status, html, _) = post(
        &app,
        &cookie,
        "/console/tokens",
        &[("csrf", &csrf), ("name", "bad\u{1}name")],
    )
    .await;
    assert_eq!(status, 422);
    assert!(html.contains("name"), "{html}");
    let at = html.find("/revoke").unwrap();
    let id = &html[at - 36..at];
    let (status, _, loc) = post(
        &app,
        &cookie,
        &format!("/console/tokens/{id}/revoke"),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(loc.as_deref(), Some("/console/tokens?done=revoked"));
    app.public_expect(401, Method::GET, "/api/v1/leads", &secret, None)
        .await;
}

/// The hostile-input rules (docs/reliability.md, "Hostile input") hold on the console too: a form that never finishes gets 408, a huge
/// one 413, and neither creates anything.
#[tokio::test(flavor = "multi_thread")]
async fn stalled_and_oversized_forms_are_refused_without_effect() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = app().await;
    let (org, _) = app.org().await;
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console/tokens").await;
    let csrf = csrf_of(&html);

    let big = "x".repeat(70 * 1024);
    let (status, _, _) = post(
        &app,
        &cookie,
        "/console/tokens",
        &[("csrf", &csrf), ("name", &big)],
    )
    .await;
    assert_eq!(status, 413);

    let addr = app.public.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /console/tokens HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 80\r\n\r\ncsrf={csrf}"
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if String::from_utf8_lossy(&buf).contains("</html>") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer within 20 s");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let (_, html) = get(&app, Some(&cookie), "/console/tokens").await;
    assert_eq!(
        html.matches("/revoke").count(),
        1,
        "only the org's first token"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_endpoint_shows_a_banner_whose_check_now_makes_a_probe_due() {
    let app = app().await;
    let (org, _) = app.org().await;
    let v = app
        .internal_json(
            200,
            Method::PUT,
            &format!("/internal/v1/orgs/{org}/webhook"),
            Some(json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"]})),
        )
        .await;
    assert_eq!(v["webhook"]["health"]["state"], "healthy");
    assert!(v["webhook"]["health"]["failing_since"].is_null());
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(!html.contains("Check now"), "no banner while healthy");
    // As a webhook-delivery replica records it: failing for an hour, next probe in ten minutes.
    let pg = app.db.client().await;
    pg.execute(
        "INSERT INTO endpoint_health (org_id, state, failing_since, last_failure_at, last_error,
                 consecutive_failures, next_probe_at, probe_interval_ms)
         VALUES ($1::text::uuid, 'failing', now() - interval '1 hour', now(), 'HTTP 503 <b>',
                 7, now() + interval '10 minutes', 600000)",
        &[&org],
    )
    .await
    .unwrap();
    let (status, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert_eq!(status, 200);
    assert!(html.contains("Your endpoint is failing"), "{html}");
    assert!(
        html.contains("HTTP 503 &lt;b&gt;"),
        "the last error, escaped"
    );
    assert!(html.contains("Check now"));
    let r = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/webhook"),
            None,
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["webhook"]["health"]["state"], "failing");
    assert_eq!(v["webhook"]["health"]["consecutive_failures"], 7);
    assert_eq!(v["webhook"]["health"]["last_error"], "HTTP 503 <b>");
    // Check now: the probe is due at once (a worker sends it).
    let csrf = csrf_of(&html);
    let (status, _, loc) = post(&app, &cookie, "/console/webhook/check", &[("csrf", &csrf)]).await;
    assert_eq!(status, 303);
    assert_eq!(loc.as_deref(), Some("/console?done=checking"));
    let due: bool = qualifier_testkit::sql::one(
        &pg,
        "SELECT next_probe_at <= now() FROM endpoint_health WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await;
    assert!(due, "the next probe is due now");
    // Saving while it fails keeps it failing: only a probe answered 2xx releases what waited.
    let save = || async {
        let r = app
            .internal(
                Method::PUT,
                &format!("/internal/v1/orgs/{org}/webhook"),
                Some(json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"], "enabled": true})),
            )
            .await;
        r.json::<Value>().await.unwrap()
    };
    let v = save().await;
    assert_eq!(v["webhook"]["health"]["state"], "failing");
    // Disabled (the timer ran out): re-enabling makes it healthy again.
    pg.execute(
        "UPDATE endpoint_health SET state = 'disabled', disabled_reason = 'failing too long'
         WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await
    .unwrap();
    let v = save().await;
    assert_eq!(v["webhook"]["health"]["state"], "healthy");
    assert_eq!(v["webhook"]["health"]["consecutive_failures"], 0);
    let (_, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(!html.contains("Check now"));
}

/// docs/reliability.md, "Strangers, quotas and pages": the console offers `Replay` exactly for the deliveries that the replay
/// call accepts (it used to offer it for `failed` ones too, which the call refuses).
#[tokio::test(flavor = "multi_thread")]
async fn replay_is_offered_exactly_where_the_replay_call_accepts() {
    let app = app().await;
    let (org, _) = app.org().await;
    let statuses = ["pending", "failed", "succeeded", "dead", "skipped"];
    for i in 0..statuses.len() {
        let r = app
            .internal(
                Method::POST,
                &format!("/internal/v1/orgs/{org}/inbound"),
                Some(json!({"name": "Ada", "phone": format!("+3161111000{i}"), "channel": "sms"})),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let pg = app.db.client().await;
    let ids: Vec<String> = qualifier_testkit::sql::column(
        &pg,
        "SELECT delivery_id::text FROM outbox WHERE org_id = $1::text::uuid ORDER BY seq",
        &[&org],
    )
    .await;
    assert_eq!(ids.len(), statuses.len());
    for (id, status) in ids.iter().zip(statuses) {
        pg.execute(
            "UPDATE deliveries SET
                 state = (CASE WHEN $2::text IN ('succeeded', 'dead', 'skipped') THEN $2::text
                               ELSE 'out' END)::delivery_state,
                 retrying = $2::text = 'failed', due_at = NULL
             WHERE delivery_id = $1::text::uuid",
            &[id, &status],
        )
        .await
        .unwrap();
    }
    let cookie = sign_in(&app, &org).await;
    for (id, status) in ids.iter().zip(statuses) {
        let (code, html) = get(&app, Some(&cookie), &format!("/console/deliveries/{id}")).await;
        assert_eq!(code, 200);
        let offered = html.contains(&format!("action=\"/console/deliveries/{id}/replay\""));
        let r = app
            .internal(
                Method::POST,
                &format!("/internal/v1/orgs/{org}/deliveries/{id}/replay"),
                None,
            )
            .await;
        let accepted = r.status() == 202;
        assert_eq!(
            offered, accepted,
            "{status}: offered {offered}, accepted {accepted}"
        );
        assert_eq!(
            accepted,
            matches!(status, "succeeded" | "dead" | "skipped"),
            "{status}"
        );
    }
}

/// docs/reliability.md, "Strangers, quotas and pages": every page names the org; a link to another org asks before
/// switching (and switches only on the button); signing in again ends the previous session.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_names_its_org_and_asks_before_switching() {
    let app = app().await;
    let (org_a, _) = app.org().await;
    let r = app
        .internal(
            Method::POST,
            "/internal/v1/orgs",
            Some(json!({"name": "Beta <Ltd>"})),
        )
        .await;
    let org_b = r.json::<Value>().await.unwrap()["org"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cookie_a = sign_in(&app, &org_a).await;
    for page in [
        "/console",
        "/console/tokens",
        "/console/deliveries",
        "/console/deliveries/replay-dead",
    ] {
        let (status, html) = get(&app, Some(&cookie_a), page).await;
        assert_eq!(status, 200, "{page}");
        assert!(
            html.contains("<strong data-org>Acme</strong>"),
            "{page}: {html}"
        );
    }
    // B's link while signed in to A: a page naming both, nothing switched yet.
    let link_b = mint(&app, &org_b).await;
    let r = browser()
        .get(&link_b)
        .header(header::COOKIE, &cookie_a)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers().get(header::SET_COOKIE).is_none(),
        "no new session yet"
    );
    let html = r.text().await.unwrap();
    assert!(html.contains("<strong data-org>Acme</strong>"), "{html}");
    assert!(
        html.contains("Beta &lt;Ltd&gt;"),
        "the other org, escaped: {html}"
    );
    assert!(html.contains("Switch organisation"));
    let (_, still_a) = get(&app, Some(&cookie_a), "/console").await;
    assert!(still_a.contains("data-org>Acme<"), "still in A");
    // The button: B's session replaces A's.
    let ticket = link_b.split("ticket=").nth(1).unwrap().to_owned();
    let csrf = csrf_of(&html);
    let r = browser()
        .post(format!("{}/console/login", app.public))
        .header(header::COOKIE, &cookie_a)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs([("csrf", csrf.as_str()), ("ticket", ticket.as_str())])
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie_b = r.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, html) = get(&app, Some(&cookie_b), "/console").await;
    assert_eq!(status, 200);
    assert!(html.contains("Beta &lt;Ltd&gt;"));
    assert_eq!(
        get(&app, Some(&cookie_a), "/console").await.0,
        401,
        "A's session ended"
    );
    // Signing in again (same org) ends the session it replaces too.
    let again = mint(&app, &org_b).await;
    let r = browser()
        .get(&again)
        .header(header::COOKIE, &cookie_b)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie_b2 = r.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        get(&app, Some(&cookie_b), "/console").await.0,
        401,
        "the old one is gone"
    );
    assert_eq!(get(&app, Some(&cookie_b2), "/console").await.0, 200);
}

/// `QUALIFIER_CONSOLE_FRAME_ANCESTORS`: the listed origins may frame every console
/// page, others may not (the browser test loads it from both); X-Frame-Options is left out,
/// since `DENY` would override the list in browsers that know both.
#[tokio::test(flavor = "multi_thread")]
async fn listed_origins_may_frame_the_console_and_no_other() {
    let app = TestApp::spawn_with(|c| {
        c.console_frame_ancestors = vec![
            "https://app.example.com".into(),
            "https://eu.example.com:8443".into(),
        ]
    })
    .await;
    let (org, _) = app.org().await;
    let cookie = sign_in(&app, &org).await;
    for path in [
        "/console",
        "/console/deliveries",
        "/console/events",
        "/console/nowhere",
    ] {
        let r = browser()
            .get(format!("{}{path}", app.public))
            .header(header::COOKIE, &cookie)
            .send()
            .await
            .unwrap();
        let h = r.headers();
        assert_eq!(
            h["content-security-policy"],
            "default-src 'self'; frame-ancestors https://app.example.com https://eu.example.com:8443",
            "{path}"
        );
        assert!(h.get("x-frame-options").is_none(), "{path}");
    }
}

/// The Deliveries search looks only at the signed-in org's deliveries: org B's lead,
/// event and delivery ids find nothing for org A, A's own find its row, and text that is no id
/// (markup, control characters, 10 KB) gets the field's hint, escaped.
#[tokio::test(flavor = "multi_thread")]
async fn the_search_finds_only_the_orgs_own_deliveries_and_says_what_it_takes() {
    let app = app().await;
    let (org_a, _) = app.org().await;
    let (org_b, _) = app.org().await;
    let lead_a = app.inbound_lead(&org_a, "+447700900501").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lead_b = app.inbound_lead(&org_b, "+447700900502").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let row = app
        .db
        .client()
        .await
        .query_one(
            "SELECT delivery_id::text, event_id::text FROM outbox WHERE lead_id = $1::text::uuid",
            &[&lead_b],
        )
        .await
        .unwrap();
    let (delivery_b, event_b): (String, String) = (row.get(0), row.get(1));
    let cookie = sign_in(&app, &org_a).await;
    for theirs in [&lead_b, &delivery_b, &event_b] {
        let (status, html) = get(
            &app,
            Some(&cookie),
            &format!("/console/deliveries?q={theirs}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            html.contains("No delivery of this organisation has that"),
            "{theirs}"
        );
        assert!(
            !html.contains(&format!("/console/deliveries/{delivery_b}")),
            "no row of B's"
        );
    }
    let (_, html) = get(
        &app,
        Some(&cookie),
        &format!("/console/deliveries?q={lead_a}"),
    )
    .await;
    assert!(html.contains("Deliveries matching"), "{html}");
    assert_eq!(html.matches("<tbody>").count(), 1);
    assert_eq!(
        html.matches("/console/deliveries/").count() - html.matches("replay-dead").count(),
        1
    );
    let long = "a".repeat(10_000);
    for q in [
        "%3Cscript%3Ealert(1)%3C/script%3E",
        "%00%1b%5B2J",
        "'%20OR%201=1--",
        long.as_str(),
    ] {
        let (status, html) = get(&app, Some(&cookie), &format!("/console/deliveries?q={q}")).await;
        assert_eq!(status, StatusCode::OK, "{q}");
        assert!(
            !html.contains(&"a".repeat(101)),
            "shown back at most 100 characters"
        );
        assert!(html.contains("Search takes a delivery id"), "{q}");
        assert!(!html.contains("<script>alert"), "shown escaped");
        assert!(!html.contains('\u{1b}') && !html.contains('\0'));
    }
}

/// The Webhook page's client certificate (docs/console.md): saved from the form, shown by
/// subject, issuer and expiry (never the key), warned about in its last fourteen days, refused
/// with the API's message, removed.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_certificate_is_set_shown_warned_about_and_removed_on_the_webhook_page() {
    let app = app().await;
    let (org, _) = app.org().await;
    app.internal_expect(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook"),
        Some(json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"]})),
    )
    .await;
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(html.contains("None: requests present no client certificate."));
    let csrf = csrf_of(&html);
    let ca = qualifier_testkit::receiver::TestCa::new("Receiver Corp client CA");
    let (cert, key) = ca.issue("qualifier-console", 10);
    let (_, other_key) = ca.issue("someone-else", 10);
    let path = "/console/webhook/client-certificate";
    let (status, html, _) = post(
        &app,
        &cookie,
        path,
        &[
            ("csrf", &csrf),
            ("certificate", &cert),
            ("private_key", &other_key),
        ],
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains("private_key does not match the certificate"),
        "{html}"
    );
    let (status, html, _) = post(
        &app,
        &cookie,
        path,
        &[
            ("csrf", &csrf),
            ("certificate", &cert),
            ("private_key", &key),
        ],
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("CN=qualifier-console"));
    assert!(html.contains("CN=Receiver Corp client CA"));
    assert!(
        html.contains("This certificate expires on"),
        "ten days left"
    );
    assert!(!html.contains("PRIVATE KEY"), "the key is never shown");
    let (_, html) = get(&app, Some(&cookie), "/console/webhook").await;
    assert!(html.contains("Replace client certificate") && !html.contains("PRIVATE KEY"));
    // A year ahead: no warning.
    let (fresh, fresh_key) = ca.issue("qualifier-console", 365);
    let (_, html, _) = post(
        &app,
        &cookie,
        path,
        &[
            ("csrf", &csrf),
            ("certificate", &fresh),
            ("private_key", &fresh_key),
        ],
    )
    .await;
    assert!(!html.contains("This certificate expires on"));
    let (status, html, _) = post(
        &app,
        &cookie,
        "/console/webhook/client-certificate/remove",
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(status, 200);
    assert!(html.contains("None: requests present no client certificate."));
    let r = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/webhook"),
            None,
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["webhook"]["client_certificate"], Value::Null);
}

/// A sign-in link opened a second time (a link preview, a `curl` to see what it is) says how to
/// get a new one: the link stays one-time, and the page names the way forward.
#[tokio::test(flavor = "multi_thread")]
async fn a_used_link_says_how_to_get_a_new_one() {
    let app = app().await;
    let (org, _) = app.org().await;
    let url = mint(&app, &org).await;
    let first = browser().get(&url).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let again = browser().get(&url).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
    let html = again.text().await.unwrap();
    for said in [
        "already used",
        "works once, for 10 minutes",
        "make console-link",
        "POST /internal/v1/orgs/{org}/console-sessions",
    ] {
        assert!(html.contains(said), "{said:?} not in {html}");
    }
}

/// The webhook page lists the org's other endpoints with their state and a link to their
/// deliveries; the Deliveries page filtered by one shows that endpoint's only, and keeps the
/// filter on its next page. Another org's endpoint shows nothing of it.
#[tokio::test(flavor = "multi_thread")]
async fn every_endpoint_is_listed_and_its_deliveries_chart_and_replay_are_its_own() {
    let app = app().await;
    let (org, _) = app.org().await;
    let (other, _) = app.org().await;
    let hook = json!({"url": "https://127.0.0.1:9443/hooks", "event_types": ["lead.created"]});
    app.internal_json(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook"),
        Some(hook.clone()),
    )
    .await;
    let mut second = hook.clone();
    second["description"] = json!("Data warehouse");
    second["event_types"] = json!(["lead.created", "lead.updated"]);
    let created = app
        .internal_json(
            201,
            Method::POST,
            &format!("/internal/v1/orgs/{org}/endpoints"),
            Some(second),
        )
        .await;
    let id = created["endpoint"]["id"].as_str().unwrap().to_owned();
    let theirs = app
        .internal_json(
            201,
            Method::POST,
            &format!("/internal/v1/orgs/{other}/endpoints"),
            Some(hook.clone()),
        )
        .await["endpoint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for n in 0..3 {
        app.inbound_lead(&org, &format!("+44770090061{n}")).await;
    }
    let cookie = sign_in(&app, &org).await;
    // Endpoints lists every endpoint, the primary first and marked.
    let (status, html) = get(&app, Some(&cookie), "/console/endpoints").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<h1>Endpoints</h1>"), "{html}");
    let primary_row = html.find("data-primary").expect("the primary is marked");
    assert!(primary_row < html.find("Data warehouse").unwrap(), "{html}");
    assert!(
        html[primary_row..].contains("href=\"/console\""),
        "the primary's page"
    );
    assert!(html.contains(&format!("href=\"/console/endpoints/{id}\"")));
    assert!(html.contains("lead.created, lead.updated"));
    assert!(html.contains(&format!("/console/deliveries?endpoint_id={id}")));
    assert!(
        !html.contains(&theirs),
        "another org's endpoint is not shown"
    );

    let (_, list) = get(
        &app,
        Some(&cookie),
        &format!("/console/deliveries?endpoint_id={id}&limit=2"),
    )
    .await;
    let ids: Vec<String> = qualifier_testkit::sql::column(
        &app.db.client().await,
        "SELECT delivery_id::text FROM deliveries WHERE endpoint_id = $1::text::uuid",
        &[&id],
    )
    .await;
    assert_eq!(ids.len(), 3);
    let shown = ids.iter().filter(|d| list.contains(d.as_str())).count();
    assert_eq!(shown, 2, "a page of two of that endpoint's deliveries");
    assert!(
        list.contains(&format!("endpoint_id={id}&amp;cursor=")),
        "the next page keeps the endpoint: {list}"
    );
    let (_, primary) = get(&app, Some(&cookie), "/console/deliveries").await;
    assert!(ids.iter().all(|d| !primary.contains(d.as_str())));

    // The chart above each list counts that list's endpoint: three deliveries each, not the
    // org's six; the page names the endpoint by its description and links to its settings.
    let in_chart = |page: &str| -> i64 {
        [
            "data-succeeded",
            "data-dead",
            "data-skipped",
            "data-in-progress",
        ]
        .iter()
        .map(|a| {
            let at = page.find(&format!("{a}=\"")).unwrap() + a.len() + 2;
            page[at..]
                .split('"')
                .next()
                .unwrap()
                .parse::<i64>()
                .unwrap()
        })
        .sum()
    };
    let (_, theirs_list) = get(
        &app,
        Some(&cookie),
        &format!("/console/deliveries?endpoint_id={id}"),
    )
    .await;
    assert_eq!(in_chart(&theirs_list), 3, "{theirs_list}");
    assert_eq!(in_chart(&primary), 3, "{primary}");
    assert!(
        theirs_list.contains("<strong>Data warehouse</strong>"),
        "{theirs_list}"
    );
    assert!(theirs_list.contains(&format!(
        "href=\"/console/endpoints/{id}\">Endpoint settings"
    )));
    assert!(
        primary.contains("href=\"/console\">Endpoint settings"),
        "{primary}"
    );

    // "Replay all dead" under an endpoint's list replays that endpoint's dead deliveries, and
    // says whose they are; the primary's are not touched.
    let pg = app.db.client().await;
    pg.execute(
        "UPDATE deliveries SET state = 'dead', due_at = NULL WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await
    .unwrap();
    let replay = format!("/console/deliveries/replay-dead?endpoint_id={id}");
    let (_, theirs_list) = get(
        &app,
        Some(&cookie),
        &format!("/console/deliveries?endpoint_id={id}"),
    )
    .await;
    assert!(
        theirs_list.contains(&format!("href=\"{replay}\"")),
        "{theirs_list}"
    );
    let (status, question) = get(&app, Some(&cookie), &replay).await;
    assert_eq!(status, 200);
    assert!(
        question.contains("<strong>3</strong> dead deliveries"),
        "{question}"
    );
    assert!(question.contains("Data warehouse"), "{question}");
    let csrf = csrf_of(&question);
    let (status, _, loc) = post(
        &app,
        &cookie,
        "/console/deliveries/replay-dead",
        &[("csrf", &csrf), ("endpoint_id", &id)],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(
        loc.as_deref(),
        Some(format!("/console/deliveries?endpoint_id={id}&done=replayed-all").as_str())
    );
    let dead_per_endpoint: Vec<(String, i64)> = pg
        .query(
            "SELECT (endpoint_id = $2::text::uuid)::text, count(*) FROM deliveries
             WHERE org_id = $1::text::uuid AND state = 'dead' GROUP BY 1 ORDER BY 1",
            &[&org, &id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        dead_per_endpoint,
        [("false".to_owned(), 3)],
        "the endpoint's three replayed, the primary's three still dead"
    );
    let (status, _) = get(
        &app,
        Some(&cookie),
        "/console/deliveries/replay-dead?endpoint_id=not-an-id",
    )
    .await;
    assert_eq!(status, 404);
}

/// Another org's endpoint id on any endpoint page or form of the console: `Endpoint not found`,
/// and that endpoint unchanged; the form that adds an endpoint shows the limit and a refused
/// description beside its field, saving nothing.
#[tokio::test(flavor = "multi_thread")]
async fn endpoint_pages_find_only_the_orgs_own_endpoints_and_refuse_on_the_form() {
    let app = app().await;
    let (org, _) = app.org().await;
    let (other, _) = app.org().await;
    let hook = json!({"url": "https://127.0.0.1:9443/hooks", "event_types": ["lead.created"]});
    let endpoints = |o: &str| format!("/internal/v1/orgs/{o}/endpoints");
    let theirs = app
        .internal_json(201, Method::POST, &endpoints(&other), Some(hook.clone()))
        .await["endpoint"]
        .clone();
    let theirs_id = theirs["id"].as_str().unwrap().to_owned();

    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console").await;
    let csrf = csrf_of(&html);
    for path in [
        format!("/console/endpoints/{theirs_id}"),
        format!("/console/endpoints/{theirs_id}/delete"),
        "/console/endpoints/not-an-id".to_owned(),
        "/console/endpoints/not-an-id/delete".to_owned(),
    ] {
        let (status, html) = get(&app, Some(&cookie), &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(html.contains("Endpoint not found"), "{html}");
    }
    let form = [
        ("csrf", csrf.as_str()),
        ("url", "https://127.0.0.1:9443/mine"),
        ("event_types", "lead.qualified"),
        ("enabled", "true"),
        ("description", "taken over"),
        ("grace_seconds", "0"),
    ];
    for action in [
        "",
        "/rotate",
        "/test",
        "/check",
        "/client-certificate/remove",
        "/delete",
    ] {
        let path = format!("/console/endpoints/{theirs_id}{action}");
        let (status, _, _) = post(&app, &cookie, &path, &form).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let after = app
        .internal_json(
            200,
            Method::GET,
            &format!("/internal/v1/orgs/{other}/endpoints/{theirs_id}"),
            None,
        )
        .await["endpoint"]
        .clone();
    assert_eq!(after["url"], theirs["url"]);
    assert_eq!(after["event_types"], theirs["event_types"]);
    assert_eq!(after["updated_at"], theirs["updated_at"]);
    let their_deliveries = app
        .internal_json(
            200,
            Method::GET,
            &format!("/internal/v1/orgs/{other}/deliveries"),
            None,
        )
        .await;
    assert_eq!(
        their_deliveries["deliveries"],
        json!([]),
        "no test event was sent"
    );

    // A description with a control character: the form again, its message beside the field.
    let mut bad = form.to_vec();
    bad.retain(|(k, _)| *k != "description");
    bad.push(("description", "ware\u{7}house"));
    let (status, html, _) = post(&app, &cookie, "/console/endpoints", &bad).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(html.contains("id=\"description-error\""), "{html}");
    // Up to the limit through the API, then the form says why it cannot add one more.
    for n in 0..10 {
        let mut e = hook.clone();
        e["url"] = json!(format!("https://127.0.0.1:9443/hooks/{n}"));
        app.internal_json(201, Method::POST, &endpoints(&org), Some(e))
            .await;
    }
    let (status, html, _) = post(&app, &cookie, "/console/endpoints", &form).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(html.contains("Endpoint limit reached"), "{html}");
    assert!(
        html.contains("value=\"https://127.0.0.1:9443/mine\""),
        "shown as sent"
    );
    let listed = app
        .internal_json(200, Method::GET, &endpoints(&org), None)
        .await;
    assert_eq!(listed["endpoints"].as_array().unwrap().len(), 10);
}
