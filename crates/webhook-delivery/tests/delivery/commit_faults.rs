//! The services' own writes under faults at their commit (docs/reliability.md, "A 2xx is a
//! commit"): the relay's mark, the throttle's turn, the outcome of an attempt and the release
//! of a lead's next delivery are each taken as done only once PostgreSQL confirmed the commit.
//! A commit refused, or held and cut, while events are on their way may send a delivery twice
//! (same `X-Qualifier-Delivery`) and never loses one.
//!
//! The interleaving is forced: the test holds the one `feed_head` row that every relay batch
//! locks first, so the events it makes wait for the relay; it arms the fault and only then lets
//! the relay go, so the relay's mark and everything the workers write after it meet the fault.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use qualifier_testkit::commit_fault::{CommitFaults, Fault};
use qualifier_testkit::receiver::Behaviour;
use reqwest::Method;
use serde_json::json;

use crate::stack::Stack;

/// How long the fault stays armed once the relay is let go.
const ARMED: Duration = Duration::from_secs(3);

/// Keeps `fault` armed for [`ARMED`], cutting every commit it holds meanwhile when it is
/// [`Fault::Cut`] (and failing unless one was), then disarms it.
async fn armed_for_a_while(faults: &CommitFaults, fault: Fault) {
    let armed_until = Instant::now() + ARMED;
    let stop = AtomicBool::new(false);
    let cutting = async {
        if fault == Fault::Cut {
            faults.cut_held(&stop).await
        } else {
            0
        }
    };
    let (cut, ()) = tokio::join!(cutting, async {
        tokio::time::sleep_until(armed_until.into()).await;
        stop.store(true, Ordering::SeqCst);
    });
    faults.disarm().await;
    if fault == Fault::Cut {
        assert!(cut > 0, "no commit was held while armed");
    }
}

/// Waits until the org has `made` deliveries, every one succeeded, and checks that the
/// receiver accepted each of them.
async fn all_arrive(s: &Stack, made: usize) {
    let ids: Vec<String> = s
        .wait_all_in(&s.org, Some(made), "succeeded", Duration::from_secs(90))
        .await
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    let received: HashSet<String> = s
        .receiver
        .received()
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.header("x-qualifier-delivery").to_owned())
        .collect();
    for id in &ids {
        assert!(
            received.contains(id),
            "delivery {id} never reached the receiver"
        );
    }
}

async fn nothing_lost(fault: Fault) {
    let s = Stack::start().await;
    // A throttle and the lead's order: turns and releases are written too.
    let url = s.receiver.url.clone();
    s.put_webhook(
        json!({"url": url, "event_types": ["lead.created", "lead.updated"],
                         "max_per_second": 50, "ordering": "per_lead"}),
    )
    .await;
    let faults = CommitFaults::install(&s.db).await;
    let hold = s.db.client().await;
    hold.batch_execute("BEGIN; SELECT * FROM feed_head FOR UPDATE")
        .await
        .unwrap();
    let mut leads = Vec::new();
    for i in 0..3 {
        let id = s.inbound(&format!("+44770090061{i}")).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        for step in 0..2 {
            s.org_call(
                Method::PATCH,
                &format!("leads/{id}"),
                Some(json!({"name": format!("Lead {i} step {step}")})),
            )
            .await;
        }
        leads.push(id);
    }
    let made = 9;

    faults.arm(fault).await;
    hold.batch_execute("COMMIT").await.unwrap();
    armed_for_a_while(&faults, fault).await;

    // Every delivery ends succeeded, and the receiver has each of them.
    all_arrive(&s, made).await;
    // Each lead's events were accepted in the order of its revisions.
    for lead in &leads {
        let mut revisions = Vec::new();
        for r in s.receiver.received().iter().filter(|r| r.accepted) {
            let v = r.json();
            if v["data"]["lead"]["id"] == lead.as_str() {
                let rev = v["data"]["lead"]["revision"].as_i64().unwrap();
                if !revisions.contains(&rev) {
                    revisions.push(rev);
                }
            }
        }
        let mut sorted = revisions.clone();
        sorted.sort();
        assert_eq!(
            revisions, sorted,
            "lead {lead}: first receipts out of order"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn commits_refused_under_the_relay_and_the_workers_lose_nothing() {
    nothing_lost(Fault::Refuse).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn commits_cut_under_the_relay_and_the_workers_lose_nothing() {
    nothing_lost(Fault::Cut).await;
}

/// The pause the receiver asks for in [`parks_lose_nothing`]: long enough that the waits it
/// causes are kept in the deliveries' rows (a park of 16 s or more), written in batches.
const PAUSE_S: u64 = 20;

/// Parks meet the fault. The org may have one request out; its first is held by the receiver,
/// which answers it `429` with `Retry-After`, so every other delivery of the endpoint, waiting
/// at the cap, is then parked for the pause in its row, the parks written together. The fault
/// is armed before the receiver answers: the 429's schedule and the parks meet it. Afterwards
/// every delivery arrives once the pause is over, none before it, none lost.
async fn parks_lose_nothing(fault: Fault) {
    let s = Stack::start_with(|c| {
        c.org_concurrency = 1;
        c.concurrency = 4;
        c.timeout_ms = 60_000;
    })
    .await;
    let faults = CommitFaults::install(&s.db).await;
    s.receiver.script(vec![Behaviour::RetryAfter(429, PAUSE_S)]);
    s.receiver.hold();
    let made = 6;
    for i in 0..made {
        s.inbound(&format!("+44770090081{i}")).await;
    }
    // The first request is out and held; the others wait at the org's cap.
    let first = s.receiver.wait_for(1, Duration::from_secs(30)).await;
    assert_eq!(first.len(), 1, "the first request is out");

    faults.arm(fault).await;
    let asked_at = Instant::now();
    s.receiver.let_go();
    armed_for_a_while(&faults, fault).await;

    all_arrive(&s, made).await;
    let received = s.receiver.received();
    // Nothing was sent during the pause: the waits held through the fault.
    let early: Vec<_> = received
        .iter()
        .skip(1)
        .filter(|r| r.at < asked_at + Duration::from_secs(PAUSE_S) - Duration::from_millis(500))
        .map(|r| r.header("x-qualifier-delivery").to_owned())
        .collect();
    assert!(
        early.is_empty(),
        "sent during the receiver's pause: {early:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn parks_under_refused_commits_lose_nothing_and_keep_the_pause() {
    parks_lose_nothing(Fault::Refuse).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parks_under_cut_commits_lose_nothing_and_keep_the_pause() {
    parks_lose_nothing(Fault::Cut).await;
}
