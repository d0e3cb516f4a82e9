//! A delivery's status, as the delivery log and the internal API show it (docs/api.md).

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

named_enum! {
    /// Where a delivery is, as its row in `deliveries` keeps it (one enum where the event's row
    /// kept seven columns; migrations/2026-12-03-000043_deliveries_of_their_own/up.sql maps
    /// them): waiting for the relay (`queued`, or `paced` for a throttle turn), `out` with a
    /// worker or in a broker queue, waiting in its row (`held` for its endpoint's outage,
    /// `after_earlier` for an earlier delivery of its lead), or ended. Whether an attempt of its
    /// cycle failed is the row's `retrying`, since a retry can be in any of the first five.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum DeliveryState {
        Queued,
        Paced,
        Out,
        Held,
        AfterEarlier,
        Succeeded,
        Dead,
        Skipped,
    }
}

impl DeliveryState {
    /// The status the API shows: an ended state is its own status; before that, `failed` once
    /// an attempt of the cycle failed, `pending` until then.
    pub fn status(self, retrying: bool) -> DeliveryStatus {
        match self {
            DeliveryState::Succeeded => DeliveryStatus::Succeeded,
            DeliveryState::Dead => DeliveryStatus::Dead,
            DeliveryState::Skipped => DeliveryStatus::Skipped,
            _ if retrying => DeliveryStatus::Failed,
            _ => DeliveryStatus::Pending,
        }
    }

    /// Every state, in the order of their declaration.
    pub fn all() -> &'static [DeliveryState] {
        <DeliveryState as strum::VariantArray>::VARIANTS
    }

    /// Ended: succeeded, dead or skipped.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            DeliveryState::Succeeded | DeliveryState::Dead | DeliveryState::Skipped
        )
    }

    /// Whether a delivery in this state, due at `due_at`, still waits in its row at `now`:
    /// whatever message carries it then (a bundle put back, a redelivery after a crash, a
    /// duplicate) leaves it there and makes no request. What moves it on is its row's: the
    /// relay publishes a queued or paced row once due (and marks it `out`), the end of an
    /// outage releases a held one, the end of an earlier delivery of its lead one waiting for
    /// it. `out` (and `queued` with no due time, a new delivery the relay published as it was
    /// written) is due. `test`: a test event is sent while its endpoint fails, as a probe.
    pub fn waits_in_row(
        self,
        due_at: Option<time::OffsetDateTime>,
        now: time::OffsetDateTime,
        test: bool,
    ) -> bool {
        match self {
            DeliveryState::Queued | DeliveryState::Paced => due_at.is_some_and(|d| d > now),
            DeliveryState::Held => !test,
            DeliveryState::AfterEarlier => true,
            DeliveryState::Out
            | DeliveryState::Succeeded
            | DeliveryState::Dead
            | DeliveryState::Skipped => false,
        }
    }

    /// What the deliveries list says a delivery waits for, when it waits in its row.
    pub fn waiting_for(self) -> Option<crate::pace::WaitingFor> {
        match self {
            DeliveryState::Paced => Some(crate::pace::WaitingFor::Throttle),
            DeliveryState::AfterEarlier => Some(crate::pace::WaitingFor::EarlierDelivery),
            _ => None,
        }
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
        /// The egress proxy (`QUALIFIER_EGRESS_PROXY`) could not be reached, or refused the
        /// tunnel: our side of the path, not the endpoint's.
        Proxy,
        /// The endpoint's OAuth 2 token server gave no token (an error status, no answer, an
        /// answer without `access_token`): the receiver's side, counted towards its health.
        TokenRequest,
    }
}

impl FailureKind {
    /// Whether a failure of this kind says anything about the endpoint. A secret we cannot open
    /// or a proxy we cannot pass is ours to mend: it is retried like any failure, but it never
    /// moves the endpoint towards `failing` (docs/delivery.md, "Endpoint health").
    pub fn blames_endpoint(self) -> bool {
        !matches!(self, FailureKind::SecretUnreadable | FailureKind::Proxy)
    }
}

/// An attempt that got no HTTP answer: the kind, and the line the delivery log shows (which
/// never names an address, docs/reliability.md, "Hostile input").
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

