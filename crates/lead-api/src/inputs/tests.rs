use super::*;
use qualifier_domain::DeliveryStatus;
use uuid::Uuid;

#[test]
fn the_search_field_takes_an_id_in_any_spelling_and_says_what_it_takes() {
    let id = "0f8e2c9a-6c1d-4a57-9d55-2b1f0c7e4d10";
    for q in [
        format!("q={id}"),
        format!("q=+{}+", id.to_uppercase()),
        format!("q=%7B{id}%7D"),
        format!("q=urn:uuid:{id}"),
        format!("status=dead&q={}", id.replace('-', "")),
    ] {
        let s = DeliverySearch::parse(&q).unwrap();
        assert_eq!(s.id, Ok(Uuid::parse_str(id).unwrap()), "{q}");
    }
    assert_eq!(DeliverySearch::parse("q=&status=dead"), None);
    assert_eq!(DeliverySearch::parse("status=dead"), None);
    let bad = DeliverySearch::parse("q=%3Cscript%3E").unwrap();
    assert_eq!((bad.text.as_str(), bad.id), ("<script>", Err(SEARCH_HINT)));
    let noisy = DeliverySearch::parse(&format!("q=%00%1b{id}%0d{}", "x".repeat(500))).unwrap();
    assert!(!noisy.text.chars().any(char::is_control));
    assert_eq!(noisy.text.chars().count(), 100);
}
use serde_json::json;

