//! Attempts to the AWS destinations (docs/destinations.md): SQS `SendMessage`, EventBridge
//! `PutEvents` and S3 `PutObject`, each one request signed with Signature Version 4 and sent
//! through the sender's HTTPS client, so a webhook's address rules (the guarded resolver), its
//! timeout and its certificate authorities (`QUALIFIER_WEBHOOK_CA_FILE`) hold for them too.
//!
//! Three requests do not need the SDK: each is one JSON or object `PUT` whose answer we read for
//! success or an error code (docs/decisions.md, "Destinations beyond HTTPS").

use qualifier_domain::delivery::{FailureKind, NoAnswer, response_excerpt};
use qualifier_domain::destination::{
    AwsAccount, AwsCredentials, Destination, EventBridge, S3, Sqs,
};
use ring::{digest, hmac};
use serde_json::{Value, json};

use super::message::DestinationMessage;

/// One signed request to an AWS service.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: reqwest::Method,
    /// Scheme, host and port (no trailing `/`).
    pub(crate) base: String,
    /// The path, already percent-encoded as sent (and as signed).
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    service: &'static str,
    region: String,
}

/// The answer an attempt records, or why it failed.
pub(crate) type Outcome = Result<String, NoAnswer>;

fn base(account: &AwsAccount, service: &str) -> String {
    match &account.endpoint_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => format!("https://{service}.{}.amazonaws.com", account.region),
    }
}

