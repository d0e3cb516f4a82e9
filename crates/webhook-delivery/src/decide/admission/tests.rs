use super::super::fixtures::*;
use super::super::tier_for as park_tier;
use super::*;
use qualifier_domain::EventType;

/// The process as the gate counts it: 64 slots, a cap of 16, `in_flight` taken.
fn process(in_flight: usize) -> Process {
    Process {
        slots: 64,
        in_flight,
        cap: 16,
        queued_ahead: false,
        attempt_timeout: Duration::from_secs(10),
    }
}

#[test]
fn a_paused_message_parks_whatever_the_slots() {
    let mut m = meta(EventType::LeadCreated);
    m.not_before_ms = Some(NOW + 2000);
    let Admission::Park(p) =
        plan_admission(&m, NOW, &org(0, None), &process(0), std::iter::empty())
    else {
        panic!("a paused message must not start, even with every slot free")
    };
    assert_eq!(p.hold, Hold::BackingOff { for_ms: 2000 });
    m.not_before_ms = None;
    assert!(matches!(
        plan_admission(&m, NOW, &org(0, None), &process(0), std::iter::empty()),
        Admission::Start(())
    ));
}

#[test]
fn a_message_waits_for_its_not_before_then_for_the_org_gate() {
    let mut m = meta(EventType::LeadCreated);
    let at_cap = Hold::AtCap {
        typical_ms: None,
        settling: false,
        may_wait: false,
        turns_ahead: 0,
    };
    assert_eq!(hold(&m, NOW, None), None);
    assert_eq!(hold(&m, NOW, Some(at_cap)), Some(at_cap));
    m.not_before_ms = Some(NOW + 1500);
    let backing_off = Some(Hold::BackingOff { for_ms: 1500 });
    assert_eq!(hold(&m, NOW, None), backing_off);
    assert_eq!(hold(&m, NOW, Some(at_cap)), backing_off);
    m.not_before_ms = Some(NOW);
    assert_eq!(
        hold(&m, NOW, None),
        None,
        "the pause is over at its instant"
    );
}

/// `others_waiting`: another org waits with none of its 16 in flight.
fn slots(in_flight: usize, others_waiting: bool) -> Slots {
    Slots {
        slots: 64,
        in_flight,
        cap: 16,
        others_short: if others_waiting { 16 } else { 0 },
        queued_ahead: false,
        attempt_timeout: Duration::from_secs(10),
    }
}

fn org(in_flight: usize, typical_ms: Option<u64>) -> EndpointSlots {
    EndpointSlots {
        in_flight,
        paused_for: None,
        typical: typical_ms.map(Duration::from_millis),
        first_started_ago: None,
        parked_ahead: 0,
        queued_ahead: false,
        org: InOrg::default(),
    }
}

#[test]
fn an_org_whose_first_attempts_are_young_parks_briefly_then_as_before() {
    let young = EndpointSlots {
        first_started_ago: Some(Duration::from_millis(20)),
        ..org(16, None)
    };
    let hold = admit(&young, &slots(16, false)).unwrap_err();
    let timeout = Duration::from_secs(10);
    assert_eq!(park_wait(hold, timeout), SETTLE_PARK);
    assert_eq!(park_tier(&[100, 1_000, 4_000], SETTLE_PARK), 0);
    // Its first attempt has run past the settle time without ending: maybe a slow endpoint,
    // whose duration is guessed at half the timeout a turn (a slot that frees sooner calls
    // its parked messages forward: `crate::gate`).
    let old = EndpointSlots {
        first_started_ago: Some(SETTLE_PARK * 3),
        ..org(16, None)
    };
    let hold = admit(&old, &slots(16, false)).unwrap_err();
    assert_eq!(park_wait(hold, timeout), timeout / 2);
    // Its first attempt has run 4 s without an answer: still half the timeout a turn, behind
    // the turns already parked.
    let hanging = EndpointSlots {
        first_started_ago: Some(Duration::from_secs(4)),
        parked_ahead: 32,
        ..org(16, None)
    };
    let hold = admit(&hanging, &slots(16, false)).unwrap_err();
    assert_eq!(park_wait(hold, timeout), timeout / 2 * 3);
    // Past half the timeout, the age: its attempts last at least that.
    let older = EndpointSlots {
        first_started_ago: Some(Duration::from_secs(7)),
        ..org(16, None)
    };
    let hold = admit(&older, &slots(16, false)).unwrap_err();
    assert_eq!(park_wait(hold, timeout), Duration::from_secs(7));
    // Once an attempt has ended its typical duration decides, young or not.
    let known = EndpointSlots {
        first_started_ago: Some(Duration::from_millis(20)),
        ..org(16, Some(6_000))
    };
    let hold = admit(&known, &slots(16, false)).unwrap_err();
    assert_eq!(park_wait(hold, timeout), Duration::from_secs(6));
}

