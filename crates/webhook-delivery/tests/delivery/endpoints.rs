//! Several endpoints per organisation (docs/api.md, "Endpoints"): each event goes to every endpoint
//! subscribed to its type, signed with that endpoint's own secret and under its own delivery
//! id; the `webhook` routes act on the primary (oldest) endpoint; endpoints are found only in
//! their own org; a deleted endpoint gets nothing more.

use std::time::Duration;

use qualifier_testkit::receiver::{Behaviour, Received, Receiver};
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::{SecondOrg, Stack};

const WAIT: Duration = Duration::from_secs(20);

/// A new endpoint of the stack's org on `receiver` for `types`: its id; the receiver verifies
/// with its secret only.
pub(crate) async fn add_endpoint(
    s: &Stack,
    receiver: &Receiver,
    types: &[&str],
    description: &str,
) -> String {
    let r = s
        .create_endpoint(
            json!({"url": receiver.url, "event_types": types, "description": description}),
        )
        .await;
    let secret = r["signing_secret"].as_str().unwrap().to_owned();
    assert!(
        r["standard_webhooks_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    assert_eq!(r["endpoint"]["description"], description);
    receiver.set_secrets(vec![secret]);
    r["endpoint"]["id"].as_str().unwrap().to_owned()
}

fn of_type<'a>(got: &'a [Received], t: &str) -> Vec<&'a Received> {
    got.iter()
        .filter(|g| g.header("x-qualifier-event") == t)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_endpoints_get_exactly_their_types_each_signed_with_its_own_secret() {
    let s = Stack::start().await;
    let warehouse = Receiver::start().await;
    let staging = Receiver::start().await;
    let warehouse_id = add_endpoint(&s, &warehouse, &["lead.stage_changed"], "warehouse").await;
    let staging_id = add_endpoint(
        &s,
        &staging,
        &["lead.created", "lead.stage_changed"],
        "staging copy",
    )
    .await;

    let lead = s.inbound("+447700900501").await;
    s.close_lead(lead["id"].as_str().unwrap(), None).await;

    // The primary (the stack's webhook) takes both, the warehouse the stage change only, the
    // staging copy both.
    let crm = s.receiver.wait_for(2, WAIT).await;
    let wh = warehouse.wait_for(1, WAIT).await;
    let st = staging.wait_for(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.receiver.received().len(), 2);
    assert_eq!(warehouse.received().len(), 1, "only its type");
    assert_eq!(staging.received().len(), 2);
    assert_eq!(wh[0].header("x-qualifier-event"), "lead.stage_changed");

    // Each verifies with its own endpoint's secret (each receiver knows that one only).
    for g in crm.iter().chain(&wh).chain(&st) {
        assert_eq!(g.verified_with, Some(0), "{:?}", g.headers);
    }
    // The same body bytes everywhere, under a delivery id of each endpoint's own.
    let changed = [
        of_type(&crm, "lead.stage_changed")[0],
        &wh[0],
        of_type(&st, "lead.stage_changed")[0],
    ];
    assert!(changed.iter().all(|g| g.body == changed[0].body));
    let ids: std::collections::HashSet<&str> = changed
        .iter()
        .map(|g| g.header("x-qualifier-delivery"))
        .collect();
    assert_eq!(ids.len(), 3, "one delivery id per event and endpoint");

    // Each delivery carries its endpoint; a list is one endpoint's.
    let wh_delivery = wh[0].header("x-qualifier-delivery");
    let d = s.wait_status(wh_delivery, "succeeded", WAIT).await;
    assert_eq!(d["endpoint_id"], warehouse_id.as_str());
    let listed = s
        .org_call(
            Method::GET,
            &format!("deliveries?endpoint_id={staging_id}"),
            None,
        )
        .await;
    let listed = listed["deliveries"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed
            .iter()
            .all(|d| d["endpoint_id"] == staging_id.as_str())
    );
    let primary = s.deliveries().await;
    assert_eq!(primary.len(), 2, "without endpoint_id: the primary's");
    assert!(primary.iter().all(|d| d["endpoint_id"] == s.org.as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_eleventh_is_refused_another_orgs_id_is_not_found_and_webhook_is_the_primary() {
    let s = Stack::start().await;
    let other = SecondOrg::add(&s).await;
    let r = Receiver::start().await;
    let mut ids = Vec::new();
    for n in 1..10 {
        ids.push(add_endpoint(&s, &r, &["lead.created"], &format!("copy {n}")).await);
    }
    let eleventh = s
        .org_request(
            Method::POST,
            "endpoints",
            Some(json!({"url": r.url, "event_types": ["lead.created"]})),
        )
        .await;
    assert_eq!(eleventh.status(), 422);
    let body: Value = eleventh.json().await.unwrap();
    assert_eq!(body["error"], "Endpoint limit reached");

    // Oldest first, the primary first, never a secret.
    let list = s.org_call(Method::GET, "endpoints", None).await;
    let list = list["endpoints"].as_array().unwrap().clone();
    assert_eq!(list.len(), 10);
    assert_eq!(
        list[0]["id"],
        s.org.as_str(),
        "the webhook is the first endpoint"
    );
    assert_eq!(list[1]["id"], ids[0].as_str());
    let text = serde_json::to_string(&list).unwrap();
    assert!(!text.contains("secret\""), "{text}");
    assert!(list.iter().all(|e| e["health"]["state"] == "healthy"));

    // Another org's endpoint id, under this org's path and the other way round: not found.
    let theirs = s
        .call(
            Method::GET,
            &format!("/internal/v1/orgs/{}/endpoints", other.org),
            None,
        )
        .await["endpoints"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (org, id) in [(&s.org, &theirs), (&other.org, &ids[0])] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let body = (method == Method::PUT)
                .then(|| json!({"url": r.url, "event_types": ["lead.created"]}));
            let got = s
                .request(
                    method.clone(),
                    &format!("/internal/v1/orgs/{org}/endpoints/{id}"),
                    body,
                )
                .await;
            assert_eq!(got.status(), 404, "{method} {org}/{id}");
            let b: Value = got.json().await.unwrap();
            assert_eq!(b["error"], "Endpoint not found");
        }
        let rotate = s
            .request(
                Method::POST,
                &format!("/internal/v1/orgs/{org}/endpoints/{id}/rotate-secret"),
                None,
            )
            .await;
        assert_eq!(rotate.status(), 404);
    }

    // `PUT /webhook` changes the primary only; `GET /webhook` shows it.
    let before = s.endpoint(&ids[0]).await;
    s.put_webhook(json!({"url": r.url, "event_types": ["lead.qualified"], "enabled": true}))
        .await;
    let hook = s.webhook().await;
    assert_eq!(hook["id"], s.org.as_str());
    assert_eq!(hook["event_types"], json!(["lead.qualified"]));
    let after = s.endpoint(&ids[0]).await;
    assert_eq!(before, after, "another endpoint is untouched");
    // A rotation through `webhook` is the primary's: the other endpoint still signs with its
    // own secret (the receiver verifies with it only).
    s.org_call(Method::POST, "webhook/rotate-secret", None)
        .await;
    // `r` knows the secret of the last endpoint added on it only.
    let last = ids.last().unwrap();
    s.org_call(Method::POST, &format!("endpoints/{last}/test"), None)
        .await;
    let got = r.wait_for(1, WAIT).await;
    assert_eq!(got[0].verified_with, Some(0));
    assert_eq!(got[0].header("x-qualifier-test"), "true");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_endpoint_has_its_pending_deliveries_skipped_and_gets_nothing_more() {
    let s = Stack::start_with_retry_delays(vec![60_000; 4], |_| {}, |_| {}).await;
    let failing = Receiver::start().await;
    failing.set_behaviour(Behaviour::Status(500));
    let id = add_endpoint(&s, &failing, &["lead.created"], "broken").await;

    let lead = s.inbound("+447700900502").await;
    let first = failing.wait_for(1, WAIT).await;
    let delivery = first[0].header("x-qualifier-delivery").to_owned();
    s.wait_status(&delivery, "failed", WAIT).await;
    // The primary's copy went through, whatever the failing endpoint does.
    s.receiver.wait_for(1, WAIT).await;

    s.org_call(Method::DELETE, &format!("endpoints/{id}"), None)
        .await;
    let d = s.wait_status(&delivery, "skipped", WAIT).await;
    assert_eq!(d["last_error"], "Endpoint deleted");
    assert_eq!(d["endpoint_id"], id.as_str(), "its history stays");
    let gone = s
        .org_request(Method::GET, &format!("endpoints/{id}"), None)
        .await;
    assert_eq!(gone.status(), 404);

    // Later events: the primary gets them, the deleted endpoint nothing.
    failing.set_behaviour(Behaviour::Ok);
    let _ = lead;
    s.inbound("+447700900503").await;
    s.receiver.wait_for(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(failing.received().len(), 1, "nothing after the delete");
}

/// The primary endpoint deleted and a webhook set up again: the new endpoint has an id of its
/// own, not the org's that the deleted one had, so it inherits none of the deleted one's
/// deliveries, and the deleted one's id stays not found.
#[tokio::test(flavor = "multi_thread")]
async fn a_primary_endpoint_set_up_again_never_takes_the_deleted_ones_id() {
    let s = Stack::start().await;
    assert_eq!(s.webhook().await["id"], s.org.as_str());
    s.inbound("+447700900511").await;
    let first = s.receiver.wait_for(1, WAIT).await;
    let old_delivery = first[0].header("x-qualifier-delivery").to_owned();
    s.wait_status(&old_delivery, "succeeded", WAIT).await;

    s.org_call(Method::DELETE, &format!("endpoints/{}", s.org), None)
        .await;
    let again = Receiver::start().await;
    let created = s
        .put_webhook(json!({"url": again.url, "event_types": ["lead.created"], "enabled": true}))
        .await;
    again.set_secrets(vec![created["signing_secret"].as_str().unwrap().to_owned()]);
    let new_id = created["webhook"]["id"].as_str().unwrap().to_owned();
    assert_ne!(
        new_id, s.org,
        "a deleted endpoint's id is never given again"
    );
    let gone = s
        .request(
            Method::GET,
            &format!("/internal/v1/orgs/{}/endpoints/{}", s.org, s.org),
            None,
        )
        .await;
    assert_eq!(gone.status(), 404);

    // Its deliveries list starts empty: the old endpoint's history stays the old one's.
    let listed = s
        .org_call(
            Method::GET,
            &format!("deliveries?endpoint_id={new_id}"),
            None,
        )
        .await;
    assert_eq!(listed["deliveries"], json!([]), "{listed}");
    let primary = s.org_call(Method::GET, "deliveries", None).await;
    assert_eq!(primary["deliveries"], json!([]), "{primary}");

    // The next event goes to the new endpoint, signed with its secret, under a new delivery.
    s.inbound("+447700900512").await;
    let got = again.wait_for(1, WAIT).await;
    assert_eq!(got[0].verified_with, Some(0));
    assert_ne!(got[0].header("x-qualifier-delivery"), old_delivery);
    let d = s
        .wait_status(got[0].header("x-qualifier-delivery"), "succeeded", WAIT)
        .await;
    assert_eq!(d["endpoint_id"], new_id.as_str());
    assert_eq!(
        s.receiver.received().len(),
        1,
        "nothing more to the deleted one"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_erasure_reaches_every_endpoint() {
    let s = Stack::start().await;
    let copy = Receiver::start().await;
    let id = add_endpoint(&s, &copy, &["lead.created", "lead.erased"], "copy").await;
    s.put_webhook(json!({"url": s.receiver.url, "event_types": ["lead.created", "lead.erased"], "enabled": true}))
        .await;
    let lead = s.inbound("+447700900504").await;
    let lead_id = lead["id"].as_str().unwrap();
    copy.wait_for(1, WAIT).await;
    s.receiver.wait_for(1, WAIT).await;
    assert_eq!(s.erase(lead_id).await, 204);
    for r in [&s.receiver, &copy] {
        let got = r.wait_for(2, WAIT).await;
        assert_eq!(of_type(&got, "lead.erased").len(), 1);
    }
    // Nothing of the lead is left in either endpoint's deliveries.
    let listed = s
        .org_call(Method::GET, &format!("deliveries?endpoint_id={id}"), None)
        .await;
    let created = listed["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["event_type"] == "lead.created")
        .unwrap()
        .clone();
    assert_eq!(created["erased"], true);
    let payload: Vec<u8> =
        s.db.client()
            .await
            .query_one(
                "SELECT o.payload FROM outbox o JOIN deliveries d ON d.seq = o.seq
             WHERE d.delivery_id = $1::text::uuid",
                &[&created["id"].as_str().unwrap()],
            )
            .await
            .unwrap()
            .get(0);
    let text = String::from_utf8_lossy(&payload);
    assert!(!text.contains("+447700900504"), "{text}");
    assert!(!text.contains("Ada Lovelace"), "{text}");
}
