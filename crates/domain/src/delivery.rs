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

impl DeliveryStatus {
    /// Whether a replay (one delivery, the console's `Replay`, or bulk) accepts a delivery in
    /// this state: only a finished one. The store refuses the others and the console shows the
    /// button by the same rule, so the two cannot disagree.
    pub fn replayable(self) -> bool {
        self.is_final()
    }
}

named_enum! {
    /// Why an attempt got no HTTP answer (or was never sent). Stored in the attempt log as
    /// `error_kind` beside the one-line `error`, so a delivery rule or a page branches on the
    /// kind, never on the sentence.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum FailureKind {
        /// No complete answer within `QUALIFIER_DELIVERY_TIMEOUT_MS`.
        Timeout,
        /// The TCP connection could not be made (refused, reset, unreachable).
        Connect,
        /// The TLS handshake failed (certificate, protocol).
        Tls,
        /// The host resolved to an address the egress policy refuses (or did not resolve).
        RefusedAddress,
        /// The stored url no longer parses as a webhook url.
        InvalidUrl,
        /// The request failed after connecting (protocol error, connection closed early).
        Request,
        /// The signing secret could not be opened (`QUALIFIER_SECRET_KEY` changed).
        SecretUnreadable,
    }
}

/// An attempt that got no HTTP answer: the kind, and the line the delivery log shows (which
/// never names an address, contract section 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoAnswer {
    pub kind: FailureKind,
    pub message: String,
}

impl NoAnswer {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        NoAnswer {
            kind,
            message: message.into(),
        }
    }
}

/// One entry of a delivery's attempt log, written and read through this one type (the
/// internal API returns the entries as they are stored).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptEntry {
    /// 1..5 within a cycle; a replay starts a new cycle at 1.
    pub attempt: u32,
    #[serde(with = "crate::timefmt::millis")]
    pub started_at: time::OffsetDateTime,
    pub duration_ms: u64,
    /// The receiver's status, when it answered.
    pub status_code: Option<u16>,
    /// What went wrong, `null` on success.
    pub error: Option<String>,
    /// The kind of a failure without an answer (absent in entries written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<FailureKind>,
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