#[test]
fn within_its_cap_an_org_starts_whenever_a_slot_is_free() {
    assert_eq!(admit(&org(15, None), &slots(63, true)), Ok(()));
    assert!(matches!(
        admit(&org(3, None), &slots(64, false)),
        Err(Hold::AtCap { .. })
    ));
}

#[test]
fn a_paused_org_waits_out_its_pause_even_with_free_slots() {
    let mut o = org(0, Some(5));
    o.paused_for = Some(Duration::from_secs(30));
    assert_eq!(
        admit(&o, &slots(0, false)),
        Err(Hold::BackingOff { for_ms: 30_000 })
    );
}

#[test]
fn a_quick_org_borrows_idle_slots_but_leaves_a_cap_free() {
    let fast = Some(20);
    assert_eq!(admit(&org(16, fast), &slots(16, false)), Ok(()));
    assert_eq!(admit(&org(47, fast), &slots(47, false)), Ok(()));
    assert_eq!(
        admit(&org(48, fast), &slots(48, false)),
        Err(Hold::AtCap {
            typical_ms: Some(20),
            settling: false,
            may_wait: true,
            turns_ahead: 0,
        }),
        "the last 16 slots stay free for a newcomer"
    );
}

#[test]
fn a_quick_org_waits_in_the_process_for_a_slot_it_may_take() {
    let held = |o: EndpointSlots, s: Slots| wait_here(admit(&o, &s).unwrap_err());
    // Quick and alone, beyond its cap with only the reserve left: four attempts, at least
    // as long as a park.
    assert_eq!(
        held(org(48, Some(20)), slots(48, false)),
        Some(WAIT_HERE_MIN)
    );
    assert_eq!(
        held(org(48, Some(400)), slots(48, false)),
        Some(Duration::from_millis(1_600))
    );
    assert_eq!(
        held(org(48, Some(4_000)), slots(48, false)),
        Some(WAIT_HERE_MAX)
    );
    // Messages already wait here for a slot beyond the reserve: a new one queues behind
    // them instead of taking a released slot first.
    let behind = Slots {
        queued_ahead: true,
        ..slots(20, false)
    };
    assert_eq!(held(org(20, Some(20)), behind), Some(WAIT_HERE_MIN));
    // Another org waits below its cap: the idle slots are its, so this one waits for one
    // of its own attempts to end.
    assert_eq!(
        held(org(16, Some(20)), slots(40, true)),
        Some(WAIT_HERE_MIN)
    );
    // Its own messages already wait here: a new one queues behind them, even within its
    // cap, so they start in the order they came.
    let own = EndpointSlots {
        queued_ahead: true,
        ..org(3, Some(20))
    };
    assert_eq!(held(own, slots(20, false)), Some(WAIT_HERE_MIN));
    // Slow, hanging or not yet known: parks (a waiter would hold its message that long).
    assert_eq!(held(org(16, Some(5_000)), slots(16, false)), None);
    assert_eq!(held(org(16, None), slots(16, false)), None);
    // Its first attempts are young: it waits here until the first one ends, at most the
    // settle time.
    let young = EndpointSlots {
        first_started_ago: Some(Duration::from_millis(20)),
        ..org(16, None)
    };
    assert_eq!(held(young, slots(16, false)), Some(SETTLE_PARK));
    // A receiver's pause is never waited out in the process.
    let mut paused = org(0, Some(20));
    paused.paused_for = Some(Duration::from_secs(3));
    assert_eq!(held(paused, slots(0, false)), None);
}

#[test]
fn nobody_borrows_the_slots_an_org_waiting_below_its_cap_lacks() {
    // Another org waits with none in flight: its 16 and the reserve's 16 stay free.
    assert_eq!(admit(&org(16, Some(20)), &slots(31, true)), Ok(()));
    assert!(admit(&org(16, Some(20)), &slots(32, true)).is_err());
    // It waits with 13 of its 16 in flight: 3 more stay free besides the reserve.
    let short3 = Slots {
        others_short: 3,
        ..slots(44, false)
    };
    assert_eq!(admit(&org(28, Some(20)), &short3), Ok(()));
    let short3 = Slots {
        in_flight: 45,
        ..short3
    };
    assert!(admit(&org(29, Some(20)), &short3).is_err());
}

