//! Filters (docs/api.md, "Filters"): an endpoint gets exactly the events its filter matches;
//! the others make no delivery row for it (so no broker message and no request), are counted
//! in `filtered_last_24h`, and a changed filter applies to the next event whichever process
//! writes it. Against the real PostgreSQL, RabbitMQ and HTTPS receivers.

use std::time::Duration;

use qualifier_testkit::receiver::Receiver;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(20);

/// An endpoint on `r` for `types` with `filter`; its id.
async fn filtered(s: &Stack, r: &Receiver, types: Value, filter: Value) -> String {
    let v = s
        .create_endpoint(json!({"url": r.url, "event_types": types, "filter": filter}))
        .await;
    r.set_secrets(vec![v["signing_secret"].as_str().unwrap().to_owned()]);
    assert_eq!(v["endpoint"]["filter"], filter);
    v["endpoint"]["id"].as_str().unwrap().to_owned()
}

async fn lead(s: &Stack, phone: &str, channel: &str) -> String {
    let body = json!({"name": "Ada Lovelace", "phone": phone, "channel": channel});
    s.org_call(Method::POST, "inbound", Some(body)).await["lead"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The delivery rows of endpoint `id`, counted in the database.
async fn rows_of(s: &Stack, id: &str) -> i64 {
    let c = s.db.client().await;
    c.query_one(
        "SELECT count(*) FROM deliveries WHERE endpoint_id = $1::text::uuid",
        &[&id],
    )
    .await
    .unwrap()
    .get(0)
}

/// Takes every message waiting in `queue` off it: the deliveries they carry (a bundle's
/// parts, or a message's own).
async fn take_parts(queue: &str) -> Vec<qualifier_bus::DeliveryMeta> {
    use qualifier_bus::lapin::options::BasicGetOptions;
    let conn = qualifier_bus::connect(&qualifier_testkit::amqp_url(), "qualifier test")
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let mut out = Vec::new();
    while let Some(m) = ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        match qualifier_bus::bundle::decode(&m.delivery.data) {
            Ok(parts) => out.extend(parts.into_iter().map(|p| p.meta)),
            Err(_) => out.push(
                qualifier_bus::DeliveryMeta::from_properties(&m.delivery.properties)
                    .expect("a delivery's message"),
            ),
        }
    }
    let _ = conn.close(200, "ok".into()).await;
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn exactly_the_matching_events_are_delivered_and_the_others_make_no_row() {
    let s = Stack::start().await;
    let wa = Receiver::start().await;
    let urgent = Receiver::start().await;
    let wa_id = filtered(
        &s,
        &wa,
        json!(["lead.created", "lead.erased"]),
        json!({"data.lead.channel": "whatsapp"}),
    )
    .await;
    // The append path (a handoff's event) too, with operators.
    let urgent_id = filtered(
        &s,
        &urgent,
        json!(["handoff.created"]),
        json!({"$and": [{"data.handoff.reason": {"$startsWith": "urgent"}},
                        {"data.lead.channel": {"$in": ["sms", "whatsapp"]}}]}),
    )
    .await;

    let mut whatsapp = Vec::new();
    for i in 0..3 {
        whatsapp.push(lead(&s, &format!("+4477009007{i:02}"), "whatsapp").await);
        lead(&s, &format!("+4477009008{i:02}"), "sms").await;
    }
    for (i, reason) in ["urgent: wants a call", "later", "urgent again"]
        .iter()
        .enumerate()
    {
        let r = s
            .request(
                Method::POST,
                &format!("/internal/v1/orgs/{}/leads/{}/handoffs", s.org, whatsapp[i]),
                Some(json!({"reason": reason})),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let got = wa.wait_for(3, WAIT).await;
    let urgent_got = urgent.wait_for(2, WAIT).await;
    // The primary got all six leads: the filtered ones are not late, only absent.
    s.receiver.wait_for(6, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(wa.received().len(), 3, "only the whatsapp leads");
    assert!(
        got.iter()
            .all(|g| g.json()["data"]["lead"]["channel"] == "whatsapp")
    );
    assert!(got.iter().all(|g| g.verified_with.is_some()));
    assert_eq!(urgent.received().len(), 2);
    assert!(urgent_got.iter().all(|g| {
        g.json()["data"]["handoff"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("urgent")
    }));
    // No row for what was left out: no broker message and no request could carry it.
    assert_eq!(rows_of(&s, &wa_id).await, 3);
    assert_eq!(rows_of(&s, &urgent_id).await, 2);
    // Counted without a row each.
    assert_eq!(s.endpoint(&wa_id).await["filtered_last_24h"], 3);
    assert_eq!(s.endpoint(&urgent_id).await["filtered_last_24h"], 1);

    // An erasure's notice reaches the endpoint whatever its filter: it may hold the contact.
    assert_eq!(s.erase(&whatsapp[0]).await, 204);
    let got = wa.wait_for(4, WAIT).await;
    assert_eq!(got[3].header("x-qualifier-event"), "lead.erased");

    // filter-test answers for the saved filter.
    let test = |event: Value| {
        let (s, id) = (&s, &wa_id);
        async move {
            s.org_call(
                Method::POST,
                &format!("endpoints/{id}/filter-test"),
                Some(json!({ "event": event })),
            )
            .await["matches"]
                .clone()
        }
    };
    assert_eq!(
        test(json!({"data": {"lead": {"channel": "whatsapp"}}})).await,
        true
    );
    assert_eq!(
        test(json!({"data": {"lead": {"channel": "sms"}}})).await,
        false
    );

    // A new filter applies from the next event on, though this process held the old one.
    let put = s
        .org_request(
            Method::PUT,
            &format!("endpoints/{wa_id}"),
            Some(json!({"url": wa.url, "event_types": ["lead.created"],
                        "filter": {"data.lead.channel": "sms"}})),
        )
        .await;
    assert_eq!(put.status(), 200);
    lead(&s, "+447700900790", "sms").await;
    lead(&s, "+447700900791", "whatsapp").await;
    let got = wa.wait_for(5, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(wa.received().len(), 5);
    assert_eq!(got[4].json()["data"]["lead"]["channel"], "sms");
    // `null` removes it: every subscribed event again.
    let put = s
        .org_request(
            Method::PUT,
            &format!("endpoints/{wa_id}"),
            Some(json!({"url": wa.url, "event_types": ["lead.created"], "filter": null})),
        )
        .await;
    assert_eq!(put.status(), 200);
    lead(&s, "+447700900792", "whatsapp").await;
    wa.wait_for(6, WAIT).await;
}

/// What a filter leaves out never reaches the broker, counted there: with no worker running,
/// the messages the relay publishes for the org's events carry one part for each delivery the
/// primary and the matching endpoint get, and none for the events the filter left out.
#[tokio::test(flavor = "multi_thread")]
async fn no_broker_message_carries_an_event_the_filter_left_out() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    let wa = Receiver::start().await;
    let wa_id = filtered(
        &s,
        &wa,
        json!(["lead.created"]),
        json!({"data.lead.channel": "whatsapp"}),
    )
    .await;
    lead(&s, "+447700900840", "whatsapp").await;
    lead(&s, "+447700900841", "sms").await;
    lead(&s, "+447700900842", "sms").await;

    // Three parts for the primary, one for the whatsapp endpoint: four in all, however the
    // relay bundles them.
    let topology = s.topo.topology();
    let deadline = std::time::Instant::now() + WAIT;
    let mut parts = Vec::new();
    while parts.len() < 4 && std::time::Instant::now() < deadline {
        for q in [topology.bundle_queue(), topology.work_queue()] {
            parts.extend(take_parts(&q).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for q in [topology.bundle_queue(), topology.work_queue()] {
        assert_eq!(s.queue_depth(&q).await, 0, "no message more in {q}");
    }
    let to_wa = parts
        .iter()
        .filter(|m| m.endpoint_id().to_string() == wa_id)
        .count();
    assert_eq!(parts.len(), 4, "one part per delivery row");
    assert_eq!(
        to_wa, 1,
        "only the whatsapp lead's event for the filtered endpoint"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_primary_records_what_its_filter_left_out_as_skipped_and_the_feed_keeps_it() {
    let s = Stack::start().await;
    let put = s
        .org_request(
            Method::PUT,
            "webhook",
            Some(
                json!({"url": s.receiver.url, "event_types": ["lead.created"],
                        "filter": {"data.lead.channel": "whatsapp"}}),
            ),
        )
        .await;
    assert_eq!(put.status(), 200);
    lead(&s, "+447700900701", "sms").await;
    lead(&s, "+447700900702", "whatsapp").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(got[0].json()["data"]["lead"]["channel"], "whatsapp");
    // The sms lead's delivery: ended skipped, `Filtered`, no attempt.
    let deadline = std::time::Instant::now() + WAIT;
    let skipped = loop {
        let list = s.deliveries().await;
        if let Some(d) = list.iter().find(|d| d["status"] == "skipped") {
            break d.clone();
        }
        assert!(std::time::Instant::now() < deadline, "{list:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(skipped["last_error"], "Filtered");
    assert_eq!(skipped["attempts"], 0);
    // Both events are in the feed, in order: a filter changes deliveries, not history.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let feed = s.feed(10).await;
        if feed.matches("lead.created").count() == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{feed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        s.receiver.received().len(),
        1,
        "no request for the filtered event"
    );
    assert_eq!(s.webhook().await["filtered_last_24h"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_filters_are_refused_naming_the_path() {
    let s = Stack::start().await;
    let r = Receiver::start().await;
    for (filter, names) in [
        (
            json!({"data.lead.channel": {"$regex": "^wh"}}),
            "filter.data.lead.channel.$regex",
        ),
        (json!({"$or": []}), "filter.$or"),
        (
            json!({"$or": [{"a": 1}, {"b": {"$gt": {"x": 1}}}]}),
            "filter.$or[1].b.$gt",
        ),
        (json!("whatsapp"), "at filter:"),
        (json!({"a": "x".repeat(5000)}), "4096 bytes"),
    ] {
        let res = s
            .org_request(
                Method::POST,
                "endpoints",
                Some(json!({"url": r.url, "event_types": ["lead.created"], "filter": filter})),
            )
            .await;
        assert_eq!(res.status(), 422, "{filter}");
        let text = res.text().await.unwrap();
        assert!(
            text.contains("Invalid filter") && text.contains(names),
            "{text}"
        );
    }
}