fn msg<T: std::fmt::Debug>(r: Result<T, ApiError>) -> String {
    match r {
        Err(ApiError::Unprocessable(m)) => m,
        other => panic!("expected 422, got {other:?}"),
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn the_pace_reads_the_same_from_json_and_form() {
    let rate = |v: Value| max_per_second_of(Some(&v));
    assert_eq!(rate(json!(null)).unwrap(), None);
    assert_eq!(rate(json!(5)).unwrap().map(MaxPerSecond::get), Some(5));
    assert_eq!(msg(rate(json!(0))), MAX_PER_SECOND_MESSAGE);
    assert_eq!(msg(rate(json!(1001))), MAX_PER_SECOND_MESSAGE);
    assert_eq!(msg(rate(json!("5"))), MAX_PER_SECOND_MESSAGE);
    assert_eq!(max_per_second_of(None).unwrap(), None);
    assert_eq!(ordering_of(None).unwrap(), DeliveryOrdering::None);
    assert_eq!(
        ordering_of(Some(&json!("per_lead"))).unwrap(),
        DeliveryOrdering::PerLead
    );
    assert_eq!(msg(ordering_of(Some(&json!("lead")))), ORDERING_MESSAGE);
    // The form: an empty rate is no throttle; a refused one has the API's message.
    let (r, o) = pace_from_form(Some(" "), None);
    assert_eq!((r, o), (Ok(None), Ok(DeliveryOrdering::None)));
    let (r, o) = pace_from_form(Some("40"), Some("per_lead"));
    assert_eq!(r.unwrap().map(MaxPerSecond::get), Some(40));
    assert_eq!(o, Ok(DeliveryOrdering::PerLead));
    let (r, o) = pace_from_form(Some("0"), Some("both"));
    assert_eq!(r, Err(MAX_PER_SECOND_MESSAGE));
    assert_eq!(o, Err(ORDERING_MESSAGE));
}

#[test]
fn a_subscription_collapses_duplicates_into_catalogue_order() {
    let t = subscription(["lead.qualified", "lead.created", "lead.created"].map(Some)).unwrap();
    assert_eq!(t, [EventType::LeadCreated, EventType::LeadQualified]);
    assert_eq!(
        msg(subscription([])),
        "event_types must be a non-empty list of event types"
    );
    assert_eq!(
        msg(subscription([Some("lead.created"), None])),
        "event_types must be a non-empty list of event types"
    );
    assert_eq!(
        msg(subscription([Some("lead.nope")])),
        "event_types has an unknown event type: lead.nope"
    );
}

#[test]
fn the_grace_window_reads_the_same_from_json_and_form() {
    let day = GraceWindow(Duration::from_secs(86_400));
    assert_eq!(GraceWindow::from_json(&Map::new()).unwrap(), day);
    assert_eq!(GraceWindow::from_form(None).unwrap(), day);
    assert_eq!(
        GraceWindow::from_json(&obj(json!({"grace_seconds": 0}))).unwrap(),
        GraceWindow::from_form(Some("0")).unwrap()
    );
    for bad in [json!(-1), json!(604_801), json!("60"), json!(1.5)] {
        assert_eq!(
            msg(GraceWindow::from_json(&obj(
                json!({ "grace_seconds": bad })
            ))),
            GRACE_MESSAGE
        );
    }
    for bad in ["-1", "604801", "x", ""] {
        assert_eq!(msg(GraceWindow::from_form(Some(bad))), GRACE_MESSAGE);
    }
}

#[test]
fn a_token_name_is_optional_and_checked_like_any_name() {
    assert!(NewToken::from_form(Some("  ")).unwrap().name.is_none());
    assert!(NewToken::from_json(&Map::new()).unwrap().name.is_none());
    let n = NewToken::from_form(Some(" CRM sync "))
        .unwrap()
        .name
        .unwrap();
    assert_eq!(n.as_str(), "CRM sync");
    assert!(NewToken::from_form(Some("a\u{7}b")).is_err());
    assert!(NewToken::from_json(&obj(json!({"name": 5}))).is_err());
}

#[test]
fn a_delivery_query_names_the_parameter_it_refuses() {
    let q = DeliveryQuery::parse("status=dead&event_type=lead.created&done=saved").unwrap();
    assert_eq!(q.filter.statuses, [DeliveryStatus::Dead]);
    assert_eq!(q.filter.event_types, [EventType::LeadCreated]);
    assert_eq!((q.limit, q.cursor), (50, None));
    assert_eq!(
        DeliveryQuery::parse("status=&cursor=")
            .unwrap()
            .filter
            .statuses,
        []
    );
    assert!(msg(DeliveryQuery::parse("status=gone")).starts_with("status"));
    assert!(msg(DeliveryQuery::parse("event_type=x")).starts_with("event_type"));
    assert!(msg(DeliveryQuery::parse("lead_id=x")).starts_with("lead_id"));
    let cursors = crate::cursor::Cursors::new(
        &qualifier_store::SecretKey::from_base64(&qualifier_store::SecretKey::generate_base64())
            .unwrap(),
    );
    let q = DeliveryQuery::parse("cursor=x").unwrap();
    assert!(msg(q.before(&cursors, Uuid::new_v4())).starts_with("cursor"));
    let org = Uuid::new_v4();
    let q = DeliveryQuery::parse(&format!("cursor={}", cursors.delivery(org, 9))).unwrap();
    assert_eq!(q.before(&cursors, org).unwrap(), Some(9));
}

#[test]
fn a_replay_filter_defaults_to_dead_and_refuses_unreplayable_statuses() {
    let r = ReplayFilter::from_json(&Map::new()).unwrap();
    assert_eq!(r.filter.statuses, [DeliveryStatus::Dead]);
    assert!(!r.dry_run);
    let r = ReplayFilter::from_json(&obj(
        json!({"status": ["skipped", "failed"], "dry_run": true}),
    ))
    .unwrap();
    assert_eq!(
        r.filter.statuses,
        [DeliveryStatus::Skipped, DeliveryStatus::Failed]
    );
    assert!(r.dry_run);
    for bad in [json!([]), json!(["pending"]), json!("dead")] {
        assert_eq!(
            msg(ReplayFilter::from_json(&obj(json!({ "status": bad })))),
            "status must be a non-empty list of dead, failed, skipped"
        );
    }
}
