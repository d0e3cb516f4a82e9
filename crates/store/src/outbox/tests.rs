use super::*;

fn row(seq: i64, endpoint: u128, due: bool) -> Unpublished {
    Unpublished {
        seq,
        delivery_id: Uuid::from_u128(seq as u128 * 100 + endpoint),
        endpoint_id: Uuid::from_u128(endpoint),
        event_id: Uuid::from_u128(seq as u128),
        org_id: Uuid::nil(),
        event_type: EventType::LeadCreated,
        payload: Vec::new(),
        created_at: OffsetDateTime::UNIX_EPOCH,
        traceparent: None,
        is_test: false,
        feed_pos: None,
        resume_attempt: None,
        due,
        ready: true,
    }
}

#[test]
fn new_deliveries_from_both_places_come_in_seq_order_once_each() {
    let unsent = vec![row(2, 1, false), row(4, 1, false), row(4, 2, false)];
    let due = vec![row(1, 1, true), row(4, 1, true), row(7, 1, true)];
    let merged = merge_new(unsent, due);
    let got: Vec<(i64, u128, bool)> = merged
        .iter()
        .map(|r| (r.seq, r.endpoint_id.as_u128(), r.due))
        .collect();
    assert_eq!(
        got,
        [
            (1, 1, true),
            (2, 1, false),
            // In both: once, as claimed from `deliveries_due`, whose row the mark writes.
            (4, 1, true),
            (4, 2, false),
            (7, 1, true),
        ]
    );
}