#[test]
fn a_slow_or_unknown_endpoint_keeps_to_its_cap() {
    // A hanging endpoint would hold a borrowed slot for the whole timeout.
    assert!(admit(&org(16, Some(9_000)), &slots(16, false)).is_err());
    assert!(admit(&org(16, Some(5_000)), &slots(16, false)).is_err());
    assert_eq!(admit(&org(16, Some(4_999)), &slots(16, false)), Ok(()));
    assert!(
        admit(&org(16, None), &slots(16, false)).is_err(),
        "not known yet"
    );
}

#[test]
fn a_held_message_waits_once_per_wait() {
    let timeout = Duration::from_secs(10);
    // The rest of a receiver's pause, whatever it is.
    assert_eq!(
        park_wait(Hold::BackingOff { for_ms: 60_000 }, timeout),
        Duration::from_secs(60)
    );
    // At the cap: about one attempt's time, at least a second, at most the timeout.
    let at_cap = |typical_ms| {
        park_wait(
            Hold::AtCap {
                typical_ms,
                settling: false,
                may_wait: false,
                turns_ahead: 0,
            },
            timeout,
        )
    };
    assert_eq!(at_cap(None), MIN_PARK);
    assert_eq!(at_cap(Some(20)), MIN_PARK);
    assert_eq!(at_cap(Some(4_000)), Duration::from_secs(4));
    assert_eq!(
        at_cap(Some(10_000)),
        timeout,
        "a hanging endpoint: one timeout"
    );
    assert_eq!(at_cap(Some(60_000)), timeout);
    // Behind three turns of its own parked messages: its turn, four attempts away; deeper
    // too (its endpoint's freed slots call it forward sooner), never more than 33 attempts'
    // time.
    let behind = |typical_ms, turns_ahead| {
        park_wait(
            Hold::AtCap {
                typical_ms,
                settling: false,
                may_wait: false,
                turns_ahead,
            },
            timeout,
        )
    };
    assert_eq!(behind(Some(2_000), 3), Duration::from_secs(8));
    assert_eq!(behind(None, 3), MIN_PARK * 4);
    assert_eq!(behind(Some(2_000), 8), Duration::from_secs(18));
    assert_eq!(behind(Some(2_000), 12), Duration::from_secs(26));
    assert_eq!(behind(Some(2_000), 40), Duration::from_secs(66));
    assert_eq!(behind(Some(10_000), 500), timeout * 33);
    let short = Duration::from_millis(500);
    assert_eq!(
        park_wait(
            Hold::AtCap {
                typical_ms: Some(900),
                settling: false,
                may_wait: false,
                turns_ahead: 0,
            },
            short
        ),
        MIN_PARK
    );
}

#[test]
fn a_message_parked_for_a_pause_carries_it_to_every_replica() {
    assert_eq!(
        carried_not_before(Hold::BackingOff { for_ms: 30_000 }, NOW),
        Some(NOW + 30_000)
    );
    assert_eq!(
        carried_not_before(
            Hold::AtCap {
                typical_ms: None,
                settling: false,
                may_wait: false,
                turns_ahead: 0,
            },
            NOW
        ),
        None
    );
}

#[test]
fn a_long_park_waits_in_the_row_and_a_short_one_in_the_broker() {
    let short = park(
        Hold::BackingOff { for_ms: 2_000 },
        Duration::from_secs(10),
        NOW,
        0,
    );
    assert_eq!(short.in_row_until(NOW), None, "{short:?}");
    let long = park(
        Hold::BackingOff { for_ms: 120_000 },
        Duration::from_secs(10),
        NOW,
        0,
    );
    assert!(PARK_TIERS_MS[long.tier] >= PARK_IN_ROW_FROM_MS, "{long:?}");
    // Due when the receiver's pause ends, not after the park queue's shorter delay.
    assert_eq!(long.in_row_until(NOW), Some(NOW + 120_000));
}

#[test]
fn the_park_tier_never_overshoots_the_wait() {
    let tiers = [1_000, 4_000, 16_000, 64_000, 256_000, 1_024_000];
    let tier = |secs| park_tier(&tiers, Duration::from_secs(secs));
    assert_eq!(tier(0), 0);
    assert_eq!(tier(1), 0);
    assert_eq!(tier(3), 0);
    assert_eq!(tier(10), 1);
    assert_eq!(tier(60), 2, "60 s: 16 s now, and the rest after");
    assert_eq!(tier(3600), 5);
    // A 60 s pause is covered in a handful of hops, not sixty.
    let (mut left, mut hops) = (60_000u64, 0);
    while left >= 1_000 {
        left -= tiers[park_tier(&tiers, Duration::from_millis(left))];
        hops += 1;
    }
    assert!(hops <= 6, "{hops} hops");
}

