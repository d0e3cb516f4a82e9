use super::*;

const T: Duration = Duration::from_secs(10);

use crate::decide::Hold;

use uuid::Uuid;

/// A message of `org`'s one endpoint (keyed by the org's id, as a primary endpoint is).
fn meta_of(org: Uuid) -> DeliveryMeta {
    let mut meta = crate::decide::fixtures::meta(qualifier_domain::EventType::LeadCreated);
    meta.org_id = org;
    meta
}

/// `org`'s one endpoint.
fn only(org: Uuid) -> EndpointOf {
    EndpointOf::new(org, org)
}

/// A message of `org` waiting in the process for a slot, answered as the slot or the hold
/// its park plan was made from.
async fn wait_for_slot(gate: &Arc<OrgGate>, org: Uuid, limit: Duration) -> Result<Permit, Hold> {
    let meta = meta_of(org);
    gate.wait_for_slot(&meta, limit, || crate::decide::fixtures::NOW)
        .await
        .map_err(|plan| plan.hold)
}

/// A message of `org` asking for a slot, answered as the slot or the hold it must wait for.
fn enter(gate: &Arc<OrgGate>, org: Uuid) -> Result<Permit, Hold> {
    match gate.admit(&meta_of(org), crate::decide::fixtures::NOW) {
        Admission::Start(p) => Ok(p),
        Admission::WaitHere { otherwise, .. } | Admission::Park(otherwise) => Err(otherwise.hold),
    }
}

fn at_cap(r: Result<Permit, Hold>) -> bool {
    matches!(r, Err(Hold::AtCap { .. }))
}

#[test]
fn under_contention_the_cap_counts_slots_per_org_and_frees_them_on_drop() {
    // 4 slots, 2 per org: with another org waiting, nobody goes beyond its cap.
    let gate = OrgGate::new(2, 4, T);
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    gate.waiting(only(c), Duration::from_secs(5), None);
    let p1 = enter(&gate, a).unwrap();
    let _p2 = enter(&gate, a).unwrap();
    assert!(at_cap(enter(&gate, a)));
    let _other = enter(&gate, b).expect("another org is not affected");
    drop(p1);
    assert!(enter(&gate, a).is_ok(), "a freed slot is usable");
}

#[test]
fn a_lone_org_uses_idle_slots_but_leaves_a_cap_free_for_newcomers() {
    let gate = OrgGate::new(2, 8, T);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    gate.observe(only(a), Duration::from_millis(20), true);
    let held: Vec<_> = (0..6)
        .map(|_| enter(&gate, a).expect("idle slots"))
        .collect();
    assert!(at_cap(enter(&gate, a)), "the last cap's worth stays free");
    let _b1 = enter(&gate, b).expect("a newcomer finds a slot at once");
    let _b2 = enter(&gate, b).expect("and its whole cap");
    assert!(at_cap(enter(&gate, b)), "no slot left");
    drop(held);
}

#[test]
fn an_org_waiting_elsewhere_keeps_the_slots_it_lacks_free() {
    let gate = OrgGate::new(2, 8, T);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    gate.observe(only(a), Duration::from_millis(20), true);
    let _a: Vec<_> = (0..4).map(|_| enter(&gate, a).unwrap()).collect();
    gate.waiting(only(b), Duration::from_secs(5), None);
    // 4 free: the reserve's 2 and the 2 that b, waiting with none in flight, lacks.
    assert!(at_cap(enter(&gate, a)), "b waits, so a borrows no further");
    let _b: Vec<_> = (0..2)
        .map(|_| enter(&gate, b).expect("b finds its cap free when its message is back"))
        .collect();
    assert!(at_cap(enter(&gate, a)), "and the reserve stays free");
    let _c = enter(&gate, Uuid::new_v4()).expect("a newcomer finds a slot");
}

#[test]
fn an_org_behind_its_own_parked_messages_is_told_how_many_turns_ahead() {
    let gate = OrgGate::new(2, 8, T);
    let a = Uuid::new_v4();
    let _a: Vec<_> = (0..2).map(|_| enter(&gate, a).unwrap()).collect();
    let turns = |r: Result<Permit, Hold>| match r {
        Err(Hold::AtCap { turns_ahead, .. }) => turns_ahead,
        _ => panic!("at its cap"),
    };
    assert_eq!(turns(enter(&gate, a)), 0);
    for _ in 0..5 {
        gate.waiting(only(a), Duration::from_secs(5), None);
    }
    gate.waiting(only(a), Duration::from_millis(30), None);
    assert_eq!(turns(enter(&gate, a)), 3, "six parked, two slots");
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(turns(enter(&gate, a)), 2, "one came back");
}