/// One entry of a delivery's attempt log, in the form the console and the internal API show it
/// ([`Self::for_display`]). Stored through [`Self::stored`], in this form or a compact one, and
/// read back through [`Self::from_stored`].
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
    /// The first [`RESPONSE_EXCERPT_BYTES`] of the receiver's answer, as text without control
    /// characters ([`response_excerpt`]); absent when it answered nothing, and in entries written
    /// before the attempt log kept answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
    /// The headers the attempt was sent with, in order, signatures shortened (what the receiver
    /// saw; the secret is never among them). Only the console and the internal API hold them
    /// ([`AttemptEntry::for_display`] rebuilds them); the stored entry keeps [`Self::signatures`]
    /// instead. Entries stored before that hold them whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<(String, String)>,
    /// What the stored entry keeps of its request's headers: only what differs from one attempt
    /// to the next, the two signatures, shortened (`X-Qualifier-Signature`, then
    /// `webhook-signature`). Every other header follows from the delivery and the attempt's
    /// start ([`Request::headers`]), so repeating it per attempt would only take room. Empty
    /// when no request was sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
}

/// What a delivery's requests say about it, whichever the attempt: the rest of each request's
/// headers comes from the attempt itself (its start and its signatures). The sender builds its
/// headers here, and the delivery log rebuilds them here, so the two cannot disagree.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub event_type: &'a str,
    pub delivery_id: &'a str,
    /// A test event (`X-Qualifier-Test: true`).
    pub test: bool,
    /// A probe of a failing endpoint (`X-Qualifier-Probe: true`); never in a delivery's log.
    pub probe: bool,
}

impl Request<'_> {
    /// The request's headers, in the order they are sent (docs/receivers.md): `signature` is
    /// `X-Qualifier-Signature`'s value and `standard` `webhook-signature`'s.
    pub fn headers(
        &self,
        started_at: time::OffsetDateTime,
        signature: String,
        standard: String,
    ) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = Vec::with_capacity(10);
        let mut add = |k: &str, v: String| h.push((k.to_owned(), v));
        add("Content-Type", "application/json".into());
        add("X-Qualifier-Event", self.event_type.into());
        add("X-Qualifier-Signature", signature);
        add("X-Qualifier-Delivery", self.delivery_id.into());
        add("X-Qualifier-Timestamp", crate::timefmt::format(started_at));
        add("webhook-id", self.delivery_id.into());
        add("webhook-timestamp", started_at.unix_timestamp().to_string());
        add("webhook-signature", standard);
        if self.test {
            add("X-Qualifier-Test", "true".into());
        }
        if self.probe {
            add("X-Qualifier-Probe", "true".into());
        }
        h
    }
}

/// How much of a receiver's answer an attempt keeps.
pub const RESPONSE_EXCERPT_BYTES: usize = 4096;

/// What an attempt keeps of a receiver's answer: its first [`RESPONSE_EXCERPT_BYTES`], read as
/// UTF-8 (invalid bytes become U+FFFD), with every control character but newline and tab
/// removed, so a stored answer can hold no NUL (which PostgreSQL's jsonb refuses), no terminal
/// escape sequence and no carriage return that rewrites a log line. `None` when nothing is
/// left. HTML in it is left as it is: every page escapes it when it shows it.
/// Signature headers as an attempt's record shows them: the first 8 characters of the value
/// after its scheme, then `…`. A body and its whole signature would be a pair anyone who sees
/// them could replay to the receiver; the start is enough to tell two signatures apart.
const SIGNATURE_HEADERS: [&str; 2] = ["x-qualifier-signature", "webhook-signature"];

impl AttemptEntry {
    /// The entry as the console and the internal API show it: its request's headers, rebuilt
    /// from the delivery (`request`) and the entry's own start and signatures, signatures
    /// shortened. An entry stored with its headers whole (before the log kept only what differs
    /// per attempt) shows them, shortened.
    pub fn for_display(mut self, request: &Request<'_>) -> AttemptEntry {
        let signatures = std::mem::take(&mut self.signatures);
        if self.request_headers.is_empty()
            && let [signature, standard] = signatures.as_slice()
        {
            self.request_headers =
                request.headers(self.started_at, signature.clone(), standard.clone());
        }
        self.signatures.clear();
        for (name, value) in &mut self.request_headers {
            if SIGNATURE_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                *value = shorten_signature(value);
            }
        }
        self
    }

    /// What an entry stores of the headers a request was sent with: its two signatures,
    /// shortened as they are shown ([`Self::signatures`]). Nothing when no request was sent.
    pub fn stored_signatures(headers: &[(String, String)]) -> Vec<String> {
        let of = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| shorten_signature(v))
        };
        match (of(SIGNATURE_HEADERS[0]), of(SIGNATURE_HEADERS[1])) {
            (Some(a), Some(b)) => vec![a, b],
            _ => Vec::new(),
        }
    }
}

