//! Webhook settings: creation shows the secret once, the secret is sealed at rest, rotation, and
//! the endpoint URL rules.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestApp;

const PUBLIC_URL: &str = "https://93.184.216.34/hooks/qualifier";

/// The signing secret's bytes as stored (the test's one webhook).
async fn stored_secret(app: &TestApp) -> Vec<u8> {
    let c = app.db.client().await;
    qualifier_testkit::sql::one(&c, "SELECT secret_sealed FROM webhooks", &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn create_shows_secret_once_then_get_and_update_never_do() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let path = format!("/internal/v1/orgs/{org}/webhook");
    assert_eq!(
        app.internal_error(Method::GET, &path, None).await,
        (404, "Webhook not configured".into())
    );

    let body = json!({"url": PUBLIC_URL, "event_types": ["lead.stage_changed", "lead.created", "lead.created"], "enabled": true});
    let v = app.internal_json(200, Method::PUT, &path, Some(body)).await;
    let secret = v["signing_secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("qlf_whsec_") && secret.len() >= 42);
    assert_eq!(v["webhook"]["url"], PUBLIC_URL);
    assert_eq!(
        v["webhook"]["event_types"],
        json!(["lead.created", "lead.stage_changed"])
    );
    assert_eq!(v["webhook"]["enabled"], true);

    let r = app
        .internal(
            Method::PUT,
            &path,
            Some(json!({"url": PUBLIC_URL, "event_types": ["handoff.created"], "enabled": false})),
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert!(v.get("signing_secret").is_none());
    assert_eq!(v["webhook"]["enabled"], false);

    let r = app.internal(Method::GET, &path, None).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["webhook"]["event_types"], json!(["handoff.created"]));
    assert!(!v.to_string().contains("qlf_whsec_"));
    // The pace: no throttle and no order unless asked for; a PUT sets both, GET shows them, and
    // a PUT without them goes back to the defaults (it replaces the whole setting).
    assert!(v["webhook"]["max_per_second"].is_null(), "{v}");
    assert_eq!(v["webhook"]["ordering"], "none");
    let paced = json!({"url": PUBLIC_URL, "event_types": ["handoff.created"],
                       "max_per_second": 25, "ordering": "per_lead"});
    app.internal_expect(200, Method::PUT, &path, Some(paced))
        .await;
    let v: Value = app
        .internal(Method::GET, &path, None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["webhook"]["max_per_second"], 25);
    assert_eq!(v["webhook"]["ordering"], "per_lead");
    let plain =
        json!({"url": PUBLIC_URL, "event_types": ["handoff.created"], "max_per_second": null});
    let v: Value = app
        .internal(Method::PUT, &path, Some(plain))
        .await
        .json()
        .await
        .unwrap();
    assert!(v["webhook"]["max_per_second"].is_null(), "{v}");
    assert_eq!(v["webhook"]["ordering"], "none");

    // Sealed at rest: the stored bytes do not contain the secret.
    let sealed = stored_secret(&app).await;
    assert!(!sealed.windows(secret.len()).any(|w| w == secret.as_bytes()));

    let rotated = app
        .internal_json(200, Method::POST, &format!("{path}/rotate-secret"), None)
        .await["signing_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(rotated.starts_with("qlf_whsec_"));
    assert_ne!(rotated, secret);
    assert_ne!(stored_secret(&app).await, sealed);
}

#[tokio::test(flavor = "multi_thread")]
async fn rotate_without_webhook_and_unknown_org() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/webhook/rotate-secret"),
            None,
        )
        .await,
        (404, "Webhook not configured".into())
    );
    let missing = uuid::Uuid::new_v4();
    assert_eq!(
        app.internal_error(
            Method::PUT,
            &format!("/internal/v1/orgs/{missing}/webhook"),
            Some(json!({"url": PUBLIC_URL, "event_types": ["lead.created"]})),
        )
        .await,
        (404, "Org not found".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn endpoint_rules_refuse_non_public_and_non_https() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let path = format!("/internal/v1/orgs/{org}/webhook");
    let refused = [
        (
            "http://93.184.216.34/h",
            "url must be an absolute https URL",
        ),
        ("not a url", "url must be an absolute https URL"),
        (
            "https://localhost/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://127.0.0.1/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://2130706433/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://0x7f.1/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://0177.0.0.1/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://10.0.0.7/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://172.16.3.4/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://192.168.1.1/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://169.254.169.254/latest",
            "url must resolve only to public addresses",
        ),
        (
            "https://100.64.0.1/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://0.0.0.0/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[::1]/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[::ffff:127.0.0.1]/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[::ffff:a00:1]/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[fe80::1]/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[fd00::1]/h",
            "url must resolve only to public addresses",
        ),
        (
            "https://[64:ff9b::7f00:1]/h",
            "url must resolve only to public addresses",
        ),
    ];
    for (url, msg) in refused {
        assert_eq!(
            app.internal_error(
                Method::PUT,
                &path,
                Some(json!({"url": url, "event_types": ["lead.created"], "enabled": true})),
            )
            .await,
            (422, msg.into()),
            "{url}"
        );
    }
    for (types, msg) in [
        (
            json!([]),
            "event_types must be a non-empty list of event types",
        ),
        (
            json!("lead.created"),
            "event_types must be a non-empty list of event types",
        ),
        (
            json!(["lead.deleted"]),
            "event_types has an unknown event type: lead.deleted",
        ),
    ] {
        assert_eq!(
            app.internal_error(
                Method::PUT,
                &path,
                Some(json!({"url": PUBLIC_URL, "event_types": types})),
            )
            .await,
            (422, msg.into())
        );
    }
    let rate = "max_per_second must be an integer from 1 to 1000, or null";
    let order = "ordering must be \"none\" or \"per_lead\"";
    for (pace, msg) in [
        (json!({"max_per_second": 0}), rate),
        (json!({"max_per_second": 1001}), rate),
        (json!({"max_per_second": -5}), rate),
        (json!({"max_per_second": 2.5}), rate),
        (json!({"max_per_second": "10"}), rate),
        (json!({"ordering": "PER_LEAD"}), order),
        (json!({"ordering": ["per_lead"]}), order),
        (json!({"ordering": "per_lead\u{0}"}), order),
        (json!({"ordering": "per_lead\n"}), order),
        (json!({"max_per_second": 1e3}), rate),
        (json!({"max_per_second": u64::MAX}), rate),
    ] {
        let mut body = json!({"url": PUBLIC_URL, "event_types": ["lead.created"]});
        for (k, v) in pace.as_object().unwrap() {
            body[k] = v.clone();
        }
        assert_eq!(
            app.internal_error(Method::PUT, &path, Some(body)).await,
            (422, msg.into()),
            "{pace}"
        );
    }
    let r = app.internal(Method::GET, &path, None).await;
    assert_eq!(r.status(), 404, "nothing refused was stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_cidrs_admit_a_development_endpoint() {
    let app = TestApp::spawn_with(|c| c.allow_cidrs = vec!["127.0.0.0/8".parse().unwrap()]).await;
    let (org, _) = app.org().await;
    let path = format!("/internal/v1/orgs/{org}/webhook");
    // Inside the allowed range, then a private address outside it.
    for (status, url) in [
        (200, "https://127.0.0.1:9443/h"),
        (422, "https://10.0.0.1/h"),
    ] {
        let body = json!({"url": url, "event_types": ["lead.created"]});
        app.internal_expect(status, Method::PUT, &path, Some(body))
            .await;
    }
}

/// docs/reliability.md, "Strangers, quotas and pages": a name that does not resolve and one that resolves to a private
/// address are refused with the same words, so saving urls cannot map internal names.
#[tokio::test(flavor = "multi_thread")]
async fn an_unresolvable_host_and_a_private_one_get_the_same_message() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let path = format!("/internal/v1/orgs/{org}/webhook");
    let mut messages = vec![];
    for url in [
        "https://no-such-host.invalid/h",
        "https://localhost/h",
        "https://10.0.0.7/h",
    ] {
        let r = app
            .internal(
                Method::PUT,
                &path,
                Some(json!({"url": url, "event_types": ["lead.created"]})),
            )
            .await;
        assert_eq!(r.status(), 422, "{url}");
        messages.push(r.json::<Value>().await.unwrap()["error"].clone());
    }
    assert!(messages.iter().all(|m| *m == messages[0]), "{messages:?}");
    assert_eq!(messages[0], "url must resolve only to public addresses");
}

mod retime {
    //! A changed throttle re-times what already waits for it (docs/delivery.md, "Throttle and
    //! order") a step at a time after the save commits: a turn taken meanwhile never waits for
    //! the whole backlog, and a removed throttle lets the waiting go spread out, not all at
    //! once.

    use std::time::Duration;

    use qualifier_domain::pace::MaxPerSecond;
    use reqwest::Method;
    use serde_json::json;

    use crate::helpers::TestApp;

    /// Rows waiting in the relay's table: `n` deliveries of `org` waiting for the throttle's
    /// turns one second apart from a minute on. Their sequence numbers, in turn order.
    async fn waiting(app: &TestApp, org: &str, n: i32) -> Vec<i64> {
        qualifier_testkit::sql::column(
            &app.db.client().await,
            "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, status,
                                     lead_id, waiting_for, paced_at, replay_at)
                 SELECT gen_random_uuid(), $1::text::uuid, 'lead.updated', '\\x7b7d',
                        gen_random_uuid(), 'pending', gen_random_uuid(), 'throttle',
                        now() + make_interval(secs => 60 + g), now() + make_interval(secs => 60 + g)
                 FROM generate_series(1, $2) AS g
                 RETURNING seq",
            &[&org, &n],
        )
        .await
    }

    async fn put_rate(app: &TestApp, org: &str, rate: Option<u32>) -> u16 {
        app.internal(
            Method::PUT,
            &format!("/internal/v1/orgs/{org}/webhook"),
            Some(
                json!({"url": "https://93.184.216.34/hook", "event_types": ["lead.updated"],
                        "max_per_second": rate}),
            ),
        )
        .await
        .status()
        .as_u16()
    }

    /// (seconds of the throttle's turn past the epoch, seconds of when it is due), in sequence
    /// order; a row the relay published is no longer due.
    async fn times(app: &TestApp, seqs: &[i64]) -> Vec<(Option<f64>, Option<f64>)> {
        app.db
            .pairs(
                "SELECT extract(epoch FROM turn_at)::float8, extract(epoch FROM due_at)::float8
                 FROM deliveries WHERE seq = ANY($1) ORDER BY seq",
                &[&seqs],
            )
            .await
    }

    /// Waits until `done` holds of the rows' times: the save answers before its re-timing,
    /// which goes on in the background (the polling only looks; it decides nothing).
    async fn until_retimed(
        app: &TestApp,
        seqs: &[i64],
        done: impl Fn(&[(Option<f64>, Option<f64>)]) -> bool,
    ) -> Vec<(Option<f64>, Option<f64>)> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let t = times(app, seqs).await;
            if done(&t) {
                return t;
            }
            assert!(std::time::Instant::now() < deadline, "never re-timed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The test holds one waiting row of the second step locked (as an erasure would), so the
    /// re-timing stops there; a turn taken then does not wait for it. Fifty rounds.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_turn_taken_while_a_new_rate_is_applied_waits_for_no_backlog() {
        let app = TestApp::spawn().await;
        let (org, _) = app.org().await;
        assert_eq!(put_rate(&app, &org, Some(1)).await, 200);
        let org_id: uuid::Uuid = org.parse().unwrap();
        let store = app.store();
        let holder = app.db.client().await;
        for round in 0..50u32 {
            let seqs = waiting(&app, &org, 1200).await;
            holder.batch_execute("BEGIN").await.unwrap();
            tokio_postgres::Client::execute(
                &holder,
                "SELECT 1 FROM outbox WHERE seq = $1 FOR UPDATE",
                &[&seqs[1100]],
            )
            .await
            .unwrap();
            let rate = 2 + round % 2;
            // The save runs while the test holds the row; the turn is taken once the save's
            // re-timing waits for it.
            let saving = put_rate(&app, &org, Some(rate));
            let meanwhile = async {
                app.until_waiting_on_locks(1).await;
                let turn = tokio::time::timeout(
                    Duration::from_secs(10),
                    store.deliveries().take_probe_turn(
                        qualifier_store::webhooks::EndpointKey {
                            org_id,
                            endpoint_id: org_id,
                        },
                        MaxPerSecond::new(u64::from(rate)).unwrap(),
                    ),
                )
                .await
                .unwrap_or_else(|_| panic!("round {round}: the turn waited for the re-timing"));
                assert!(turn.is_ok(), "round {round}: {turn:?}");
                holder.batch_execute("COMMIT").await.unwrap();
            };
            let (saved, ()) = tokio::join!(saving, meanwhile);
            assert_eq!(saved, 200);
            // Every waiting row comes to hold a turn of the new rate (the whole backlog within
            // its span at that rate), in the order they held theirs.
            let spacing = 1.0 / f64::from(rate);
            let span = spacing * (seqs.len() - 1) as f64;
            let t = until_retimed(&app, &seqs, |t| {
                let turns: Vec<f64> = t.iter().filter_map(|(turn, _)| *turn).collect();
                turns.len() == t.len() && turns[turns.len() - 1] - turns[0] < span + 1.0
            })
            .await;
            for (i, pair) in t.windows(2).enumerate() {
                let gap = pair[1].0.unwrap() - pair[0].0.unwrap();
                assert!(gap >= spacing - 1e-3, "round {round}, row {i}: {gap}");
            }
            // Out of the way for the next round.
            app.db
                .client()
                .await
                .execute("DELETE FROM outbox WHERE seq = ANY($1)", &[&seqs])
                .await
                .unwrap();
        }
    }

    /// A setting's side work costs its org, not the others: six orgs change their throttle at
    /// once while each one's backlog is held (a row of each locked by the test, as an erasure
    /// would), and another org's requests are answered meanwhile. Re-timing in the save's
    /// request held a connection per save until its backlog was done: the pool's four were
    /// taken, and the other org met 503.
    #[tokio::test(flavor = "multi_thread")]
    async fn concurrent_throttle_changes_leave_other_orgs_the_pool() {
        // Statements may wait longer than the pool's wait for a session (5 s), as a large
        // backlog's step would.
        let app = TestApp::spawn_with(|c| c.statement_timeout = Duration::from_secs(60)).await;
        let holder = app.db.client().await;
        holder.batch_execute("BEGIN").await.unwrap();
        let mut orgs = Vec::new();
        for _ in 0..6 {
            let (org, _) = app.org().await;
            assert_eq!(put_rate(&app, &org, Some(1)).await, 200);
            let seqs = waiting(&app, &org, 50).await;
            tokio_postgres::Client::execute(
                &holder,
                "SELECT 1 FROM outbox WHERE seq = $1 FOR UPDATE",
                &[&seqs[0]],
            )
            .await
            .unwrap();
            orgs.push(org);
        }
        let (other, _) = app.org().await;
        let answered = std::sync::atomic::AtomicUsize::new(0);
        let saves: Vec<_> = orgs
            .iter()
            .map(|org| async {
                let status = put_rate(&app, org, Some(5)).await;
                answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                status
            })
            .collect();
        let saving = futures_util::future::join_all(saves);
        let meanwhile = async {
            // Every save has answered or waits on a held row, as many as the pool has
            // sessions (4) at least: had each save held one, none would be left.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let waiting: i64 = qualifier_testkit::sql::one(
                    &holder,
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .await;
                let done = answered.load(std::sync::atomic::Ordering::SeqCst) as i64;
                if waiting >= 1 && waiting + done >= 4 {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{waiting} waiting, {done} saved"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            for _ in 0..10 {
                let r = app
                    .internal(
                        Method::GET,
                        &format!("/internal/v1/orgs/{other}/deliveries?limit=5"),
                        None,
                    )
                    .await;
                assert_eq!(
                    r.status(),
                    200,
                    "another org's request while the backlogs wait"
                );
            }
            holder.batch_execute("COMMIT").await.unwrap();
        };
        let (saved, ()) = tokio::join!(saving, meanwhile);
        assert!(saved.iter().all(|s| *s == 200), "{saved:?}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_removed_throttle_lets_the_waiting_go_spread_out() {
        let app = TestApp::spawn().await;
        let (org, _) = app.org().await;
        assert_eq!(put_rate(&app, &org, Some(1)).await, 200);
        let seqs = waiting(&app, &org, 300).await;
        // The relays' turn held, so that none publishes (and so takes off its due time) a row
        // read below.
        let relays = app.db.client().await;
        relays
            .batch_execute("BEGIN; SELECT 1 FROM feed_head FOR UPDATE")
            .await
            .unwrap();
        assert_eq!(put_rate(&app, &org, None).await, 200);
        let t = until_retimed(&app, &seqs, |t| t.iter().all(|(paced, _)| paced.is_none())).await;
        relays.batch_execute("ROLLBACK").await.unwrap();
        assert!(t.iter().all(|(paced, _)| paced.is_none()));
        let due: Vec<f64> = t.iter().map(|(_, due)| due.expect("still due")).collect();
        let first = due[0];
        let last = due[due.len() - 1];
        // At 100 a second: three seconds from the first to the last, in their turns' order.
        assert!(last - first >= 2.98, "{}", last - first);
        assert!(due.windows(2).all(|p| p[1] >= p[0]));
    }
}