#[test]
fn back_off_holds_the_org_until_it_passes() {
    let gate = OrgGate::new(4, 16, T);
    let a = Uuid::new_v4();
    gate.back_off(only(a), Duration::from_millis(50));
    assert!(matches!(
        enter(&gate, a),
        Err(Hold::BackingOff { for_ms }) if for_ms <= 50
    ));
    assert!(enter(&gate, Uuid::new_v4()).is_ok());
    std::thread::sleep(Duration::from_millis(60));
    assert!(enter(&gate, a).is_ok());
}

#[tokio::test]
async fn a_message_held_by_the_reserve_takes_the_next_released_slot() {
    let gate = OrgGate::new(2, 8, T);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    gate.observe(only(a), Duration::from_millis(20), true);
    let mut held: Vec<_> = (0..6).map(|_| enter(&gate, a).unwrap()).collect();
    let waiter = {
        let gate = gate.clone();
        tokio::spawn(async move { wait_for_slot(&gate, a, Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "no slot beyond the reserve yet");
    // The reserve stays a newcomer's while the message waits.
    let b1 = enter(&gate, b).expect("a newcomer finds a slot at once");
    drop(b1);
    assert!(
        !waiter.is_finished(),
        "a newcomer's slot going back is still the reserve"
    );
    held.pop();
    // A message arriving now queues behind the one already waiting.
    assert!(at_cap(enter(&gate, a)), "no borrowing ahead of a waiter");
    let permit = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("woken by the released slot")
        .unwrap();
    assert!(permit.is_ok());
    assert!(at_cap(enter(&gate, a)), "and it took that slot");
}

#[tokio::test]
async fn a_waiter_is_parked_after_its_limit_and_a_held_org_at_once() {
    let gate = OrgGate::new(2, 8, T);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    gate.observe(only(a), Duration::from_millis(20), true);
    let _held: Vec<_> = (0..6).map(|_| enter(&gate, a).unwrap()).collect();
    let started = std::time::Instant::now();
    let r = wait_for_slot(&gate, a, Duration::from_millis(100)).await;
    assert!(matches!(r, Err(Hold::AtCap { may_wait: true, .. })));
    assert!(started.elapsed() >= Duration::from_millis(100));
    // An org whose first attempts have run past the settle time without one ending (maybe
    // a hanging endpoint) does not wait here: it is parked without delay.
    let _b: Vec<_> = (0..2).map(|_| enter(&gate, b).unwrap()).collect();
    tokio::time::sleep(decide::SETTLE_PARK + Duration::from_millis(20)).await;
    let started = std::time::Instant::now();
    let r = wait_for_slot(&gate, b, Duration::from_secs(5)).await;
    assert!(matches!(
        r,
        Err(Hold::AtCap {
            may_wait: false,
            ..
        })
    ));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn the_typical_duration_follows_recent_attempts() {
    let gate = OrgGate::new(1, 2, T);
    let a = Uuid::new_v4();
    let _p = enter(&gate, a).unwrap();
    for _ in 0..30 {
        gate.observe(only(a), Duration::from_secs(10), true);
    }
    match enter(&gate, a) {
        Err(Hold::AtCap {
            typical_ms: Some(ms),
            ..
        }) => assert!((9_000..=10_000).contains(&ms)),
        _ => panic!("at cap with a typical duration"),
    }
}

#[tokio::test]
async fn a_failing_endpoints_message_waits_for_the_foreground_to_end_or_its_longest_wait() {
    let gate = OrgGate::new(2, 8, T);
    let (healthy, failing) = (Uuid::new_v4(), Uuid::new_v4());
    gate.observe(only(healthy), Duration::from_millis(5), true);
    gate.observe(only(failing), Duration::from_millis(5), false);
    assert_eq!(gate.lane(EndpointId(healthy)), Lane::Foreground);
    assert_eq!(gate.lane(EndpointId(failing)), Lane::Background);
    assert_eq!(
        gate.lane(EndpointId(Uuid::new_v4())),
        Lane::Foreground,
        "unknown: foreground"
    );
    let long = Duration::from_secs(60);

    // Nothing in the foreground: it goes at once (well inside its minute-long wait).
    tokio::time::timeout(Duration::from_secs(5), gate.after_foreground(long))
        .await
        .expect("went at once");

    // A foreground message being handled: it waits, and goes when that one ends.
    let fg = gate.foreground();
    let g = gate.clone();
    let waiting = tokio::spawn(async move { g.after_foreground(long).await });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "it waits for the foreground");
    drop(fg);
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("it goes when the foreground ends")
        .unwrap();

    // Two waiting: the foreground's end lets one go, not both; the other goes at the next
    // idle moment.
    let fg = gate.foreground();
    let (g1, g2) = (gate.clone(), gate.clone());
    let first = tokio::spawn(async move { g1.after_foreground(long).await });
    let second = tokio::spawn(async move { g2.after_foreground(long).await });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    drop(fg);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // The lone foreground message of the next moment holds the other one back.
    let fg = gate.foreground();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        [first.is_finished(), second.is_finished()]
            .iter()
            .filter(|f| **f)
            .count(),
        1,
        "one goes at the idle moment"
    );
    drop(fg);
    tokio::time::timeout(Duration::from_secs(5), async {
        first.await.unwrap();
        second.await.unwrap();
    })
    .await
    .expect("the other goes at the next idle moment");

    // A foreground that does not end: it goes after its longest wait all the same.
    let _fg = gate.foreground();
    let start = std::time::Instant::now();
    gate.after_foreground(Duration::from_millis(50)).await;
    assert!(start.elapsed() >= Duration::from_millis(50));

    // One success brings the endpoint back to the foreground.
    gate.observe(only(failing), Duration::from_millis(5), true);
    assert_eq!(gate.lane(EndpointId(failing)), Lane::Foreground);
}

/// A message of `of`.
fn meta_to(of: EndpointOf) -> DeliveryMeta {
    let mut meta = meta_of(of.org.0);
    meta.endpoint_id = Some(of.endpoint.0);
    meta
}

fn enter_to(gate: &Arc<OrgGate>, of: EndpointOf) -> Result<Permit, Hold> {
    match gate.admit(&meta_to(of), crate::decide::fixtures::NOW) {
        Admission::Start(p) => Ok(p),
        Admission::WaitHere { otherwise, .. } | Admission::Park(otherwise) => Err(otherwise.hold),
    }
}

#[test]
fn an_orgs_endpoints_together_hold_at_most_its_cap_and_other_orgs_start() {
    // 64 slots, 16 an org: four hanging endpoints of one org take 16, not 64.
    let gate = OrgGate::new(16, 64, T);
    let org = Uuid::new_v4();
    let eps: Vec<EndpointOf> = (0..4)
        .map(|_| EndpointOf::new(org, Uuid::new_v4()))
        .collect();
    let mut held = Vec::new();
    for _ in 0..16 {
        for ep in &eps {
            if let Ok(p) = enter_to(&gate, *ep) {
                held.push(p);
            }
        }
    }
    assert_eq!(
        gate.counts(eps[0]).1,
        16,
        "the org's cap, across its endpoints"
    );
    assert_eq!(held.len(), 16);
    let other = Uuid::new_v4();
    let _b: Vec<_> = (0..16)
        .map(|_| enter(&gate, other).expect("another org finds its whole cap"))
        .collect();
}

#[test]
fn a_slow_endpoint_leaves_its_org_a_slot_for_a_sibling() {
    let gate = OrgGate::new(4, 64, T);
    let org = Uuid::new_v4();
    let (slow, quick) = (
        EndpointOf::new(org, Uuid::new_v4()),
        EndpointOf::new(org, Uuid::new_v4()),
    );
    // Alone, an endpoint may use its org's whole cap.
    let alone: Vec<_> = (0..4).map(|_| enter_to(&gate, slow).unwrap()).collect();
    assert!(enter_to(&gate, slow).is_err());
    drop(alone);
    // Once its org is known to have another endpoint with nothing in flight, the last slot
    // is that one's.
    gate.know([slow, quick]);
    let held: Vec<_> = (0..3).map(|_| enter_to(&gate, slow).unwrap()).collect();
    assert!(
        matches!(enter_to(&gate, slow), Err(Hold::AtCap { .. })),
        "the org's last slot stays free"
    );
    let q = enter_to(&gate, quick).expect("the sibling starts at once");
    assert_eq!(gate.counts(quick).1, 4, "and the org is at its cap");
    drop((held, q));
    // Known to be slow, an endpoint with nothing in flight does not take the last slot
    // either: several slow endpoints leave it to a quick one.
    let slow2 = EndpointOf::new(org, Uuid::new_v4());
    gate.observe(slow, T, false);
    gate.observe(slow2, T, false);
    let _s1: Vec<_> = (0..3).map(|_| enter_to(&gate, slow).unwrap()).collect();
    assert!(
        enter_to(&gate, slow2).is_err(),
        "slow, the last slot is not its"
    );
    let _q = enter_to(&gate, quick).expect("the quick sibling's");
}

#[test]
fn above_its_share_an_endpoint_leaves_what_a_waiting_sibling_lacks() {
    let gate = OrgGate::new(8, 64, T);
    let org = Uuid::new_v4();
    let (a, b) = (
        EndpointOf::new(org, Uuid::new_v4()),
        EndpointOf::new(org, Uuid::new_v4()),
    );
    gate.know([a, b]);
    let mut held: Vec<_> = (0..7).map(|_| enter_to(&gate, a).unwrap()).collect();
    // b's message was parked meanwhile (say the org was full): it waits with none.
    gate.waiting(b, Duration::from_secs(5), None);
    held.truncate(3);
    // 3 of the org's 8 in flight, all a's; a's share is 4, b lacks 4.
    let a4 = enter_to(&gate, a).expect("a below its share");
    assert!(enter_to(&gate, a).is_err(), "above it, b's 4 stay free");
    let _b: Vec<_> = (0..4)
        .map(|_| enter_to(&gate, b).expect("b finds its share"))
        .collect();
    drop(a4);
}

#[test]
fn a_receivers_pause_holds_its_endpoint_not_its_siblings() {
    let gate = OrgGate::new(4, 16, T);
    let org = Uuid::new_v4();
    let (a, b) = (
        EndpointOf::new(org, Uuid::new_v4()),
        EndpointOf::new(org, Uuid::new_v4()),
    );
    gate.back_off(a, Duration::from_secs(30));
    assert!(matches!(enter_to(&gate, a), Err(Hold::BackingOff { .. })));
    assert!(enter_to(&gate, b).is_ok());
    gate.observe(a, Duration::from_millis(5), false);
    assert_eq!(gate.lane(a.endpoint), Lane::Background);
    assert_eq!(gate.lane(b.endpoint), Lane::Foreground);
}

#[test]
fn a_freed_slot_calls_the_longest_parked_row_forward_unless_something_else_will_take_it() {
    let base = Instant::now();
    let clock = Arc::new(std::sync::Mutex::new(base));
    let read = clock.clone();
    let gate = OrgGate::with_clock(1, 4, T, Arc::new(move || *read.lock().unwrap()));
    let advance = |by: Duration| *clock.lock().unwrap() += by;
    let a = Uuid::new_v4();
    let of = only(a);
    let slot = enter(&gate, a).unwrap();
    let (first, second, third) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    gate.waiting(of, Duration::from_secs(30), Some((first, Some(7))));
    gate.waiting(of, Duration::from_secs(40), Some((second, None)));
    drop(slot);
    let called = gate.call_forward(of).expect("the row parked longest");
    assert_eq!((called.id, called.seq), (first, Some(7)));
    // A message parked in the broker and back within a second takes the next slot.
    gate.waiting(of, Duration::from_millis(500), None);
    assert!(
        gate.call_forward(of).is_none(),
        "a message coming back takes it"
    );
    advance(Duration::from_secs(1));
    assert_eq!(gate.call_forward(of).map(|c| c.id), Some(second));
    assert!(gate.call_forward(of).is_none(), "nothing left to call");
    // A row whose own due time has passed came back by itself: it is not called.
    gate.waiting(of, Duration::from_secs(2), Some((third, None)));
    advance(Duration::from_secs(3));
    assert!(gate.call_forward(of).is_none());
    // Another endpoint's freed slot calls none of this one's rows.
    gate.waiting(of, Duration::from_secs(30), Some((third, None)));
    assert!(gate.call_forward(only(Uuid::new_v4())).is_none());
    assert_eq!(gate.call_forward(of).map(|c| c.id), Some(third));
}

#[test]
fn a_called_row_no_longer_counts_among_the_turns_ahead() {
    let gate = OrgGate::new(1, 4, T);
    let a = Uuid::new_v4();
    let of = only(a);
    // Slow (over half the timeout): it keeps to its cap of one.
    gate.observe(of, Duration::from_secs(6), true);
    let _slot = enter(&gate, a).unwrap();
    for _ in 0..3 {
        gate.waiting(of, Duration::from_secs(60), Some((Uuid::new_v4(), None)));
    }
    let turns = |gate: &Arc<OrgGate>| match enter(gate, a) {
        Err(Hold::AtCap { turns_ahead, .. }) => turns_ahead,
        other => panic!("at its cap: {:?}", other.map(|_| ())),
    };
    assert_eq!(turns(&gate), 3);
    gate.call_forward(of).expect("one called");
    assert_eq!(
        turns(&gate),
        2,
        "the called one goes ahead of the parked ones"
    );
}
