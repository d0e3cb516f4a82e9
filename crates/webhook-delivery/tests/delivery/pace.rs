//! Receivers set the pace (docs/delivery.md, "Throttle and order"): a throttle kept across two
//! replicas, and a lead's deliveries in event order while other leads go at their usual speed.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use qualifier_store::SecretKey;
use qualifier_testkit::receiver::Received;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::{Stack, delivery_config};

const TYPES: [&str; 2] = ["lead.created", "lead.updated"];

/// Saves the stack's webhook with `pace` (`max_per_second`, `ordering`) beside its url and types.
async fn set_pace(s: &Stack, pace: Value) -> Value {
    let mut body = json!({"url": s.receiver.url, "event_types": TYPES});
    for (k, v) in pace.as_object().unwrap() {
        body[k] = v.clone();
    }
    s.put_webhook(body).await
}

/// `n` leads named `"{tag} {i} step 1"`, then renamed `"… step k"` for k up to `steps`, one
/// round across every lead at a time with `pause` between rounds: `n × steps` events, each lead's
/// in step order. Returns the leads' ids, in `i` order.
async fn leads_with_changes(
    s: &Stack,
    tag: &str,
    phone_prefix: &str,
    n: usize,
    steps: usize,
    pause: Duration,
) -> Vec<String> {
    let org = s.org.clone();
    let created = join_all((0..n).map(|i| {
        let body = json!({"name": format!("{tag} {i} step 1"),
                          "phone": format!("{phone_prefix}{i:04}"), "channel": "whatsapp"});
        let path = format!("/internal/v1/orgs/{org}/inbound");
        async move { s.call(Method::POST, &path, Some(body)).await }
    }))
    .await;
    let ids: Vec<String> = created
        .iter()
        .map(|r| r["lead"]["id"].as_str().expect("a lead").to_owned())
        .collect();
    for k in 2..=steps {
        tokio::time::sleep(pause).await;
        join_all(ids.iter().enumerate().map(|(i, id)| {
            let path = format!("/internal/v1/orgs/{org}/leads/{id}");
            let body = json!({"name": format!("{tag} {i} step {k}")});
            async move { s.call(Method::PATCH, &path, Some(body)).await }
        }))
        .await;
    }
    ids
}

/// The lead a request is about and the lead's revision it carries.
fn lead_of(r: &Received) -> (String, i64) {
    let v = r.json();
    (
        v["data"]["lead"]["id"].as_str().unwrap().to_owned(),
        v["data"]["lead"]["revision"].as_i64().unwrap(),
    )
}

/// The most requests in any one-second window.
fn busiest_second(times: &[Instant]) -> usize {
    let Some(first) = times.iter().min() else {
        return 0;
    };
    let secs: Vec<f64> = times
        .iter()
        .map(|t| t.duration_since(*first).as_secs_f64())
        .collect();
    busiest_within(&secs, 1.0)
}

/// The most of `times` (seconds) in any window `window` seconds long.
fn busiest_within(times: &[f64], window: f64) -> usize {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let mut best = 0;
    let mut start = 0;
    for end in 0..t.len() {
        while t[end] - t[start] >= window {
            start += 1;
        }
        best = best.max(end - start + 1);
    }
    best
}