/// An entry as the outbox stores it in compact storage (`QUALIFIER_PAYLOAD_STORAGE=compressed`):
/// one-letter keys, the start as milliseconds since the epoch and no `null`s, about 80 bytes
/// fewer than the full form for the usual single attempt (docs/decisions.md, "Compact attempt
/// entries"). `n` is never absent, so its presence tells the two forms apart.
#[derive(serde::Serialize, serde::Deserialize)]
struct CompactEntry {
    n: u32,
    t: i64,
    d: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    k: Option<FailureKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    g: Vec<String>,
}

impl AttemptEntry {
    /// The entry as the outbox stores it: compact (short keys, see [`CompactEntry`]) or in
    /// full, this type's own form, which every earlier version reads. Either way only the
    /// signatures are kept of the request's headers ([`Self::signatures`]).
    pub fn stored(&self, compact: bool) -> serde_json::Value {
        if !compact {
            return serde_json::to_value(self).expect("an attempt entry is plain JSON");
        }
        let c = CompactEntry {
            n: self.attempt,
            t: (self.started_at.unix_timestamp_nanos() / 1_000_000) as i64,
            d: self.duration_ms,
            s: self.status_code,
            e: self.error.clone(),
            k: self.error_kind,
            b: self.response_body.clone(),
            g: self.signatures.clone(),
        };
        serde_json::to_value(c).expect("an attempt entry is plain JSON")
    }

    /// An entry as stored, in either form; `None` for one that is neither (a hand-edited row).
    pub fn from_stored(v: &serde_json::Value) -> Option<AttemptEntry> {
        if v.get("n").is_none() {
            return serde_json::from_value(v.clone()).ok();
        }
        let c: CompactEntry = serde_json::from_value(v.clone()).ok()?;
        Some(AttemptEntry {
            attempt: c.n,
            started_at: time::OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(c.t) * 1_000_000,
            )
            .ok()?,
            duration_ms: c.d,
            status_code: c.s,
            error: c.e,
            error_kind: c.k,
            response_body: c.b,
            request_headers: Vec::new(),
            signatures: c.g,
        })
    }
}

