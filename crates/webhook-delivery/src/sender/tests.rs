use super::*;

#[test]
fn an_orgs_uploads_replace_its_own_entry_and_never_empty_the_others() {
    let mut ids: Identities<u32> = Identities::new();
    let a = uuid::Uuid::new_v4();
    let b = uuid::Uuid::new_v4();
    ids.insert(b, [2; 32], 7);
    for i in 0..(MAX_IDENTITIES * 2) as u32 {
        let mut fp = [0u8; 32];
        fp[..4].copy_from_slice(&i.to_le_bytes());
        ids.insert(a, fp, i);
        assert_eq!(ids.by_org.len(), 2);
    }
    assert_eq!(ids.get(b, &[2; 32]), Some(7), "another org's entry is kept");
    assert_eq!(
        ids.get(b, &[3; 32]),
        None,
        "a replaced certificate is built again"
    );
}

#[test]
fn past_the_limit_the_org_used_least_recently_gives_way() {
    let mut ids: Identities<usize> = Identities::new();
    let orgs: Vec<uuid::Uuid> = (0..MAX_IDENTITIES).map(|_| uuid::Uuid::new_v4()).collect();
    for (i, o) in orgs.iter().enumerate() {
        ids.insert(*o, [1; 32], i);
    }
    // The first org is used again: the second is now the least recently used.
    assert_eq!(ids.get(orgs[0], &[1; 32]), Some(0));
    let newcomer = uuid::Uuid::new_v4();
    ids.insert(newcomer, [1; 32], 9);
    assert_eq!(ids.by_org.len(), MAX_IDENTITIES);
    assert_eq!(ids.get(orgs[1], &[1; 32]), None);
    assert_eq!(ids.get(orgs[0], &[1; 32]), Some(0));
    assert_eq!(ids.get(newcomer, &[1; 32]), Some(9));
}

/// A name server that never answers ends the attempt at its deadline, as a timeout (the
/// proxy path resolves the name itself, inside [`within`]).
#[tokio::test]
async fn a_stalled_step_ends_at_the_attempts_deadline() {
    let timeout = Duration::from_millis(50);
    let deadline = tokio::time::Instant::now() + timeout;
    let stalled = within(deadline, timeout, std::future::pending::<()>()).await;
    let why = stalled.unwrap_err();
    assert_eq!(why.kind, FailureKind::Timeout);
    assert!(tokio::time::Instant::now() >= deadline);
    // A step after the deadline has nothing left, whatever it would take.
    let late = within(deadline, timeout, std::future::pending::<()>()).await;
    assert_eq!(late.unwrap_err().kind, FailureKind::Timeout);
}
