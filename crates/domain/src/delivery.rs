//! A delivery's status, as the delivery log and the internal API show it (contract section 3).

named_enum! {
    /// `pending` until the first attempt, `failed` while retries remain, then one of the three
    /// final states. A replay moves a final state back to `pending`.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum DeliveryStatus {
        Pending,
        Succeeded,
        /// An attempt failed and another is scheduled.
        Failed,
        /// Every attempt failed; the message sits in the dead-letter queue.
        Dead,
        /// Ended without a request: the webhook was missing, disabled or not subscribed.
        Skipped,
    }
}

impl DeliveryStatus {
    /// No further attempt will be made unless someone replays it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            DeliveryStatus::Succeeded | DeliveryStatus::Dead | DeliveryStatus::Skipped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    #[test]
    fn names_are_the_contracts_and_round_trip() {
        let names: Vec<&str> = DeliveryStatus::VARIANTS
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(names, ["pending", "succeeded", "failed", "dead", "skipped"]);
        for &s in DeliveryStatus::VARIANTS {
            assert_eq!(s.as_str().parse::<DeliveryStatus>(), Ok(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert!("done".parse::<DeliveryStatus>().is_err());
    }

    #[test]
    fn only_pending_and_failed_are_in_progress() {
        use DeliveryStatus::*;
        assert!(!Pending.is_final() && !Failed.is_final());
        assert!(Succeeded.is_final() && Dead.is_final() && Skipped.is_final());
    }
}