/// `sha256=1a2b3c4d…` for `sha256=<hex>`; `v1,1a2b3c4d… v1,5e6f7a8b…` for Standard Webhooks'
/// space-separated list.
fn shorten_signature(value: &str) -> String {
    value
        .split(' ')
        .map(|sig| {
            let (scheme, rest) = match sig.split_once(['=', ',']) {
                Some((s, r)) => (&sig[..s.len() + 1], r),
                None => ("", sig),
            };
            let kept: String = rest.chars().take(8).collect();
            if kept.len() < rest.len() {
                format!("{scheme}{kept}…")
            } else {
                format!("{scheme}{kept}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn response_excerpt(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(RESPONSE_EXCERPT_BYTES)];
    let text: String = String::from_utf8_lossy(head)
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect();
    (!text.trim().is_empty()).then_some(text)
}

/// How the attempts of one delivery read across replays: `(replay, attempt)` for each entry of
/// its log, oldest first. Within a cycle attempt numbers only grow (a held delivery resumes at
/// the next number); a replay starts again at 1, so an entry whose number does not exceed the
/// one before it opens the next replay. Replay 0 is the original cycle.
pub fn cycles(log: &[AttemptEntry]) -> Vec<(u32, u32)> {
    let mut replay = 0;
    let mut last = 0;
    log.iter()
        .map(|e| {
            if e.attempt <= last {
                replay += 1;
            }
            last = e.attempt;
            (replay, e.attempt)
        })
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_state_shows_its_status_and_what_it_waits_for() {
        use super::DeliveryState as S;
        use crate::pace::WaitingFor;
        for s in [S::Queued, S::Paced, S::Out, S::Held, S::AfterEarlier] {
            assert_eq!(s.status(false), DeliveryStatus::Pending, "{s}");
            assert_eq!(s.status(true), DeliveryStatus::Failed, "{s}");
        }
        for (s, status) in [
            (S::Succeeded, DeliveryStatus::Succeeded),
            (S::Dead, DeliveryStatus::Dead),
            (S::Skipped, DeliveryStatus::Skipped),
        ] {
            assert_eq!(s.status(true), status, "an ended state is its own status");
            assert_eq!(s.status(false), status);
            assert_eq!(s.waiting_for(), None);
        }
        assert_eq!(S::Paced.waiting_for(), Some(WaitingFor::Throttle));
        assert_eq!(
            S::AfterEarlier.waiting_for(),
            Some(WaitingFor::EarlierDelivery)
        );
        assert_eq!(
            S::Held.waiting_for(),
            None,
            "an outage's hold is not a wait the list names"
        );
        assert_eq!("after_earlier".parse::<S>().unwrap(), S::AfterEarlier);
    }

    use super::*;
    use strum::VariantArray;

    #[test]
    fn signatures_are_shown_shortened_and_nothing_else_changes() {
        let hex = "a".repeat(64);
        let b64 = "Zm9vYmFyYmF6cXV4cXV1eGZvb2Jhcg==";
        let entry = AttemptEntry {
            attempt: 1,
            started_at: time::OffsetDateTime::UNIX_EPOCH,
            duration_ms: 3,
            status_code: Some(200),
            error: None,
            error_kind: None,
            response_body: None,
            request_headers: vec![
                ("X-Qualifier-Signature".into(), format!("sha256={hex}")),
                ("webhook-signature".into(), format!("v1,{b64} v1,{b64}")),
                ("webhook-id".into(), "msg_1".into()),
            ],
            signatures: vec![],
        }
        .for_display(&REQUEST);
        let h = &entry.request_headers;
        assert_eq!(h[0].1, "sha256=aaaaaaaa…");
        assert_eq!(h[1].1, "v1,Zm9vYmFy… v1,Zm9vYmFy…");
        assert_eq!(h[2].1, "msg_1");
        assert!(!h[0].1.contains(&hex) && !h[1].1.contains(b64));
    }

    #[test]
    fn a_compact_entry_reads_back_as_the_entry_it_was_and_is_smaller() {
        let entry =
            |status: Option<u16>, error: Option<&str>, kind, body: Option<&str>| AttemptEntry {
                attempt: 2,
                started_at: time::macros::datetime!(2026-11-25 10:15:02.481 UTC),
                duration_ms: 31,
                status_code: status,
                error: error.map(str::to_owned),
                error_kind: kind,
                response_body: body.map(str::to_owned),
                request_headers: vec![],
                signatures: vec!["sha256=aaaaaaaa…".into(), "v1,Zm9vYmFy…".into()],
            };
        for e in [
            entry(Some(200), None, None, Some("ok")),
            entry(Some(500), Some("HTTP 500"), None, Some("{\"error\":1}")),
            entry(None, Some("timed out"), Some(FailureKind::Timeout), None),
        ] {
            let full = e.stored(false);
            let compact = e.stored(true);
            assert_eq!(AttemptEntry::from_stored(&full).as_ref(), Some(&e));
            assert_eq!(AttemptEntry::from_stored(&compact).as_ref(), Some(&e));
            assert!(compact.get("attempt").is_none() && compact.get("n").is_some());
            let (f, c) = (full.to_string().len(), compact.to_string().len());
            assert!(c + 50 < f, "{c} bytes compact against {f}");
        }
        // The full form is the one every earlier version wrote and reads.
        let full = entry(Some(200), None, None, Some("ok")).stored(false);
        assert_eq!(full["attempt"], 2);
        assert_eq!(full["started_at"], "2026-11-25T10:15:02.481Z");
        assert_eq!(full["error"], serde_json::Value::Null);
        // Neither form: left out by the reader, not a failure.
        assert_eq!(
            AttemptEntry::from_stored(&serde_json::json!({"n": "x"})),
            None
        );
        assert_eq!(AttemptEntry::from_stored(&serde_json::json!(3)), None);
    }

    const REQUEST: Request<'static> = Request {
        event_type: "lead.created",
        delivery_id: "7d0f3f0e-1b7c-4c55-9a4b-4d5e2f1a0b9c",
        test: false,
        probe: false,
    };

    #[test]
    fn a_stored_entry_keeps_only_the_signatures_and_shows_every_header_it_was_sent_with() {
        let hex = "b".repeat(64);
        let b64 = "Zm9vYmFyYmF6cXV4cXV1eGZvb2Jhcg==";
        let started_at = time::macros::datetime!(2026-11-25 10:15:02.481 UTC);
        let sent = REQUEST.headers(started_at, format!("sha256={hex}"), format!("v1,{b64}"));
        let stored = AttemptEntry {
            attempt: 2,
            started_at,
            duration_ms: 7,
            status_code: Some(200),
            error: None,
            error_kind: None,
            response_body: None,
            request_headers: vec![],
            signatures: AttemptEntry::stored_signatures(&sent),
        };
        let json = serde_json::to_string(&stored).unwrap();
        assert!(
            !json.contains("request_headers") && !json.contains(&hex),
            "{json}"
        );
        assert!(json.len() < 200, "{} bytes: {json}", json.len());
        let shown: AttemptEntry = serde_json::from_str::<AttemptEntry>(&json)
            .unwrap()
            .for_display(&REQUEST);
        // What an entry that kept every header whole shows, header for header.
        let whole = AttemptEntry {
            request_headers: sent,
            signatures: vec![],
            ..stored.clone()
        }
        .for_display(&REQUEST);
        assert_eq!(shown, whole);
        assert_eq!(shown.request_headers[4].1, "2026-11-25T10:15:02.481Z");
        assert_eq!(shown.request_headers[6].1, "1795601702");
        assert_eq!(shown.request_headers[2].1, "sha256=bbbbbbbb…");
        assert!(shown.signatures.is_empty());
        // No request sent (a refused address): no headers, stored or shown.
        assert!(AttemptEntry::stored_signatures(&[]).is_empty());
        let none = AttemptEntry {
            signatures: vec![],
            ..stored
        }
        .for_display(&REQUEST);
        assert!(none.request_headers.is_empty());
    }

    #[test]
    fn an_excerpt_is_bounded_and_holds_no_control_characters() {
        let big = vec![b'a'; 1 << 20];
        assert_eq!(
            response_excerpt(&big).unwrap().len(),
            RESPONSE_EXCERPT_BYTES
        );
        let hostile = b"ok\0\x1b[2J\x1b]0;owned\x07\r\nline\ttab\x7f\xff<script>x</script>";
        let e = response_excerpt(hostile).unwrap();
        assert_eq!(e, "ok[2J]0;owned\nline\ttab\u{fffd}<script>x</script>");
        assert!(!e.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        assert_eq!(response_excerpt(b""), None);
        assert_eq!(response_excerpt(b"\0\r\n "), None);
        // A multi-byte character cut at the limit becomes one replacement character.
        let mut cut = vec![b'a'; RESPONSE_EXCERPT_BYTES - 1];
        cut.extend("é".as_bytes());
        assert!(response_excerpt(&cut).unwrap().ends_with('\u{fffd}'));
    }

    fn entry(attempt: u32) -> AttemptEntry {
        AttemptEntry {
            attempt,
            started_at: time::OffsetDateTime::UNIX_EPOCH,
            duration_ms: 1,
            status_code: Some(500),
            error: Some("HTTP 500".into()),
            error_kind: None,
            response_body: None,
            request_headers: vec![],
            signatures: vec![],
        }
    }

    #[test]
    fn replays_number_their_attempts_again_from_one() {
        let log: Vec<_> = [1, 2, 3, 4, 5, 1, 2, 1, 3, 4].map(entry).to_vec();
        assert_eq!(
            cycles(&log),
            [
                (0, 1),
                (0, 2),
                (0, 3),
                (0, 4),
                (0, 5),
                (1, 1),
                (1, 2),
                (2, 1),
                (2, 3),
                (2, 4)
            ]
        );
        assert!(cycles(&[]).is_empty());
    }

    #[test]
    fn entries_written_before_the_excerpt_still_read() {
        let old = serde_json::json!({"attempt": 1, "started_at": "2026-11-21T10:15:02.481Z",
            "duration_ms": 3, "status_code": 200, "error": null});
        let e: AttemptEntry = serde_json::from_value(old).unwrap();
        assert_eq!((e.response_body, e.request_headers.len()), (None, 0));
    }

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
