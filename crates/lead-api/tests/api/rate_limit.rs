//! The shared token bucket: 120 at once, then 429 with Retry-After; exact across replicas.

use std::time::Instant;

use qualifier_testkit::telemetry::metric;
use reqwest::Method;

use crate::helpers::{TestApp, client, config, error_of};

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_token_gets_120_then_429_and_refusals_cost_nothing() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let path = format!("/api/v1/leads/{}", uuid::Uuid::new_v4());
    let metrics_before = app.metrics().await;
    let started = Instant::now();
    for i in 0..120u32 {
        let r = app.public(Method::GET, &path, &token, None).await;
        assert_eq!(
            r.status(),
            404,
            "request {i} is admitted (and finds nothing)"
        );
    }
    // The 121st within that minute is refused. A slow machine may have refilled a request or
    // two (2/s) by then, which are admitted first; never more than the refill allows.
    let mut refilled = 0u32;
    let r = loop {
        let r = app.public(Method::GET, &path, &token, None).await;
        if r.status() != 404 {
            break r;
        }
        refilled += 1;
        let allowed = (2.0 * started.elapsed().as_secs_f64()).ceil() as u32 + 1;
        assert!(
            refilled <= allowed,
            "{refilled} admitted beyond the bucket after {:?}",
            started.elapsed()
        );
    };
    assert_eq!(r.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(r.headers()["x-ratelimit-limit"], "120");
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(error_of(r).await, (429, "Rate limit exceeded".into()));
    // Operators see the refusal, and the 429 under its route pattern (not the raw path).
    let after = app.metrics().await;
    let refused = |p: &str| metric(p, "qualifier_rate_limited_total", &[]);
    assert!(refused(&after) >= refused(&metrics_before) + 1.0);
    let route_429 = [("route", "/api/v1/leads/{lead_id}"), ("status", "429")];
    assert!(metric(&after, "qualifier_http_requests_total", &route_429) >= 1.0);
    assert!(!after.contains(&path), "no per-lead series");
    // An unknown token is refused without touching anyone's bucket.
    app.public_expect(
        401,
        Method::GET,
        &path,
        "qlf_org_0000000000000000000000000000000000000000",
        None,
    )
    .await;
    // Waiting for Retry-After refills enough for one more request.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        app.public(Method::GET, &path, &token, None).await.status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_on_one_database_admit_no_more_than_one_bucket() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    // A second lead-api process-equivalent: its own pool and servers, the same database.
    let second = lead_api::start(config(&app.db, &app.topo)).await.unwrap();
    let urls = [app.public.clone(), format!("http://{}", second.public_addr)];
    let http = client();
    let path = format!("/api/v1/leads/{}", uuid::Uuid::new_v4());

    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..300usize {
        let url = format!("{}{path}", urls[i % 2]);
        tasks.push(tokio::spawn(qualifier_testkit::status_of(
            http.get(url).bearer_auth(&token),
        )));
    }
    let mut admitted = 0u32;
    let mut limited = 0u32;
    for t in tasks {
        match t.await.unwrap() {
            404 => admitted += 1,
            429 => limited += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The bucket holds 120 and refills 2/s: nothing beyond that may get through, whichever
    // instance served the request.
    let ceiling = 120 + (2.0 * elapsed).ceil() as u32;
    assert!(
        admitted <= ceiling,
        "admitted {admitted} > {ceiling} in {elapsed:.2}s"
    );
    assert!(
        admitted >= 120,
        "the full bucket was available: admitted {admitted}"
    );
    assert_eq!(admitted + limited, 300);
    second.stop(false).await;
}

/// A refused GET of a lead that exists shows nothing of it: 404 for another org's token, 429
/// with the documented body only once the bucket is empty, 401 for an unknown token. (Guards any
/// future merging of the admission and the read into one round trip.)
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_get_shows_nothing_of_an_existing_lead() {
    let app = TestApp::spawn().await;
    let (_, other) = app.org().await;
    let (_, token, lead) = app.org_with_lead("+447700900555").await;
    let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());
    assert_eq!(
        app.public_error(Method::GET, &path, &other, None).await,
        (404, "Lead not found".into())
    );
    let mut ok = 0;
    let r = loop {
        let r = app.public(Method::GET, &path, &token, None).await;
        if r.status() != 200 {
            break r;
        }
        ok += 1;
        assert!(ok <= 130, "never limited");
    };
    assert!(ok >= 120, "{ok}");
    assert_eq!(error_of(r).await, (429, "Rate limit exceeded".into()));
    assert_eq!(
        app.public_error(
            Method::GET,
            &path,
            "qlf_org_0000000000000000000000000000000000000000",
            None,
        )
        .await,
        (401, "Unauthorized".into())
    );
}

/// One admission statement for many requests: a batch presenting the same token several times
/// takes exactly what its bucket holds, in order, and unknown or revoked tokens in the same batch
/// are refused without touching anyone's bucket.
#[tokio::test(flavor = "multi_thread")]
async fn one_batch_takes_exactly_what_the_bucket_holds() {
    use qualifier_store::tokens::Admission;
    let app = TestApp::spawn().await;
    let (org_id, token) = app.org().await;
    let (_, other) = app.org().await;
    let revoked = {
        let r = app
            .internal(
                Method::POST,
                &format!("/internal/v1/orgs/{org_id}/tokens"),
                None,
            )
            .await;
        let v: serde_json::Value = r.json().await.unwrap();
        let (id, t) = (
            v["token"]["id"].as_str().unwrap(),
            v["secret"].as_str().unwrap(),
        );
        app.internal_expect(
            204,
            Method::DELETE,
            &format!("/internal/v1/orgs/{org_id}/tokens/{id}"),
            None,
        )
        .await;
        t.to_owned()
    };
    let store = app.store();
    // Leave 3.2 units in the bucket, last touched an hour from now: no time has passed since
    // for the refill, so a slow machine cannot add a unit during the test.
    app.db
        .client()
        .await
        .execute(
            "UPDATE api_tokens SET bucket_level = 3.2, bucket_updated_at = clock_timestamp() + interval '1 hour'
             WHERE token_hash = sha256($1::text::bytea)",
            &[&token],
        )
        .await
        .unwrap();
    let h = qualifier_store::secrets::hash_token;
    let batch = vec![
        h(&token),
        h(&other),
        h(&token),
        h("qlf_org_0000000000000000000000000000000000000000"),
        h(&token),
        h(&revoked),
        h(&token),
        h(&token),
    ];
    let got = store.admit_batch(batch, 120).await.unwrap();
    assert_eq!(got.len(), 8, "one answer per request, in order");
    let ours: Vec<&Admission> = [0, 2, 4, 6, 7].iter().map(|&i| &got[i]).collect();
    let remaining: Vec<Option<u32>> = ours
        .iter()
        .map(|a| match a {
            Admission::Allowed { remaining, .. } => Some(*remaining),
            _ => None,
        })
        .collect();
    // 3.2 units: the first three are admitted (2, 1, 0 left), the last two refused.
    assert_eq!(remaining, vec![Some(2), Some(1), Some(0), None, None]);
    assert!(matches!(
        ours[3],
        Admission::Limited {
            retry_after_secs: 1,
            ..
        }
    ));
    assert!(
        matches!(got[1], Admission::Allowed { remaining: 119, .. }),
        "the other org's full bucket: {:?}",
        got[1]
    );
    assert_eq!(got[3], Admission::Unauthorized);
    assert_eq!(got[5], Admission::Unauthorized);
    // The refusals consumed nothing: 0.2 units are left.
    let level: f64 = qualifier_testkit::sql::one(
        &app.db.client().await,
        "SELECT bucket_level FROM api_tokens WHERE token_hash = sha256($1::text::bytea)",
        &[&token],
    )
    .await;
    assert!((level - 0.2).abs() < 1e-9, "bucket left at {level}");
}

/// GETs are read in batches across orgs: org B's requests for org A's lead, sent at the same
/// time as A's own (so they share statements), are 404 every time and A's are 200 every time.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reads_by_two_orgs_never_cross() {
    let app = TestApp::spawn().await;
    let (other_org, other) = app.org().await;
    let (_, token, lead) = app.org_with_lead("+447700900556").await;
    let theirs = app.inbound_lead(&other_org, "+447700900557").await;
    let http = client();
    let mut tasks = Vec::new();
    for i in 0..100usize {
        let (who, id) = match i % 3 {
            0 => (token.clone(), lead["id"].as_str().unwrap().to_owned()),
            1 => (other.clone(), lead["id"].as_str().unwrap().to_owned()),
            _ => (other.clone(), theirs["id"].as_str().unwrap().to_owned()),
        };
        let url = format!("{}/api/v1/leads/{id}", app.public);
        let http = http.clone();
        tasks.push(tokio::spawn(async move {
            let r = http.get(url).bearer_auth(who).send().await.unwrap();
            let status = r.status().as_u16();
            let body: serde_json::Value = r.json().await.unwrap();
            (i % 3, status, body)
        }));
    }
    for t in tasks {
        let (kind, status, body) = t.await.unwrap();
        match kind {
            0 => assert_eq!((status, &body["lead"]["id"]), (200, &lead["id"])),
            1 => assert_eq!(
                (status, body["error"].as_str()),
                (404, Some("Lead not found")),
                "{body}"
            ),
            _ => assert_eq!((status, &body["lead"]["id"]), (200, &theirs["id"])),
        }
    }
}
