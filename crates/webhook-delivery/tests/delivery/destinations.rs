//! Destinations beyond HTTPS (docs/destinations.md): an endpoint whose receiver is a RabbitMQ
//! exchange of its own, on the test broker under the test's prefix with a user of its own. The
//! events it subscribes to arrive as persistent messages with the webhook's body bytes, signed,
//! its delivery id as the message id; a refusing broker retries and dead-letters, or fails the
//! endpoint's health until it takes messages again; a lead's order holds; an erasure goes too;
//! the password never appears in clear.

use std::time::Duration;

use qualifier_testkit::their_broker::{Taken, TheirBroker};
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(20);

/// `POST …/endpoints` sending to `broker` with `more` fields: the answer's status and body.
async fn create(s: &Stack, broker: &TheirBroker, exchange: &str, more: Value) -> (u16, Value) {
    let mut body = json!({
        "destination": {"type": "amqp", "url": broker.url(), "exchange": exchange,
                        "routing_key": broker.routing_key},
    });
    for (k, v) in more.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = s.org_request(Method::POST, "endpoints", Some(body)).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// A delivery of the endpoint, found by its event's type.
async fn delivery_of(s: &Stack, endpoint: &str, event_type: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = s
            .org_call(
                Method::GET,
                &format!("deliveries?endpoint_id={endpoint}&event_type={event_type}"),
                None,
            )
            .await;
        if let Some(d) = listed["deliveries"].as_array().and_then(|a| a.first()) {
            return d.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {event_type} delivery"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn signed_by(m: &Taken, secret: &str) {
    assert!(
        qualifier_signing::verify(secret, &m.body, m.header("x-qualifier-signature")),
        "signed with the endpoint's secret: {:?}",
        m.headers
    );
    assert_eq!(m.header("x-qualifier-delivery"), m.message_id);
    assert_eq!(m.header("webhook-id"), m.message_id);
    assert_eq!(m.content_type, "application/json");
    assert!(m.persistent, "published persistent");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_amqp_destination_takes_its_events_in_order_signed_and_its_password_stays_sealed() {
    let s = Stack::start().await;
    let broker = TheirBroker::new(&s.topo.prefix).await;
    let (status, created) = create(
        &s,
        &broker,
        &broker.exchange,
        json!({"event_types": ["lead.created", "lead.updated", "lead.erased"],
               "ordering": "per_lead"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let secret = created["signing_secret"].as_str().unwrap().to_owned();
    let ep = created["endpoint"].clone();
    let id = ep["id"].as_str().unwrap().to_owned();
    // No url; the password masked in the answer and when read back, and nowhere in clear.
    let read = s.endpoint(&id).await;
    for shown in [&ep, &read] {
        assert_eq!(shown["url"], Value::Null);
        assert_eq!(shown["destination"]["type"], "amqp");
        let url = shown["destination"]["url"].as_str().unwrap();
        assert!(url.contains(":********@"), "{url}");
        assert!(!url.contains(&broker.password));
    }
    s.absent_from_dump(&broker.password);

    // A lead created then renamed four times: five messages, in the events' order; the stage
    // change it is not subscribed to never comes.
    let lead = s.inbound("+447700900801").await;
    let lead_id = lead["id"].as_str().unwrap().to_owned();
    for n in 1..=4 {
        let body = json!({"name": format!("Ada {n}")});
        s.org_call(Method::PATCH, &format!("leads/{lead_id}"), Some(body))
            .await;
    }
    s.close_lead(&lead_id, None).await;
    let got = broker.wait_for(5, WAIT).await;
    // The primary webhook took the stage change: everything before it was sent as well.
    s.receiver.wait_for(6, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got: Vec<Taken> = got.into_iter().chain(broker.take_all().await).collect();
    let types: Vec<&str> = got.iter().map(|m| m.kind.as_str()).collect();
    assert_eq!(
        types,
        [
            "lead.created",
            "lead.updated",
            "lead.updated",
            "lead.updated",
            "lead.updated"
        ]
    );
    let names: Vec<String> = got[1..]
        .iter()
        .map(|m| {
            m.json()["data"]["lead"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        names,
        ["Ada 1", "Ada 2", "Ada 3", "Ada 4"],
        "per-lead order"
    );
    for m in &got {
        signed_by(m, &secret);
    }
    // The webhook's body bytes: what the primary webhook received for the same event.
    let created_at_crm = s
        .receiver
        .received()
        .into_iter()
        .find(|g| g.header("x-qualifier-event") == "lead.created")
        .unwrap();
    assert_eq!(got[0].body, created_at_crm.body);
    assert_eq!(got[0].header("x-qualifier-event"), "lead.created");
    // The delivery log records the broker's answer.
    let d = delivery_of(&s, &id, "lead.created").await;
    let d = s
        .wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
        .await;
    assert_eq!(d["id"].as_str().unwrap(), got[0].message_id);
    assert_eq!(
        d["attempt_log"][0]["response_body"],
        "confirmed by the broker"
    );

    // Erasure sends `lead.erased` to the destination too.
    assert_eq!(s.erase(&lead_id).await, 204);
    let erased = broker.wait_for(1, WAIT).await;
    assert_eq!(erased.len(), 1);
    assert_eq!(erased[0].kind, "lead.erased");
    signed_by(&erased[0], &secret);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusing_broker_retries_then_dead_letters_naming_what_it_said() {
    let s = Stack::start().await;
    let broker = TheirBroker::new(&s.topo.prefix).await;
    let missing = format!("{}.nowhere", s.topo.prefix);
    let (status, created) = create(
        &s,
        &broker,
        &missing,
        json!({"event_types": ["lead.created"]}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["endpoint"]["id"].as_str().unwrap().to_owned();
    s.inbound("+447700900802").await;
    let d = delivery_of(&s, &id, "lead.created").await;
    let d = s.wait_status(d["id"].as_str().unwrap(), "dead", WAIT).await;
    assert_eq!(d["attempts"], 5);
    let last = d["last_error"].as_str().unwrap();
    assert!(
        last.contains("NOT_FOUND") && last.contains("nowhere"),
        "the broker's refusal: {last}"
    );
    assert!(!last.contains("127.0.0.1"), "never an address: {last}");
    assert!(broker.take_all().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_destination_that_refuses_fails_its_health_and_recovers_by_itself() {
    let s = Stack::with_quick_health().await;
    // The exchange does not exist yet: every message is refused.
    let broker = TheirBroker::named(&s.topo.prefix);
    let exchange = broker.exchange.clone();
    let (status, created) = create(
        &s,
        &broker,
        &exchange,
        json!({"event_types": ["lead.created"]}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["endpoint"]["id"].as_str().unwrap().to_owned();
    let path = format!("/internal/v1/orgs/{}/endpoints/{id}", s.org);
    s.inbound("+447700900803").await;
    let h = s.wait_failing(&path, WAIT).await;
    assert!(
        h["last_error"].as_str().unwrap().contains("NOT_FOUND"),
        "{h}"
    );
    // The receiver creates its exchange: a probe finds it, and what waited is delivered.
    broker.declare().await;
    let d = delivery_of(&s, &id, "lead.created").await;
    s.wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
        .await;
    let got = broker.wait_for(2, WAIT).await;
    assert!(
        got.iter()
            .any(|m| m.kind == "lead.created" && m.header("x-qualifier-test").is_empty())
    );
    let h = s.call(Method::GET, &path, None).await["endpoint"]["health"].clone();
    assert_eq!(h["state"], "healthy", "{h}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_destination_is_refused_with_the_field_named() {
    let s = Stack::start().await;
    let post = |body: Value| {
        let s = &s;
        async move {
            let r = s.org_request(Method::POST, "endpoints", Some(body)).await;
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let amqp = |url: &str| {
        json!({"event_types": ["lead.created"],
               "destination": {"type": "amqp", "url": url, "exchange": "x"}})
    };
    for (body, field) in [
        (amqp("https://example.com"), "destination.url"),
        // A private address, and a public one over plain AMQP.
        (
            amqp("amqp://u:p@10.0.0.1:5672/"),
            "destination.url must resolve",
        ),
        (
            amqp("amqp://u:p@8.8.8.8:5672/"),
            "destination.url must use TLS",
        ),
        (
            json!({"event_types": ["lead.created"], "url": "https://example.com/h",
                   "destination": {"type": "amqp", "url": "amqps://h.example.com", "exchange": "x"}}),
            "url must be null",
        ),
        (
            json!({"event_types": ["lead.created"], "destination": {"type": "kafka"}}),
            "destination.type",
        ),
        (json!({"event_types": ["lead.created"]}), "url"),
    ] {
        let (status, answer) = post(body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(answer.to_string().contains(field), "{body}: {answer}");
    }
}

mod aws {
    //! The AWS destinations against moto's server over HTTPS (crates/testkit/src/moto.rs):
    //! an SQS FIFO queue takes a lead's events in order, grouped by the lead and deduplicated
    //! by the delivery; S3 keeps one object per delivery under the org and the event's day;
    //! EventBridge takes the envelope as the entry's detail; a missing queue or bucket retries
    //! then dead-letters with AWS's error code, and so does a bucket the key's IAM policy
    //! denies (moto checking signatures and policies as AWS does); a missing queue fails the
    //! endpoint's health until it exists; the credentials never appear in clear.

    use super::*;
    use qualifier_testkit::moto::{Moto, REGION};

    const AWS_SECRET: &str = "moto-secret-key-4417";

    /// `POST …/endpoints` to `destination` on `moto` (its region, address and, unless it has
    /// its own, keys added), with `more` fields: the answer (201).
    async fn create_to(s: &Stack, moto: &Moto, mut destination: Value, more: Value) -> Value {
        destination["region"] = json!(REGION);
        destination["endpoint_url"] = json!(moto.url);
        if destination["credentials"].is_null() {
            destination["credentials"] =
                json!({"access_key_id": "AKIDQUALIFIERTEST", "secret_access_key": AWS_SECRET});
        }
        let mut body = json!({"destination": destination});
        for (k, v) in more.as_object().unwrap() {
            body[k] = v.clone();
        }
        s.create_endpoint(body).await
    }

    /// [`create_to`] for `lead.created` only.
    async fn for_new_leads(s: &Stack, moto: &Moto, destination: Value) -> Value {
        create_to(
            s,
            moto,
            destination,
            json!({"event_types": ["lead.created"]}),
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_sqs_fifo_queue_takes_a_leads_events_in_order_grouped_and_deduplicated() {
        let s = Stack::start().await;
        let moto = Moto::start().await;
        let queue = moto.create_queue("crm-leads.fifo").await;
        let created = create_to(
            &s,
            &moto,
            json!({"type": "sqs", "queue_url": queue}),
            json!({"event_types": ["lead.created", "lead.updated", "lead.erased"],
                   "ordering": "per_lead"}),
        )
        .await;
        let secret = created["signing_secret"].as_str().unwrap().to_owned();
        let ep = &created["endpoint"];
        assert_eq!(ep["url"], Value::Null);
        assert_eq!(
            ep["destination"]["credentials"],
            json!({"access_key_id": "********", "secret_access_key": "********"})
        );
        s.absent_from_dump(AWS_SECRET);
        s.absent_from_dump("AKIDQUALIFIERTEST");

        let lead = s.inbound("+447700900811").await;
        let lead_id = lead["id"].as_str().unwrap().to_owned();
        for n in 1..=4 {
            let body = json!({"name": format!("Ada {n}")});
            s.org_call(Method::PATCH, &format!("leads/{lead_id}"), Some(body))
                .await;
        }
        let got = moto.wait_messages(&queue, 5, WAIT).await;
        let names: Vec<String> = got
            .iter()
            .map(|m| {
                let v: Value = serde_json::from_str(&m.body).unwrap();
                v["data"]["lead"]["name"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(names.len(), 5, "{got:?}");
        assert_eq!(
            &names[1..],
            ["Ada 1", "Ada 2", "Ada 3", "Ada 4"],
            "per-lead order"
        );
        for m in &got {
            assert_eq!(m.group_id.as_deref(), Some(lead_id.as_str()));
            let delivery = &m.attributes["X-Qualifier-Delivery"];
            assert_eq!(m.deduplication_id.as_ref(), Some(delivery));
            assert!(qualifier_signing::verify(
                &secret,
                m.body.as_bytes(),
                &m.attributes["X-Qualifier-Signature"]
            ));
        }
        // The webhook's body bytes, as the primary received them.
        s.receiver.wait_for(5, WAIT).await;
        let at_crm = s
            .receiver
            .received()
            .into_iter()
            .find(|g| g.header("x-qualifier-event") == "lead.created")
            .unwrap();
        assert_eq!(got[0].body.as_bytes(), at_crm.body.as_slice());
        let id = ep["id"].as_str().unwrap();
        let d = delivery_of(&s, id, "lead.created").await;
        let d = s
            .wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
            .await;
        assert!(
            d["attempt_log"][0]["response_body"]
                .as_str()
                .unwrap()
                .starts_with("MessageId "),
            "{d}"
        );
        assert_eq!(s.erase(&lead_id).await, 204);
        let erased = moto.wait_messages(&queue, 1, WAIT).await;
        assert_eq!(erased[0].attributes["X-Qualifier-Event"], "lead.erased");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn s3_keeps_an_object_per_delivery_and_eventbridge_takes_the_envelope() {
        let s = Stack::start().await;
        let moto = Moto::start().await;
        moto.create_bucket("crm-events").await;
        let seen = moto.create_bus_into_queue("crm", "qualifier").await;
        let to_s3 = for_new_leads(
            &s,
            &moto,
            json!({"type": "s3", "bucket": "crm-events", "prefix": "qualifier/"}),
        )
        .await;
        let s3_secret = to_s3["signing_secret"].as_str().unwrap().to_owned();
        for_new_leads(
            &s,
            &moto,
            json!({"type": "eventbridge", "event_bus": "crm"}),
        )
        .await;
        s.inbound("+447700900812").await;
        let at_crm = s.receiver.wait_for(1, WAIT).await.remove(0);
        let envelope = at_crm.json();

        let deadline = tokio::time::Instant::now() + WAIT;
        let objects = loop {
            let o = moto.objects("crm-events").await;
            if !o.is_empty() || tokio::time::Instant::now() > deadline {
                break o;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(objects.len(), 1);
        let o = &objects[0];
        let day = &envelope["occurred_at"].as_str().unwrap()[..10].replace('-', "/");
        assert_eq!(
            o.key,
            format!(
                "qualifier/{}/{day}/{}.json",
                s.org,
                envelope["id"].as_str().unwrap()
            )
        );
        assert_eq!(o.body, at_crm.body, "the webhook's body bytes");
        assert_eq!(o.content_type, "application/json");
        assert!(qualifier_signing::verify(
            &s3_secret,
            &o.body,
            &o.metadata["x-qualifier-signature"]
        ));
        assert_eq!(o.metadata["x-qualifier-event"], "lead.created");

        let events = moto.wait_messages(&seen, 1, WAIT).await;
        assert_eq!(events.len(), 1);
        let event: Value = serde_json::from_str(&events[0].body).unwrap();
        assert_eq!(event["detail-type"], "lead.created");
        assert_eq!(event["source"], "qualifier");
        assert_eq!(event["detail"], envelope, "the envelope as the detail");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_missing_queue_or_bucket_retries_then_dead_letters_with_the_aws_error() {
        let s = Stack::start().await;
        let moto = Moto::start().await;
        let queue = for_new_leads(
            &s,
            &moto,
            json!({"type": "sqs", "queue_url": moto.queue_url("nowhere")}),
        )
        .await;
        let bucket =
            for_new_leads(&s, &moto, json!({"type": "s3", "bucket": "no-such-bucket"})).await;
        s.inbound("+447700900813").await;
        for (ep, code) in [(queue, "QueueDoesNotExist"), (bucket, "NoSuchBucket")] {
            let id = ep["endpoint"]["id"].as_str().unwrap();
            let d = delivery_of(&s, id, "lead.created").await;
            let d = s.wait_status(d["id"].as_str().unwrap(), "dead", WAIT).await;
            assert_eq!(d["attempts"], 5);
            let last = d["last_error"].as_str().unwrap();
            assert!(last.contains(code), "{code}: {last}");
            assert!(!last.contains(AWS_SECRET));
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_denied_bucket_retries_then_dead_letters_and_an_allowed_one_takes_the_object() {
        // moto checks each request's signature and the key's IAM policy, as AWS does: the key
        // may put objects into one bucket and not the other.
        let s = Stack::start().await;
        let (moto, key) = Moto::enforcing_iam("crm-allowed", "crm-denied").await;
        let credentials =
            json!({"access_key_id": key.id.clone(), "secret_access_key": key.secret.clone()});
        let mut endpoints = Vec::new();
        for bucket in ["crm-allowed", "crm-denied"] {
            let created = for_new_leads(
                &s,
                &moto,
                json!({"type": "s3", "bucket": bucket, "credentials": credentials}),
            )
            .await;
            endpoints.push(created["endpoint"]["id"].as_str().unwrap().to_owned());
        }
        s.inbound("+447700900815").await;
        let allowed = delivery_of(&s, &endpoints[0], "lead.created").await;
        let allowed = s
            .wait_status(allowed["id"].as_str().unwrap(), "succeeded", WAIT)
            .await;
        assert_eq!(
            allowed["attempts"], 1,
            "our signature is the one AWS computes"
        );
        let denied = delivery_of(&s, &endpoints[1], "lead.created").await;
        let denied = s
            .wait_status(denied["id"].as_str().unwrap(), "dead", WAIT)
            .await;
        assert_eq!(denied["attempts"], 5);
        let last = denied["last_error"].as_str().unwrap();
        assert!(last.contains("AccessDenied"), "{last}");
        assert!(!last.contains(&key.secret));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_missing_queue_fails_the_endpoints_health_until_it_exists() {
        let s = Stack::with_quick_health().await;
        let moto = Moto::start().await;
        let created = for_new_leads(
            &s,
            &moto,
            json!({"type": "sqs", "queue_url": moto.queue_url("later")}),
        )
        .await;
        let id = created["endpoint"]["id"].as_str().unwrap().to_owned();
        let path = format!("/internal/v1/orgs/{}/endpoints/{id}", s.org);
        s.inbound("+447700900814").await;
        let h = s.wait_failing(&path, WAIT).await;
        assert!(
            h["last_error"]
                .as_str()
                .unwrap()
                .contains("QueueDoesNotExist"),
            "{h}"
        );
        let queue = moto.create_queue("later").await;
        let d = delivery_of(&s, &id, "lead.created").await;
        s.wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
            .await;
        let got = moto.wait_messages(&queue, 2, WAIT).await;
        assert!(
            got.iter()
                .any(|m| m.attributes["X-Qualifier-Event"] == "lead.created"
                    && !m.attributes.contains_key("X-Qualifier-Test"))
        );
        let h = s.call(Method::GET, &path, None).await["endpoint"]["health"].clone();
        assert_eq!(h["state"], "healthy", "{h}");
    }
}