#[test]
fn one_admission_plan_per_message() {
    let m = meta(EventType::LeadCreated);
    let none = std::iter::empty;
    // Within its cap: start.
    assert!(matches!(
        plan_admission(&m, NOW, &org(3, Some(2_000)), &process(3), none()),
        Admission::Start(())
    ));
    // A quick org at its cap with another org waiting below its own: it waits here for
    // one of its attempts to end, and would park at its cap if none did.
    let waiting = [Neighbour {
        in_flight: 0,
        waiting: true,
    }];
    let Admission::WaitHere { limit, otherwise } = plan_admission(
        &m,
        NOW,
        &org(16, Some(20)),
        &process(40),
        waiting.into_iter(),
    ) else {
        panic!("a quick org waits in the process")
    };
    assert_eq!(limit, WAIT_HERE_MIN);
    assert_eq!(otherwise.reason, "at_cap");
    // The same org with nobody waiting borrows an idle slot.
    assert!(matches!(
        plan_admission(&m, NOW, &org(16, Some(20)), &process(40), none()),
        Admission::Start(())
    ));
    // A slow org at its cap parks: a 2 s endpoint (slow beside a 3 s timeout) waits in
    // the 1 s tier, then again.
    let slow = Process {
        attempt_timeout: Duration::from_secs(3),
        ..process(16)
    };
    let Admission::Park(p) = plan_admission(&m, NOW, &org(16, Some(2_000)), &slow, none()) else {
        panic!("parked")
    };
    assert_eq!(p.reason, "at_cap");
    assert_eq!(
        PARK_TIERS_MS[p.tier], 1_000,
        "2 s: the 1 s tier, then again"
    );
    assert_eq!(p.org_waits, Some(Duration::from_millis(1_000)));
    assert_eq!(p.not_before_ms, None);
    // A receiver's pause carried by the message parks it whatever the slots, and the
    // parked message carries the pause on.
    let mut paused = m.clone();
    paused.not_before_ms = Some(NOW + 60_000);
    let Admission::Park(p) = plan_admission(&paused, NOW, &org(0, None), &process(0), none())
    else {
        panic!("parked")
    };
    assert_eq!(
        (p.reason, p.not_before_ms),
        ("backing_off", Some(NOW + 60_000))
    );
    assert_eq!(p.org_waits, None);
}

#[test]
fn only_waiting_neighbours_keep_slots_free() {
    let n = |in_flight, waiting| Neighbour { in_flight, waiting };
    assert_eq!(others_short(16, [n(3, true), n(0, false)].into_iter()), 13);
    assert_eq!(others_short(16, [n(20, true), n(0, true)].into_iter()), 16);
    assert_eq!(others_short(16, std::iter::empty()), 0);
}

#[test]
fn an_endpoint_goes_to_the_background_at_its_first_failure_and_back_at_its_first_success() {
    assert_eq!(lane(0), Lane::Foreground);
    assert_eq!(lane(1), Lane::Background);
    assert_eq!(lane(u32::MAX), Lane::Background);
    assert!(BACKGROUND_WAIT_MAX <= MIN_PARK / 10, "a wait, not a park");
}

#[test]
fn a_backlog_parked_together_comes_due_spread_over_its_wait() {
    let timeout = Duration::from_secs(10);
    let deep = Hold::AtCap {
        typical_ms: Some(5_000),
        settling: false,
        may_wait: false,
        turns_ahead: MAX_TURNS_AHEAD,
    };
    // A thousand messages of one endpoint, deep in its backlog, parked in the same instant:
    // each waits in its row, due between the wait (nine of its attempts' time) and twice it.
    let dues: Vec<i64> = (0..1_000)
        .map(|spread| park(deep, timeout, NOW, spread).in_row_until(NOW).unwrap())
        .collect();
    let wait = 45_000;
    assert!(
        dues.iter()
            .all(|d| (NOW + wait..NOW + 2 * wait).contains(d))
    );
    let mut distinct = dues.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 1_000, "no two come due in the same instant");
    // In every tenth of the span about a tenth of them: no burst.
    for tenth in 0..10 {
        let from = NOW + wait + tenth * wait / 10;
        let n = dues
            .iter()
            .filter(|d| (from..from + wait / 10).contains(*d))
            .count();
        assert!((80..=120).contains(&n), "{n} in tenth {tenth}");
    }
    // A message with few turns ahead still parks in the broker, briefly.
    let shallow = Hold::AtCap {
        typical_ms: Some(5_000),
        settling: false,
        may_wait: false,
        turns_ahead: 1,
    };
    assert_eq!(park(shallow, timeout, NOW, 500).in_row_until(NOW), None);
}