/// The lead an event is about (the FIFO group of its messages), from the envelope.
fn lead_of(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let data = v.get("data")?;
    data.pointer("/lead/id")
        .or_else(|| data.pointer("/handoff/lead_id"))
        .or_else(|| data.get("lead_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The request's headers as message attributes or object metadata: ours but `Content-Type`.
fn carried<'a>(msg: &'a DestinationMessage<'_>) -> impl Iterator<Item = &'a (String, String)> {
    msg.headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("content-type"))
}

/// A request of AWS's JSON protocol to `service` (`sqs`, `events`) of `account`.
fn json_request(
    account: &AwsAccount,
    service: &'static str,
    target: &str,
    version: &str,
    body: Value,
) -> Request {
    Request {
        method: reqwest::Method::POST,
        base: base(account, service),
        path: "/".to_owned(),
        headers: vec![
            (
                "content-type".to_owned(),
                format!("application/x-amz-json-{version}"),
            ),
            ("x-amz-target".to_owned(), target.to_owned()),
        ],
        body: serde_json::to_vec(&body).expect("JSON serialises"),
        service,
        region: account.region.clone(),
    }
}

/// `SendMessage`: the body as the message, the headers as string attributes; on a FIFO queue
/// the lead's id as the group (one lead's messages in order) and the delivery id as the
/// deduplication id (a retry within five minutes is not delivered twice).
pub(crate) fn sqs(d: &Sqs, msg: &DestinationMessage<'_>) -> Request {
    let attributes: serde_json::Map<String, Value> = carried(msg)
        .map(|(k, v)| (k.clone(), json!({"DataType": "String", "StringValue": v})))
        .collect();
    let mut body = json!({
        "QueueUrl": d.queue_url,
        "MessageBody": String::from_utf8_lossy(msg.body),
        "MessageAttributes": attributes,
    });
    if d.fifo() {
        body["MessageGroupId"] = json!(lead_of(msg.body).unwrap_or_else(|| msg.org_id.clone()));
        body["MessageDeduplicationId"] = json!(msg.delivery_id);
    }
    json_request(&d.account, "sqs", "AmazonSQS.SendMessage", "1.0", body)
}

/// `PutEvents` with one entry: the envelope as `Detail`, the event type as `DetailType`.
pub(crate) fn eventbridge(d: &EventBridge, msg: &DestinationMessage<'_>) -> Request {
    let body = json!({"Entries": [{
        "Source": d.source,
        "DetailType": msg.event_type,
        "Detail": String::from_utf8_lossy(msg.body),
        "EventBusName": d.event_bus,
    }]});
    json_request(&d.account, "events", "AWSEvents.PutEvents", "1.1", body)
}

/// Characters left as they are in a path segment (RFC 3986 unreserved).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The object's key: `{prefix}{org_id}/{yyyy}/{mm}/{dd}/{event_id}.json`, the date the event's
/// (`occurred_at`, UTC).
pub(crate) fn s3_key(prefix: &str, msg: &DestinationMessage<'_>) -> String {
    let day = msg.occurred_at.date();
    format!(
        "{prefix}{}/{:04}/{:02}/{:02}/{}.json",
        msg.org_id,
        day.year(),
        u8::from(day.month()),
        day.day(),
        msg.event_id
    )
}

/// `PutObject` of the body at [`s3_key`], path-style (a custom `endpoint_url` need not have a
/// name per bucket), the headers as the object's metadata.
pub(crate) fn s3(d: &S3, msg: &DestinationMessage<'_>) -> Request {
    let key = s3_key(&d.prefix, msg);
    let path = std::iter::once(d.bucket.as_str())
        .chain(key.split('/'))
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/");
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(
        carried(msg).map(|(k, v)| (format!("x-amz-meta-{}", k.to_ascii_lowercase()), v.clone())),
    );
    Request {
        method: reqwest::Method::PUT,
        base: base(&d.account, "s3"),
        path: format!("/{path}"),
        headers,
        body: msg.body.to_vec(),
        service: "s3",
        region: d.account.region.clone(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// The credentials a request is signed with, and a session token when they are temporary.
#[derive(Clone)]
pub(crate) struct Signer {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
}

impl Signer {
    /// The endpoint's own (sealed) credentials, else the worker's AWS environment
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
    pub(crate) fn of(sealed: Option<&str>) -> Result<Signer, NoAnswer> {
        if let Some(s) = sealed {
            let c: AwsCredentials = serde_json::from_str(s).map_err(|_| {
                NoAnswer::new(FailureKind::SecretUnreadable, "AWS credentials unreadable")
            })?;
            return Ok(Signer {
                access_key_id: c.access_key_id,
                secret_access_key: c.secret_access_key,
                session_token: None,
            });
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(key)) => Ok(Signer {
                access_key_id: id,
                secret_access_key: key,
                session_token: env("AWS_SESSION_TOKEN"),
            }),
            _ => Err(NoAnswer::new(
                FailureKind::SecretUnreadable,
                "no AWS credentials: the endpoint has none and the worker's environment has none",
            )),
        }
    }
}

/// Adds `host`, `x-amz-date`, `x-amz-content-sha256` (S3), the session token and
/// `authorization` (Signature Version 4 over every header sent).
pub(crate) fn sign(r: &mut Request, who: &Signer, at: time::OffsetDateTime) {
    let at = at.to_offset(time::UtcOffset::UTC);
    let date = format!("{:04}{:02}{:02}", at.year(), u8::from(at.month()), at.day());
    let amz_date = format!(
        "{date}T{:02}{:02}{:02}Z",
        at.hour(),
        at.minute(),
        at.second()
    );
    let host = r
        .base
        .split_once("://")
        .map_or(r.base.as_str(), |(_, h)| h)
        .trim_end_matches(":443")
        .to_owned();
    let payload = hex(digest::digest(&digest::SHA256, &r.body).as_ref());
    r.headers.push(("host".to_owned(), host));
    r.headers.push(("x-amz-date".to_owned(), amz_date.clone()));
    if r.service == "s3" {
        r.headers
            .push(("x-amz-content-sha256".to_owned(), payload.clone()));
    }
    if let Some(t) = &who.session_token {
        r.headers
            .push(("x-amz-security-token".to_owned(), t.clone()));
    }
    let mut signed: Vec<(String, String)> = r
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    signed.sort();
    let names = signed
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = signed.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    // Every service but S3 signs the path encoded twice; ours is `/` for those.
    let canonical = format!(
        "{}\n{}\n\n{canonical_headers}\n{names}\n{payload}",
        r.method, r.path
    );
    let scope = format!("{date}/{}/{}/aws4_request", r.region, r.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mut key = hmac_sha256(
        format!("AWS4{}", who.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    for part in [r.region.as_str(), r.service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex(&hmac_sha256(&key, to_sign.as_bytes()));
    r.headers.push((
        "authorization".to_owned(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={names}, Signature={signature}",
            who.access_key_id
        ),
    ));
}

/// An AWS error's code and message from its answer: JSON (`__type`, `message`) or XML
/// (`<Code>`, `<Message>`).
fn error_of(body: &[u8]) -> Option<(String, String)> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let code = v
            .get("__type")
            .or_else(|| v.get("code"))
            .and_then(Value::as_str)?;
        let code = code.rsplit('#').next().unwrap_or(code).to_owned();
        let message = v
            .get("message")
            .or_else(|| v.get("Message"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        return Some((code, message));
    }
    let text = std::str::from_utf8(body).ok()?;
    let tag = |t: &str| {
        let start = text.find(&format!("<{t}>"))? + t.len() + 2;
        let end = text[start..].find(&format!("</{t}>"))? + start;
        Some(text[start..end].to_owned())
    };
    Some((tag("Code")?, tag("Message").unwrap_or_default()))
}

/// What the service answered, in the delivery log's words: the message id, the event id or
/// the stored object's tag on success; the AWS error code and message on a failure (a failed
/// `PutEvents` entry included).
pub(crate) fn read_answer(service: &str, status: u16, etag: Option<&str>, body: &[u8]) -> Outcome {
    if !(200..300).contains(&status) {
        let words = match error_of(body) {
            Some((code, message)) if message.is_empty() => code,
            Some((code, message)) => format!("{code}: {message}"),
            None => response_excerpt(body).unwrap_or_default(),
        };
        return Err(NoAnswer::new(
            FailureKind::Request,
            format!("AWS answered {status}: {words}"),
        ));
    }
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match service {
        "sqs" => Ok(format!(
            "MessageId {}",
            v.get("MessageId").and_then(Value::as_str).unwrap_or("")
        )),
        "events" => {
            let entry = v.pointer("/Entries/0").cloned().unwrap_or(Value::Null);
            match entry.get("ErrorCode").and_then(Value::as_str) {
                Some(code) => Err(NoAnswer::new(
                    FailureKind::Request,
                    format!(
                        "EventBridge refused the entry: {code}: {}",
                        entry
                            .get("ErrorMessage")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                    ),
                )),
                None if v.get("FailedEntryCount").and_then(Value::as_u64) > Some(0) => Err(
                    NoAnswer::new(FailureKind::Request, "EventBridge refused the entry"),
                ),
                None => Ok(format!(
                    "EventId {}",
                    entry.get("EventId").and_then(Value::as_str).unwrap_or("")
                )),
            }
        }
        _ => Ok(format!("stored, ETag {}", etag.unwrap_or(""))),
    }
}

/// The request for `d` (an AWS destination), unsigned.
pub(crate) fn request_for(d: &Destination, msg: &DestinationMessage<'_>) -> Option<Request> {
    Some(match d {
        Destination::Sqs(q) => sqs(q, msg),
        Destination::EventBridge(e) => eventbridge(e, msg),
        Destination::S3(b) => s3(b, msg),
        Destination::Amqp(_) => return None,
    })
}

impl Request {
    pub(crate) fn service(&self) -> &'static str {
        self.service
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn signer() -> Signer {
        Signer {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: KEY.into(),
            session_token: None,
        }
    }

    fn at() -> time::OffsetDateTime {
        time::macros::datetime!(2015-08-30 12:36:00 UTC)
    }

    fn signature(r: &Request) -> String {
        let a = &r
            .headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1;
        a.rsplit("Signature=").next().unwrap().to_owned()
    }

    /// The signatures botocore (the AWS SDK for Python) computes for the same requests.
    #[test]
    fn signatures_match_the_aws_sdks() {
        let account = AwsAccount {
            region: "eu-west-1".into(),
            endpoint_url: None,
            has_credentials: true,
        };
        let mut r = json_request(&account, "sqs", "AmazonSQS.SendMessage", "1.0", Value::Null);
        assert_eq!(r.base, "https://sqs.eu-west-1.amazonaws.com");
        r.body = br#"{"QueueUrl":"https://q/1","MessageBody":"{}"}"#.to_vec();
        sign(&mut r, &signer(), at());
        assert_eq!(
            signature(&r),
            "4572c69dada15302f966245c4361326481a6425e8e75a592bcc49a97e6811e2b"
        );
        let mut put = Request {
            method: reqwest::Method::PUT,
            base: "https://127.0.0.1:4566".into(),
            path: "/crm-events/qualifier/org/2015/08/30/e%201.json".into(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("x-amz-meta-qualifier-delivery".into(), "d-1".into()),
            ],
            body: b"{}".to_vec(),
            service: "s3",
            region: "us-east-1".into(),
        };
        sign(&mut put, &signer(), at());
        assert_eq!(
            signature(&put),
            "c8fa969dd6f5959f08e2f841e1aa44cc5f1149b57fcb11e7ed5329abb420c903"
        );
        assert!(
            put.headers
                .iter()
                .any(|(k, v)| k == "host" && v == "127.0.0.1:4566")
        );
    }

    fn msg<'a>(body: &'a [u8], headers: &'a [(String, String)]) -> DestinationMessage<'a> {
        DestinationMessage {
            body,
            headers,
            delivery_id: "d-1".into(),
            event_id: "e-1".into(),
            org_id: "o-1".into(),
            event_type: "lead.created",
            occurred_at: time::macros::datetime!(2026-03-04 23:59:59 UTC),
            attempted_at: at(),
        }
    }

    #[test]
    fn a_fifo_queue_groups_by_lead_and_deduplicates_by_delivery() {
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("X-Qualifier-Signature".to_owned(), "sha256=ab".to_owned()),
        ];
        let body = br#"{"data": {"lead": {"id": "lead-7"}}}"#;
        let q = |url: &str| Sqs {
            queue_url: url.into(),
            account: AwsAccount {
                region: "eu-west-1".into(),
                endpoint_url: None,
                has_credentials: false,
            },
        };
        let r = sqs(
            &q("https://sqs.eu-west-1.amazonaws.com/1/leads.fifo"),
            &msg(body, &headers),
        );
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["MessageGroupId"], "lead-7");
        assert_eq!(v["MessageDeduplicationId"], "d-1");
        assert_eq!(v["MessageBody"], String::from_utf8_lossy(body).as_ref());
        assert_eq!(
            v["MessageAttributes"]["X-Qualifier-Signature"]["StringValue"],
            "sha256=ab"
        );
        assert!(v["MessageAttributes"].get("Content-Type").is_none());
        assert_eq!(r.base, "https://sqs.eu-west-1.amazonaws.com");
        let standard = sqs(
            &q("https://sqs.eu-west-1.amazonaws.com/1/leads"),
            &msg(body, &headers),
        );
        let v: Value = serde_json::from_slice(&standard.body).unwrap();
        assert!(v.get("MessageGroupId").is_none());
    }

    #[test]
    fn an_object_is_kept_under_the_org_and_the_events_day() {
        let headers = vec![("X-Qualifier-Delivery".to_owned(), "d-1".to_owned())];
        let b = S3 {
            bucket: "crm-events".into(),
            prefix: "qualifier/".into(),
            account: AwsAccount {
                region: "eu-west-1".into(),
                endpoint_url: Some("https://127.0.0.1:4566".into()),
                has_credentials: true,
            },
        };
        let r = s3(&b, &msg(b"{}", &headers));
        assert_eq!(r.path, "/crm-events/qualifier/o-1/2026/03/04/e-1.json");
        assert_eq!(r.base, "https://127.0.0.1:4566");
        assert!(
            r.headers
                .contains(&("x-amz-meta-x-qualifier-delivery".into(), "d-1".into()))
        );
    }

    #[test]
    fn answers_read_as_success_or_the_services_error() {
        assert_eq!(
            read_answer("sqs", 200, None, br#"{"MessageId": "m-1"}"#).unwrap(),
            "MessageId m-1"
        );
        let e = read_answer(
            "sqs",
            400,
            None,
            br#"{"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "The specified queue does not exist."}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "AWS answered 400: QueueDoesNotExist: The specified queue does not exist."
        );
        let e = read_answer(
            "s3",
            404,
            None,
            b"<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>",
        )
        .unwrap_err();
        assert!(e.message.contains("NoSuchBucket"), "{}", e.message);
        let failed = read_answer(
            "events",
            200,
            None,
            br#"{"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "x"}]}"#,
        )
        .unwrap_err();
        assert!(failed.message.contains("InternalFailure"));
        assert_eq!(
            read_answer(
                "events",
                200,
                None,
                br#"{"FailedEntryCount": 0, "Entries": [{"EventId": "ev"}]}"#
            )
            .unwrap(),
            "EventId ev"
        );
    }
}
