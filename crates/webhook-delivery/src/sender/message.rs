//! What the send stage hands a receiver other than a web server, and what it reads of any
//! receiver's answer: shared by the HTTPS sender, the destinations' senders and the proxy's
//! tunnel, and depending on none of them.

/// A delivery as a destination other than `https` takes it: the body and our headers (the
/// signatures included), and what names and files it.
pub(crate) struct DestinationMessage<'a> {
    pub(crate) body: &'a [u8],
    pub(crate) headers: &'a [(String, String)],
    pub(crate) delivery_id: String,
    pub(crate) event_id: String,
    pub(crate) org_id: String,
    pub(crate) event_type: &'a str,
    /// The event's `occurred_at` (an S3 object's date).
    pub(crate) occurred_at: time::OffsetDateTime,
    /// The attempt's start (what a signature is dated).
    pub(crate) attempted_at: time::OffsetDateTime,
}

/// A response header's value, when it is text.
pub(crate) fn header_text(
    headers: &reqwest::header::HeaderMap,
    name: reqwest::header::HeaderName,
) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