/// Each attempt the deliveries' logs record that started at or after `since`: its start, in
/// seconds since the epoch, and its duration in seconds.
fn attempts_since(ds: &[Value], since: time::OffsetDateTime) -> Vec<(f64, f64)> {
    let rfc3339 = time::format_description::well_known::Rfc3339;
    ds.iter()
        .flat_map(|d| d["attempt_log"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| {
            let at = time::OffsetDateTime::parse(a["started_at"].as_str()?, &rfc3339).ok()?;
            let ms = a["duration_ms"].as_f64()?;
            (at >= since).then(|| {
                let secs = (at - time::OffsetDateTime::UNIX_EPOCH).as_seconds_f64();
                (secs, ms / 1000.0)
            })
        })
        .collect()
}

/// Requests accepted so far among those from index `from`.
fn accepted_since(s: &Stack, from: usize) -> Vec<Received> {
    s.receiver.received()[from..]
        .iter()
        .filter(|r| r.accepted)
        .cloned()
        .collect()
}

async fn wait_accepted(s: &Stack, from: usize, n: usize, within: Duration) -> Vec<Received> {
    let deadline = Instant::now() + within;
    loop {
        let got = accepted_since(s, from);
        if got.len() >= n || Instant::now() >= deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Counts requests per second at the receiver, so it runs alone: `make test` runs it after the
/// rest of the suite (`--ignored`, one test at a time). Beside fifty other tests on two cores, a
/// worker woke for its turn tens of milliseconds late often enough to put a few requests of one
/// second into the next (docs/delivery.md, "Throttle and order").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "counts requests per second: make test runs it alone, after the rest"]
async fn two_replicas_keep_to_the_throttle_and_a_raised_limit_applies_at_once() {
    let s = Stack::start().await;
    let key = SecretKey::from_base64(&s.key_b64).unwrap();
    let second = webhook_delivery::start(delivery_config(&s.db, &s.topo, &key, &s.receiver))
        .await
        .unwrap();
    let saved = set_pace(&s, json!({"max_per_second": 5})).await;
    assert_eq!(saved["webhook"]["max_per_second"], 5, "{saved}");
    assert_eq!(saved["webhook"]["ordering"], "none", "{saved}");
    // 200 events from 20 leads, as fast as the API takes them.
    leads_with_changes(&s, "T", "+3164100", 20, 10, Duration::ZERO).await;
    // At 5 a second the first 50 take about ten seconds; meanwhile the rest wait, and say so.
    let early = s.receiver.wait_for(50, Duration::from_secs(40)).await;
    assert!(early.len() >= 50, "only {} arrived", early.len());
    let waiting = s
        .deliveries()
        .await
        .iter()
        .filter(|d| d["waiting_for"] == "throttle")
        .count();
    assert!(waiting > 0, "no delivery shows it waits for the throttle");
    let raised_at = Instant::now();
    let raised_wall = time::OffsetDateTime::now_utc();
    let saved = set_pace(&s, json!({"max_per_second": 50})).await;
    assert_eq!(saved["webhook"]["max_per_second"], 50);
    let all = s.receiver.wait_for(200, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all_now = s.receiver.received();
    assert_eq!(
        all_now.len(),
        200,
        "each event once: {} requests",
        all.len()
    );
    let before: Vec<Instant> = all_now
        .iter()
        .map(|r| r.at)
        .filter(|t| *t < raised_at)
        .collect();
    let after: Vec<Instant> = all_now
        .iter()
        .map(|r| r.at)
        .filter(|t| *t >= raised_at)
        .collect();
    let (busiest_before, busiest_after) = (busiest_second(&before), busiest_second(&after));
    println!(
        "throttle 5/s then 50/s: {} requests before the raise (busiest second {busiest_before}), {} after (busiest second {busiest_after})",
        before.len(),
        after.len()
    );
    assert!(busiest_before <= 6, "at 5/s a second held {busiest_before}");
    // The throttle bounds when requests are sent: turns 20 ms apart allow 51 in a second (one
    // more for the log's millisecond rounding). The receiver's clock adds each request's own
    // time on the way, which no schedule bounds (a new connection's handshake on a busy
    // machine): it may see requests sent up to one request's duration apart in one second, and
    // nothing the attempt logs do not hold.
    let ds = s.deliveries().await;
    let org = s.org.clone();
    let details = join_all(ds.iter().map(|d| {
        let id = d["id"].as_str().unwrap().to_owned();
        let org = org.clone();
        let s = &s;
        async move { s.delivery_in(&org, &id).await }
    }))
    .await;
    let sent = attempts_since(&details, raised_wall);
    assert!(
        sent.len().abs_diff(after.len()) <= 2,
        "the logs hold {} attempts after the raise, the receiver {}",
        sent.len(),
        after.len()
    );
    let starts: Vec<f64> = sent.iter().map(|(at, _)| *at).collect();
    let slowest = sent.iter().map(|(_, took)| *took).fold(0.0, f64::max);
    let busiest_sent = busiest_within(&starts, 1.0);
    let busiest_sent_widened = busiest_within(&starts, 1.0 + slowest + 0.002);
    println!(
        "sent after the raise: {} (busiest second {busiest_sent}; slowest request {:.0} ms, \
         {busiest_sent_widened} in a second widened by it)",
        starts.len(),
        slowest * 1000.0
    );
    assert!(
        busiest_sent <= 52,
        "at 50/s a second's sends held {busiest_sent}"
    );
    assert!(
        busiest_after <= busiest_sent_widened.max(52),
        "the receiver saw {busiest_after} in a second, more than was sent in any second \
         widened by the slowest request ({busiest_sent_widened})"
    );
    // Within a second of the raise the rest go ten times faster: by two seconds after it, the
    // old rate would have sent at most 11 more.
    let within_two = after
        .iter()
        .filter(|t| t.duration_since(raised_at) < Duration::from_secs(2))
        .count();
    assert!(
        within_two >= after.len().min(40),
        "{within_two} of {} sent in the two seconds after the raise",
        after.len()
    );
    let ids: HashSet<&str> = all_now
        .iter()
        .map(|r| r.header("x-qualifier-delivery"))
        .collect();
    assert_eq!(ids.len(), 200, "every event once");
    assert!(
        all_now
            .iter()
            .all(|r| r.accepted && r.verified_with.is_some())
    );
    assert_eq!(ds.len(), 200);
    for d in &ds {
        assert_eq!(d["status"], "succeeded", "{d}");
        assert_eq!(d["attempts"], 1, "waiting spends no attempt: {d}");
        assert!(d.get("waiting_for").is_none(), "{d}");
    }
    let hook = s.webhook().await;
    assert_eq!(hook["health"]["state"], "healthy", "{hook}");
    assert_eq!(hook["health"]["consecutive_failures"], 0);
    assert_eq!(hook["max_per_second"], 50);
    second.stop().await;
}

/// One run of 20 leads × 10 events with lead 0's third event refused twice: the requests it
/// made (from the receiver's index `from`), once all 200 were accepted.
async fn run_leads(s: &Stack, tag: &str, phone_prefix: &str) -> (Vec<String>, Vec<Received>) {
    let from = s.receiver.received().len();
    s.receiver.fail_when(&format!("\"{tag} 0 step 3\""), 500, 2);
    let ids = leads_with_changes(s, tag, phone_prefix, 20, 10, Duration::from_millis(100)).await;
    let accepted = wait_accepted(s, from, 200, Duration::from_secs(60)).await;
    assert_eq!(accepted.len(), 200, "{tag}: every event delivered");
    (ids, s.receiver.received()[from..].to_vec())
}

/// Commit-to-receipt of the accepted requests of every lead but `skip`, in ms.
fn latencies(reqs: &[Received], skip: &str) -> Vec<f64> {
    reqs.iter()
        .filter(|r| r.accepted && lead_of(r).0 != skip)
        .filter_map(|r| r.age_ms)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "compares the latency of two runs: make test runs it alone, after the rest"]
async fn per_lead_order_holds_back_a_retried_lead_only() {
    let s = Stack::start().await;
    // The same run without ordering first, as the baseline of the other leads' latency.
    let (none_ids, none_reqs) = run_leads(&s, "N", "+3164200").await;
    let none_p50 = p50(latencies(&none_reqs, &none_ids[0]));
    let saved = set_pace(&s, json!({"ordering": "per_lead"})).await;
    assert_eq!(saved["webhook"]["ordering"], "per_lead", "{saved}");
    assert!(saved["webhook"]["max_per_second"].is_null());
    let (ids, reqs) = run_leads(&s, "P", "+3164300").await;
    let per_lead_p50 = p50(latencies(&reqs, &ids[0]));
    println!(
        "commit-to-receipt p50 of the 19 other leads: ordering none {none_p50:.1} ms, per_lead {per_lead_p50:.1} ms"
    );
    // Every lead's requests in arrival order: each is the event after the last one accepted,
    // or that one again (a retry); never one further on. So each event went only after the
    // previous one succeeded.
    let mut by_lead: HashMap<String, Vec<(i64, bool)>> = HashMap::new();
    let mut arrivals = reqs.clone();
    arrivals.sort_by_key(|r| r.at);
    for r in &arrivals {
        let (lead, revision) = lead_of(r);
        by_lead
            .entry(lead)
            .or_default()
            .push((revision, r.accepted));
    }
    assert_eq!(by_lead.len(), 20);
    for (lead, seen) in &by_lead {
        let mut last_accepted = 0;
        for (revision, accepted) in seen {
            assert_eq!(
                *revision,
                last_accepted + 1,
                "lead {lead}: revision {revision} arrived after {last_accepted} succeeded: {seen:?}"
            );
            if *accepted {
                last_accepted = *revision;
            }
        }
        assert_eq!(last_accepted, 10, "lead {lead}: {seen:?}");
    }
    let a = &by_lead[&ids[0]];
    assert_eq!(a.len(), 12, "lead 0's third event refused twice: {a:?}");
    assert_eq!(&a[2..5], &[(3, false), (3, false), (3, true)]);
    // Leads do not wait for each other: the others' latency stays that of an unordered run.
    assert!(
        per_lead_p50 <= 2.0 * none_p50.max(20.0),
        "p50 {per_lead_p50:.1} ms per lead against {none_p50:.1} ms without order"
    );
    let ds = s.deliveries().await;
    assert!(ds.iter().all(|d| d["status"] == "succeeded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_waiting_for_its_lead_says_so_and_replays_and_test_events_go_around_it() {
    // Retries two seconds apart: time enough to look at a delivery waiting behind one.
    let s = Stack::start_with_retry_delays(vec![2_000; 4], |_| {}, |_| {}).await;
    set_pace(&s, json!({"ordering": "per_lead"})).await;
    let org = s.org.clone();
    // The lead's first event is in flight, held by the receiver.
    s.receiver.hold();
    let lead = s.inbound("+31644000001").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    s.receiver.wait_for(1, Duration::from_secs(10)).await;
    s.rename_lead(&id, "Grace Hopper").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let waiting = loop {
        let ds = s.deliveries().await;
        if let Some(d) = ds.iter().find(|d| d["waiting_for"] == "earlier_delivery") {
            break d.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no delivery waits for its lead: {ds:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(waiting["event_type"], "lead.updated");
    assert_eq!(waiting["status"], "pending");
    assert_eq!(waiting["attempts"], 0, "waiting spends no attempt");
    // A test event is outside the order: it goes while the lead's event waits.
    let r = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/webhook/test"),
            Some(json!({"event_type": "lead.created"})),
        )
        .await;
    assert!(r.get("error").is_none(), "{r}");
    let got = s.receiver.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 2, "the test event arrived while the lead waits");
    assert_eq!(got[1].header("x-qualifier-test"), "true");
    s.receiver.let_go();
    let got = s.receiver.wait_for(3, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 3);
    assert_eq!(
        lead_of(&got[2]),
        (id.clone(), 2),
        "the lead's second event, after its first"
    );
    let first_id = got[0].header("x-qualifier-delivery").to_owned();
    s.wait_status(&first_id, "succeeded", Duration::from_secs(10))
        .await;
    // A replay of the first event is outside the order too: it goes while the lead's next event
    // is held back behind an earlier one that is retrying. The third event (its `previous`
    // name is Grace Hopper, which no later one carries) is refused twice.
    s.receiver.fail_when("\"Grace Hopper\"", 500, 2);
    let before = s.receiver.received().len();
    for change in [
        json!({"name": "Ada Byron"}),
        json!({"email": "ada@example.com"}),
    ] {
        let r = s
            .call(
                Method::PATCH,
                &format!("/internal/v1/orgs/{org}/leads/{id}"),
                Some(change),
            )
            .await;
        assert!(r.get("error").is_none(), "{r}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s
        .deliveries()
        .await
        .iter()
        .any(|d| d["waiting_for"] == "earlier_delivery")
    {
        assert!(Instant::now() < deadline, "the fourth event does not wait");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/deliveries/{first_id}/replay"),
            None,
        )
        .await;
    assert!(r.get("error").is_none(), "{r}");
    let got = wait_accepted(&s, before, 3, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 3, "the replay, the third and the fourth event");
    let mut arrivals = s.receiver.received()[before..].to_vec();
    arrivals.sort_by_key(|r| r.at);
    let seen: Vec<(String, i64, bool)> = arrivals
        .iter()
        .map(|r| {
            let (_, revision) = lead_of(r);
            (
                r.header("x-qualifier-delivery").to_owned(),
                revision,
                r.accepted,
            )
        })
        .collect();
    let replay_at = seen
        .iter()
        .position(|(d, ..)| *d == first_id)
        .expect("the replay arrived");
    let third_done = seen
        .iter()
        .position(|(_, rev, ok)| *rev == 3 && *ok)
        .expect("the third event succeeded");
    let fourth = seen
        .iter()
        .position(|(_, rev, _)| *rev == 4)
        .expect("the fourth event arrived");
    assert!(
        replay_at < third_done,
        "the replay did not go around the order: {seen:?}"
    );
    assert!(
        third_done < fourth,
        "the fourth event went before the third succeeded: {seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|(_, rev, _)| *rev == 3).count(),
        3,
        "{seen:?}"
    );
}

/// The lead's order across two sessions, interleaved by a lock the test holds: a wait that
/// begins while the earlier delivery ends reads that end (it was committed before the wait got
/// the lead's lock) and does not begin; a wait that did begin is released by the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_begun_while_the_earlier_delivery_ends_is_never_left_behind() {
    use qualifier_store::partitions::DeliveryRef;
    let mut s = Stack::start().await;
    // No worker: the rows stay as the test sets them.
    s.stop_delivery().await;
    set_pace(&s, json!({"ordering": "per_lead"})).await;
    let org = s.org.clone();
    let lead = s.inbound("+31645000001").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.rename_lead(&lead, "Grace Hopper").await;
    let pg = s.db.client().await;
    let lead_id: uuid::Uuid = lead.parse().unwrap();
    let rows = pg
        .query(
            "SELECT delivery_id::text, seq FROM outbox WHERE lead_id = $1::text::uuid ORDER BY seq",
            &[&lead],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    let (d1, d2): (String, DeliveryRef) = (
        rows[0].get(0),
        DeliveryRef {
            id: rows[1].get::<_, String>(0).parse().unwrap(),
            seq: Some(rows[1].get(1)),
        },
    );
    let key = SecretKey::from_base64(&s.key_b64).unwrap();
    let store =
        qualifier_store::Store::new(qualifier_store::connect(&s.db.database(), 2).unwrap(), key);
    let org_id: uuid::Uuid = org.parse().unwrap();
    let held = |d: uuid::Uuid| {
        let pg = &pg;
        async move {
            let r = pg
                .query_one(
                    "SELECT state IN ('held', 'after_earlier'), due_at IS NOT NULL
                     FROM deliveries WHERE delivery_id = $1::text::uuid",
                    &[&d.to_string()],
                )
                .await
                .unwrap();
            (r.get::<_, bool>(0), r.get::<_, bool>(1))
        }
    };

    // The test holds the lead's lock; a wait begins and queues behind it.
    let holder = s.db.client().await;
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('{lead}'::uuid::text, 17))"
        ))
        .await
        .unwrap();
    let wait = {
        let store = store.clone();
        tokio::spawn(async move { store.deliveries().wait_for_earlier(d2, lead_id, 1).await })
    };
    s.db.wait_for_value(
        "the wait never reached the lock",
        Duration::from_secs(10),
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        &[],
        1i64,
    )
    .await;
    // Meanwhile the earlier delivery ends, then the lock goes.
    set_state(&pg, &d1, "succeeded").await;
    holder.batch_execute("COMMIT").await.unwrap();
    assert!(
        !wait.await.unwrap().unwrap(),
        "the wait saw the end committed before it got the lock"
    );
    assert_eq!(held(d2.id).await, (false, false), "nothing waits");

    // The earlier delivery pending again: the wait begins, a second copy of the message finds
    // it waiting, nothing is released while the earlier one is pending, and its end releases it.
    set_state(&pg, &d1, "out").await;
    let waits_for_earlier = async || {
        let deliveries = store.deliveries();
        deliveries.wait_for_earlier(d2, lead_id, 1).await.unwrap()
    };
    assert!(waits_for_earlier().await);
    assert_eq!(held(d2.id).await, (true, false));
    assert!(waits_for_earlier().await);
    let listed = s.delivery_in(&org, &d2.id.to_string()).await;
    assert_eq!(listed["waiting_for"], "earlier_delivery", "{listed}");
    let primary = qualifier_store::webhooks::EndpointKey {
        org_id,
        endpoint_id: org_id,
    };
    assert!(
        !store
            .deliveries()
            .release_next_of_lead(primary, lead_id)
            .await
            .unwrap()
    );
    assert_eq!(held(d2.id).await, (true, false));
    set_state(&pg, &d1, "succeeded").await;
    assert!(
        store
            .deliveries()
            .release_next_of_lead(primary, lead_id)
            .await
            .unwrap()
    );
    assert_eq!(
        held(d2.id).await,
        (false, true),
        "back to the relay, due now"
    );
}

/// A request waiting in the process for its throttle's turn reads its delivery again when the
/// turn comes (docs/delivery.md, "Throttle and order"): a lead erased during the wait gets no
/// request carrying its contact, and the delivery ends `skipped`. The interleaving is forced:
/// the test moves the endpoint's next turn to the far edge of what a worker waits for in the
/// process (one second at 1 a second), sees the worker take that turn (the turn row moves on by
/// a spacing, read from PostgreSQL), and only then erases, which answers long before the turn;
/// another lead's event, which takes the turn after it, marks the end of the wait.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_waiting_for_its_turn_is_not_sent_after_its_leads_erasure() {
    let s = Stack::start().await;
    set_pace(&s, json!({"max_per_second": 1})).await;
    let lead = s.inbound("+447700900555").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    assert_eq!(
        wait_accepted(&s, 0, 1, Duration::from_secs(30)).await.len(),
        1,
        "lead.created arrived"
    );
    let pg = s.db.client().await;
    pg.execute(
        "UPDATE endpoint_pacing SET next_at = clock_timestamp() + interval '950 milliseconds'
         WHERE org_id = $1::text::uuid",
        &[&s.org],
    )
    .await
    .unwrap();
    let turn_row = async || -> i64 {
        qualifier_testkit::sql::one(
            &pg,
            "SELECT (extract(epoch FROM next_at) * 1000)::int8 FROM endpoint_pacing
             WHERE org_id = $1::text::uuid",
            &[&s.org],
        )
        .await
    };
    let before = turn_row().await;
    s.rename_lead(&id, "Ada Forgetme").await;
    // The barrier: the rename's delivery took the turn 950 ms off and waits for it here.
    let deadline = Instant::now() + Duration::from_secs(30);
    while turn_row().await <= before {
        assert!(Instant::now() < deadline, "the rename never took its turn");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let erasing = Instant::now();
    assert_eq!(s.erase(&id).await, 204);
    let took = erasing.elapsed();
    let updated = loop {
        if let Some(d) = s
            .deliveries()
            .await
            .into_iter()
            .find(|d| d["event_type"] == "lead.updated")
        {
            break d["id"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "no lead.updated delivery");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let d = s
        .wait_status(&updated, "skipped", Duration::from_secs(30))
        .await;
    // The second barrier: another lead's event takes the turn after the waiting one, so once
    // it has arrived the waiting request has had its turn, sent or not.
    let next = s.inbound("+447700900556").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s
        .receiver
        .received()
        .iter()
        .any(|r| r.accepted && r.json()["data"]["lead"]["id"] == next["id"])
    {
        assert!(
            Instant::now() < deadline,
            "the next lead's event never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sent: Vec<String> = s
        .receiver
        .received()
        .iter()
        .filter(|r| {
            r.header("x-qualifier-delivery") == updated
                || r.body.windows(8).any(|w| w == b"Forgetme")
        })
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(
        sent.is_empty(),
        "sent after the erasure ({took:?} before the turn came): {sent:?}; {d}"
    );
    assert!(
        took < Duration::from_millis(900),
        "the erasure took {took:?}, past the forced wait: the interleaving was not forced"
    );
}

/// Puts delivery `id` in `state` behind the worker's back: the interleaving a test forces.
async fn set_state(pg: &qualifier_testkit::sql::Client, id: &str, state: &str) {
    let sql = format!("UPDATE deliveries SET state = '{state}' WHERE delivery_id = $1::text::uuid");
    pg.execute(&sql, &[&id]).await.unwrap();
}
