//! Delivery behaviour as a receiver and an operator see it.

use std::time::Duration;

use qualifier_testkit::receiver::Behaviour;
use reqwest::Method;
use serde_json::json;

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_reaches_the_receiver_signed_with_the_contract_headers() {
    let s = Stack::start().await;
    let lead = s.inbound("+447700900123").await;
    let id = lead["id"].as_str().unwrap();
    s.close_lead(id, None).await;
    let got = s.receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2, "lead.created and lead.stage_changed");
    let closed = got
        .iter()
        .find(|g| g.header("x-qualifier-event") == "lead.stage_changed")
        .expect("stage_changed");
    assert_eq!(
        closed.verified_with,
        Some(0),
        "signature verifies with the org's secret"
    );
    assert_eq!(closed.header("content-type"), "application/json");
    assert_eq!(closed.header("user-agent"), "Qualifier-Webhooks/1");
    let delivery_id = closed.header("x-qualifier-delivery").to_owned();
    assert!(uuid::Uuid::parse_str(&delivery_id).is_ok());
    let ts = closed.header("x-qualifier-timestamp");
    assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts}");
    let env = closed.json();
    assert_eq!(env["type"], "lead.stage_changed");
    assert_eq!(env["data"]["previous_stage"], "qualifying");
    assert_eq!(env["data"]["lead"]["qualification_stage"], "closed");
    assert_eq!(env["org_id"], s.org.as_str());

    // The body is exactly the bytes stored with the change.
    let row =
        s.db.client()
            .await
            .query_one(
                "SELECT payload FROM outbox WHERE event_type = 'lead.stage_changed'",
                &[],
            )
            .await
            .unwrap();
    assert_eq!(row.get::<_, Vec<u8>>(0), closed.body);

    let d = s.wait_status(&delivery_id, "succeeded", WAIT).await;
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["last_status_code"], 200);
    assert_eq!(d["event_type"], "lead.stage_changed");
    assert_eq!(d["attempt_log"][0]["attempt"], 1);
    assert_eq!(d["attempt_log"][0]["status_code"], 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn five_failed_attempts_go_dead_and_replay_redelivers_under_the_same_id() {
    let s = Stack::start().await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    s.inbound("+447700900123").await;
    let got = s.receiver.wait_for(5, WAIT).await;
    assert_eq!(got.len(), 5);
    let id = got[0].header("x-qualifier-delivery").to_owned();
    for g in &got {
        assert_eq!(
            g.header("x-qualifier-delivery"),
            id,
            "every retry reuses the delivery id"
        );
        assert_eq!(g.body, got[0].body, "retried body bytes are identical");
        assert_eq!(g.verified_with, Some(0));
    }
    let d = s.wait_status(&id, "dead", WAIT).await;
    assert_eq!(d["attempts"], 5);
    assert_eq!(d["last_status_code"], 500);
    assert_eq!(d["last_error"], "HTTP 500");
    assert_eq!(d["attempt_log"].as_array().unwrap().len(), 5);
    let dead_q = s.topo.topology().dead_queue();
    assert_eq!(
        s.wait_queue_depth(&dead_q, 1, WAIT).await,
        1,
        "the dead-letter queue says which delivery died"
    );
    // Its headers, not the event's body: the body is in the database alone, where retention
    // and erasure reach it.
    let (dead_id, dead_body) = s.take_one(&dead_q).await;
    assert_eq!(dead_id, id);
    assert!(
        dead_body.is_empty(),
        "a dead letter carries no personal data"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(s.receiver.received().len(), 5, "no sixth attempt");

    s.receiver.set_behaviour(Behaviour::Ok);
    let path = format!("/internal/v1/orgs/{}/deliveries/{id}/replay", s.org);
    let r = s.request(Method::POST, &path, None).await;
    assert_eq!(r.status(), 202);
    let got = s.receiver.wait_for(6, WAIT).await;
    assert_eq!(got[5].header("x-qualifier-delivery"), id);
    assert_eq!(got[5].body, got[0].body);
    let d = s.wait_status(&id, "succeeded", WAIT).await;
    assert_eq!(d["attempts"], 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_of_a_delivery_in_progress_is_refused() {
    let s = Stack::start_with(|c| c.timeout_ms = 1000).await;
    s.receiver
        .set_behaviour(Behaviour::Hang(Duration::from_secs(3)));
    s.inbound("+447700900123").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    let id = got[0].header("x-qualifier-delivery").to_owned();
    let path = format!("/internal/v1/orgs/{}/deliveries/{id}/replay", s.org);
    let r = s.request(Method::POST, &path, None).await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["error"],
        "Delivery is still in progress"
    );
    let path = format!(
        "/internal/v1/orgs/{}/deliveries/{}",
        s.org,
        uuid::Uuid::new_v4()
    );
    let r = s.request(Method::GET, &path, None).await;
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_secret_signs_deliveries_already_queued() {
    let s = Stack::start().await;
    s.receiver.script(vec![Behaviour::Status(503)]);
    s.inbound("+447700900123").await;
    let first = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(first[0].verified_with, Some(0));
    let rotated = s
        .org_call(Method::POST, "webhook/rotate-secret", None)
        .await;
    let new_secret = rotated["signing_secret"].as_str().unwrap().to_owned();
    s.receiver.set_secrets(vec![s.secret.clone(), new_secret]);
    let got = s.receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[1].verified_with,
        Some(1),
        "the retry is signed with the new secret only"
    );
    assert_eq!(got[1].body, got[0].body);
}

#[tokio::test(flavor = "multi_thread")]
async fn disabling_skips_deliveries_already_queued() {
    let s = Stack::start().await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    s.inbound("+447700900123").await;
    let first = s.receiver.wait_for(1, WAIT).await;
    let id = first[0].header("x-qualifier-delivery").to_owned();
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": ["lead.created"], "enabled": false}))
        .await;
    let d = s.wait_status(&id, "skipped", WAIT).await;
    assert_eq!(d["last_error"], "webhook disabled");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.receiver.received().len(), 1, "no request after disabling");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_subscribed_event_types_are_sent() {
    let s = Stack::start().await;
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": ["lead.qualified"], "enabled": true}))
        .await;
    let lead = s.inbound("+447700900123").await;
    let path = format!(
        "/internal/v1/orgs/{}/leads/{}",
        s.org,
        lead["id"].as_str().unwrap()
    );
    s.call(
        Method::PATCH,
        &path,
        Some(json!({"qualification_stage": "qualified"})),
    )
    .await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-qualifier-event"), "lead.qualified");
    // The other two events end as skipped, without a request.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let all = s.deliveries().await;
        let skipped = all.iter().filter(|d| d["status"] == "skipped").count();
        if skipped == 2 {
            let types: Vec<_> = all
                .iter()
                .filter(|d| d["status"] == "skipped")
                .map(|d| d["event_type"].clone())
                .collect();
            assert!(
                types.contains(&json!("lead.created"))
                    && types.contains(&json!("lead.stage_changed"))
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{all:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.receiver.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_resolving_to_a_private_address_is_refused_at_send_time() {
    // Configuration allowed loopback (as a misconfigured or rebinding DNS might), but the
    // delivery worker has no allow-list: every attempt is refused before connecting.
    let s = Stack::start_with(|c| c.allow_cidrs = vec![]).await;
    let port = s.receiver.port();
    let url = format!("https://localhost:{port}/hooks/qualifier");
    s.put_webhook(json!({"url": url, "event_types": ["lead.created"], "enabled": true}))
        .await;
    s.inbound("+447700900123").await;
    let deadline = std::time::Instant::now() + WAIT;
    let d = loop {
        let all = s.deliveries().await;
        if let Some(d) = all.first().filter(|d| d["status"] == "dead") {
            break d.clone();
        }
        assert!(std::time::Instant::now() < deadline, "{all:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let error = d["last_error"].as_str().unwrap();
    assert!(
        error.contains("url must resolve only to public addresses"),
        "{d}"
    );
    // The delivery log is the org's to read: it must not learn what the name resolved to.
    assert!(
        !error.contains("127.0.0.1") && !error.contains("::1"),
        "{d}"
    );
    assert_eq!(s.receiver.received().len(), 0, "no connection was made");

    // An IP literal is judged too.
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": ["lead.created"], "enabled": true}))
        .await;
    s.inbound("+447700900999").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(s.receiver.received().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn redirects_are_failures_and_are_not_followed() {
    let s = Stack::start().await;
    s.receiver.script(vec![Behaviour::Status(302)]);
    s.inbound("+447700900123").await;
    let got = s.receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2, "the 302 was retried, not followed");
    let id = got[0].header("x-qualifier-delivery").to_owned();
    let d = s.wait_status(&id, "succeeded", WAIT).await;
    assert_eq!(d["attempt_log"][0]["status_code"], 302);
    assert_eq!(
        d["attempt_log"][0]["error"],
        "HTTP 302 (redirects are not followed)"
    );
    assert_eq!(d["attempts"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_signing_secret_fails_attempts_instead_of_spinning() {
    // A worker started with another QUALIFIER_SECRET_KEY cannot open the org's secret.
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    let other =
        qualifier_store::SecretKey::from_base64(&qualifier_store::SecretKey::generate_base64())
            .unwrap();
    let cfg = crate::stack::delivery_config(&s.db, &s.topo, &other, &s.receiver);
    s.delivery = Some(webhook_delivery::start(cfg).await.unwrap());

    s.inbound("+447700900777").await;
    let id = s.deliveries().await[0]["id"].as_str().unwrap().to_owned();
    let d = s.wait_status(&id, "dead", WAIT).await;
    assert_eq!(d["attempts"], 5, "each try used an attempt: {d}");
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .starts_with("signing secret unreadable"),
        "{d}"
    );
    assert!(
        s.receiver.received().is_empty(),
        "nothing unsigned was sent"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "B must finish inside A's 3 s timeout: make test runs it alone, after the rest"]
async fn org_b_keeps_flowing_while_org_a_hangs() {
    // 8 slots, at most 2 per org; A's endpoint hangs until the 3 s timeout.
    let s = Stack::start_with(|c| {
        c.org_concurrency = 2;
        c.timeout_ms = 3000;
    })
    .await;
    let b = crate::stack::SecondOrg::add(&s).await;
    s.receiver
        .set_behaviour(Behaviour::Hang(Duration::from_secs(10)));
    // A floods first: 12 events, enough to fill every slot of the process without the cap.
    for i in 0..12 {
        s.inbound(&format!("+4477009001{i:02}")).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    for i in 0..10 {
        b.inbound(&s, &format!("+4477009002{i:02}")).await;
    }
    let got = b.receiver.wait_for(10, WAIT).await;
    let b_took = started.elapsed();
    assert_eq!(got.len(), 10, "all of B's events arrive");
    assert!(got.iter().all(|g| g.verified_with == Some(0)));
    // B finished while A's first attempts were still hanging: not one of them has timed out
    // yet, so B never waited for an A slot to free up.
    let a = s.deliveries().await;
    assert!(
        a.iter().all(|d| d["attempts"] == 0),
        "B took {b_took:?}; A's attempts had already ended: {a:?}"
    );
    // A's extra messages waited parked, without using an attempt, and A still gets through once
    // its endpoint recovers.
    s.receiver.set_behaviour(Behaviour::Ok);
    for d in &a {
        s.wait_status(
            d["id"].as_str().unwrap(),
            "succeeded",
            Duration::from_secs(30),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_on_429_and_503_delays_the_next_attempt_at_least_that_long() {
    let s = Stack::start().await; // retry waits are 100 ms in tests
    for code in [429u16, 503] {
        s.receiver
            .script(vec![Behaviour::RetryAfter(code, 2), Behaviour::Ok]);
        let before = s.receiver.received().len();
        s.inbound(&format!("+44770090{code}")).await;
        let got = s.receiver.wait_for(before + 2, WAIT).await;
        let (first, second) = (&got[before], &got[before + 1]);
        assert_eq!(
            first.header("x-qualifier-delivery"),
            second.header("x-qualifier-delivery")
        );
        let gap = second.at - first.at;
        assert!(
            gap >= Duration::from_secs(2),
            "{code}: the second attempt came {gap:?} after the first, before Retry-After"
        );
    }
    // Retry-After is honoured within the 5-attempt budget: both deliveries succeeded on their
    // second attempt.
    for d in s.deliveries().await {
        let d = s
            .wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
            .await;
        assert_eq!(d["attempts"], 2, "{d}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sealed_secret_copied_to_another_orgs_row_does_not_open_there() {
    let s = Stack::start().await;
    let beta = crate::stack::SecondOrg::add(&s).await;
    // Org A's sealed secret written over org B's (a bad restore, an injection): B's deliveries
    // must not be signed with A's secret, nor with anything else.
    s.db.client()
        .await
        .batch_execute(&format!(
            "UPDATE webhooks SET secret_sealed =
                 (SELECT secret_sealed FROM webhooks WHERE org_id = '{}')
             WHERE org_id = '{}'",
            s.org, beta.org
        ))
        .await
        .unwrap();
    beta.inbound(&s, "+447700900778").await;
    let list = s
        .call(
            Method::GET,
            &format!("/internal/v1/orgs/{}/deliveries", beta.org),
            None,
        )
        .await;
    let id = list["deliveries"][0]["id"].as_str().unwrap().to_owned();
    let d = s.wait_status_in(&beta.org, &id, "dead", WAIT).await;
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .starts_with("signing secret unreadable"),
        "{d}"
    );
    assert!(beta.receiver.received().is_empty(), "nothing was sent");
    // Org A, whose row it is, still delivers.
    s.inbound("+447700900779").await;
    s.receiver.wait_for(1, WAIT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_unbound_secret_is_resealed_to_its_org_at_start() {
    let mut s = Stack::start().await;
    let key = qualifier_store::SecretKey::from_base64(&s.key_b64).unwrap();
    // A secret sealed the old way (no associated data), as rows written before this version,
    // in a database that (like any from before secrets were bound) may still hold such secrets.
    let legacy = key.seal_legacy(&s.secret);
    let client = s.db.client().await;
    client
        .execute("UPDATE secret_format SET unbound_allowed = true", &[])
        .await
        .unwrap();
    client
        .execute(
            "UPDATE webhooks SET secret_sealed = $1 WHERE org_id = $2::text::uuid",
            &[&legacy, &s.org],
        )
        .await
        .unwrap();
    // A restart of lead-api re-seals it; deliveries never stopped meanwhile.
    s.stop_api().await;
    let api = lead_api::start(crate::stack::api_config(&s.db, &s.topo, &key))
        .await
        .unwrap();
    s.internal = format!("http://{}", api.internal_addr);
    s.api = Some(api);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let sealed: Vec<u8> = qualifier_testkit::sql::one(
            &client,
            "SELECT secret_sealed FROM webhooks WHERE org_id = $1::text::uuid",
            &[&s.org],
        )
        .await;
        if !key.is_legacy(&sealed, s.org.parse().unwrap()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never re-sealed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.inbound("+447700900780").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert!(!got.is_empty(), "the re-sealed secret still signs");
}

/// docs/reliability.md, "Strangers, quotas and pages": `qualifierctl migrate` re-seals the current and the previous secret
/// bound to their org, and from then on no unbound blob opens anywhere: one copied from an old
/// backup into another org's row (or back into its own) signs nothing.
#[tokio::test(flavor = "multi_thread")]
async fn after_migrate_no_unbound_secret_opens_current_or_previous() {
    let s = Stack::start().await;
    let beta = crate::stack::SecondOrg::add(&s).await;
    let key = qualifier_store::SecretKey::from_base64(&s.key_b64).unwrap();
    let client = s.db.client().await;
    // A database from before secrets were bound: unbound secrets allowed, A's current and previous one unbound.
    let legacy = key.seal_legacy(&s.secret);
    let legacy_previous = key.seal_legacy("qlf_whsec_previousprevioussecret00000000000");
    client
        .execute("UPDATE secret_format SET unbound_allowed = true", &[])
        .await
        .unwrap();
    client
        .execute(
            "UPDATE webhooks SET secret_sealed = $1, previous_secret_sealed = $2,
                    previous_expires_at = now() + interval '1 day'
             WHERE org_id = $3::text::uuid",
            &[&legacy, &legacy_previous, &s.org],
        )
        .await
        .unwrap();
    let out = std::process::Command::new(crate::crash::workspace_binary("qualifierctl"))
        .arg("migrate")
        .env("DATABASE_URL", &s.db.url)
        .env("QUALIFIER_SECRET_KEY", &s.key_b64)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["resealed_secrets"], 2, "current and previous: {v}");
    let row = client
        .query_one(
            "SELECT secret_sealed, previous_secret_sealed FROM webhooks WHERE org_id = $1::text::uuid",
            &[&s.org],
        )
        .await
        .unwrap();
    let org_a: uuid::Uuid = s.org.parse().unwrap();
    assert!(!key.is_legacy(&row.get::<_, Vec<u8>>(0), org_a));
    assert!(!key.is_legacy(&row.get::<_, Vec<u8>>(1), org_a));
    // Org A still delivers, signed with both (bound) secrets.
    s.inbound("+447700900790").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("webhook-signature").split(' ').count(), 2);
    // Now A's old unbound blob, from a backup, is copied into beta's row: it does not open
    // there, so nothing is signed with A's secret and sent to beta's endpoint.
    client
        .execute(
            "UPDATE webhooks SET secret_sealed = $1 WHERE org_id = $2::text::uuid",
            &[&legacy, &beta.org],
        )
        .await
        .unwrap();
    beta.inbound(&s, "+447700900791").await;
    let ds = s
        .call(
            Method::GET,
            &format!("/internal/v1/orgs/{}/deliveries", beta.org),
            None,
        )
        .await;
    let id = ds["deliveries"][0]["id"].as_str().unwrap().to_owned();
    let d = s.wait_status_in(&beta.org, &id, "dead", WAIT).await;
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .starts_with("signing secret unreadable")
    );
    assert!(
        beta.receiver.received().is_empty(),
        "nothing was sent to beta"
    );
    // And a second migrate re-seals nothing: it would bind the copied blob to beta.
    let out = std::process::Command::new(crate::crash::workspace_binary("qualifierctl"))
        .arg("migrate")
        .env("DATABASE_URL", &s.db.url)
        .env("QUALIFIER_SECRET_KEY", &s.key_b64)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["resealed_secrets"], 0);
}

/// What a receiver answers is kept per attempt: its first 4 KiB, as text without
/// control characters, and the console shows it inert. Three answers: 1 MB, one full of NUL and
/// terminal escapes, one with a script.
#[tokio::test(flavor = "multi_thread")]
async fn receiver_answers_are_kept_truncated_clean_and_shown_inert() {
    let s = Stack::start().await;
    let cookie = s.console_cookie().await;
    let mut huge = b"{\"error\": \"".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 1 << 20));
    let answers: [(Vec<u8>, &str); 3] = [
        (huge, "application/json"),
        (
            b"bad\0request\x1b[31m red \x1b]0;title\x07\r\ndone\x7f".to_vec(),
            "text/plain",
        ),
        (
            b"<script>document.title='owned'</script><img src=x onerror=alert(1)>".to_vec(),
            "text/html",
        ),
    ];
    for (i, (body, content_type)) in answers.into_iter().enumerate() {
        s.receiver.set_answer_body(Some((body, content_type)));
        s.receiver.set_behaviour(Behaviour::Status(400));
        // The earlier answers' deliveries are still being retried (400 fails them): this
        // event's delivery is the first request with an id not seen before.
        let seen: std::collections::HashSet<String> = s
            .receiver
            .received()
            .iter()
            .map(|g| g.header("x-qualifier-delivery").to_owned())
            .collect();
        s.inbound(&format!("+44770090{i:04}")).await;
        let mut id = None;
        for _ in 0..200 {
            id = s
                .receiver
                .received()
                .iter()
                .map(|g| g.header("x-qualifier-delivery").to_owned())
                .find(|d| !seen.contains(d));
            if id.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let id = id.expect("the new event's delivery arrived");
        let mut d = s.delivery_in(&s.org, &id).await;
        for _ in 0..100 {
            if d["attempt_log"].as_array().is_some_and(|a| !a.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            d = s.delivery_in(&s.org, &id).await;
        }
        let entry = &d["attempt_log"][0];
        let kept = entry["response_body"].as_str().unwrap();
        assert!(kept.len() <= 4096, "kept {} bytes", kept.len());
        assert!(
            !kept
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{kept:?}"
        );
        let headers: Vec<(String, String)> =
            serde_json::from_value(entry["request_headers"].clone()).unwrap();
        assert!(
            headers.iter().any(|(k, v)| k == "webhook-id" && *v == id),
            "{headers:?}"
        );
        let url = format!("{}/console/deliveries/{id}", s.public);
        let page = qualifier_testkit::text_200(s.http.get(url).header("cookie", &cookie)).await;
        match i {
            0 => {
                assert_eq!(kept.len(), 4096);
                assert!(page.contains(&"x".repeat(4000)));
                assert!(
                    page.len() < 64 * 1024,
                    "the page holds the excerpt, not the megabyte"
                );
            }
            1 => {
                assert_eq!(kept, "badrequest[31m red ]0;title\ndone");
                assert!(!page.contains('\u{1b}') && !page.contains('\0'));
            }
            _ => {
                assert!(kept.contains("<script>"), "stored as sent, as text");
                assert!(
                    page.contains("&lt;script&gt;document.title="),
                    "shown escaped"
                );
                assert!(!page.contains("<script>document"), "never as markup");
                assert!(!page.contains("<img src=x"), "never as markup");
            }
        }
        assert!(page.contains("Response body") && page.contains("Payload"));
    }
}
