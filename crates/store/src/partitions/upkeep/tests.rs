use super::PartitionName;
use time::macros::datetime;

const WEEK: PartitionName = PartitionName::Days {
    first: 20783,
    last: 20789,
};

#[test]
fn a_partition_is_a_fifth_of_the_retention_from_one_to_seven_days() {
    let days = |d: u64| super::partition_days(std::time::Duration::from_secs(d * 86_400));
    assert_eq!(days(30), 6);
    assert_eq!(days(3), 1);
    assert_eq!(days(0), 1);
    assert_eq!(days(90), 7);
}

#[test]
fn partition_names_are_read_back_and_nothing_else_is() {
    assert_eq!(PartitionName::parse("outbox_d20783_20789"), Some(WEEK));
    assert_eq!(
        PartitionName::parse("outbox_legacy"),
        Some(PartitionName::Legacy)
    );
    for bad in [
        "outbox",
        "outbox_d",
        "outbox_d20783",
        "outbox_d20783_",
        "outbox_d20789_20783",
        "outbox_dx1_2",
        "outbox_d1_2;DROP",
        "outbox_d12345678_123456789",
    ] {
        assert_eq!(PartitionName::parse(bad), None, "{bad}");
    }
    assert_eq!(WEEK.table(), "outbox_d20783_20789");
    assert_eq!(WEEK.delivery_table(), "deliveries_d20783_20789");
    assert_eq!(PartitionName::Legacy.delivery_table(), "deliveries_legacy");
}

#[test]
fn a_partition_owns_its_days_of_the_sequence_and_the_legacy_table_everything_below() {
    assert_eq!(WEEK.lower(), 20783 << 32);
    assert_eq!(WEEK.upper(), 20789 << 32);
    assert_eq!(
        PartitionName::Legacy.upper(),
        PartitionName::Days {
            first: 20000,
            last: 20001
        }
        .lower()
    );
    assert!(PartitionName::Legacy.lower() < 1);
}

#[test]
fn a_partition_expires_an_hour_after_its_last_day_has_passed_the_cutoff() {
    // Day 20789 begins 2026-12-02 (UTC): the partition's days end then.
    assert!(!WEEK.expired(datetime!(2026-12-02 00:59 UTC)));
    assert!(WEEK.expired(datetime!(2026-12-02 01:00 UTC)));
    assert!(!WEEK.expired(datetime!(2026-11-28 12:00 UTC)));
}
