//! A bundle: several new deliveries of one org in one broker message.
//!
//! A quorum queue's cost is per message (its Raft log entry, its replication, its ack), not per
//! byte: `scripts/bench-broker-bundles.py` measured about 100 µs of RabbitMQ's CPU a delivery
//! sent one a message against 15-18 µs ten a message (docs/performance.md). So the relay puts a
//! batch's first attempts of one org in one message on [`crate::Topology::bundle_queue`]; the
//! worker takes it apart and handles each part as it handles a message of its own, and acks
//! the bundle once every part is settled. Retries, parked messages and dead letters stay one
//! message per delivery.
//!
//! The body is binary, so that each part's envelope is carried byte for byte (it is what the
//! receiver's signature covers):
//!
//! ```text
//! "qb1\n"  then per part:
//!   u16 header count, then per header: u8 name length, name, u32 value length, value
//!   u32 body length, body
//! ```
//!
//! Integers are big-endian. The headers are a part's [`DeliveryMeta::headers`], read back by
//! the same code as a single message's ([`DeliveryMeta::from_lookup`]).

use crate::{DeliveryMeta, MetaError};

const MAGIC: &[u8; 4] = b"qb1\n";

/// The message header naming a bundle's part count (for operators reading a queue; the body
/// says the same).
pub const HEADER: &str = "x-qualifier-bundle";

/// A bundle's content type (its body is binary).
pub const CONTENT_TYPE: &str = "application/octet-stream";

/// Why a bundle cannot be read. It never becomes readable, so the worker drops it loudly; the
/// relay wrote it, so this is a defect or a foreign message, not a receiver's input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BundleError {
    #[error("not a bundle (its first bytes are not the bundle's mark)")]
    NotABundle,
    #[error("the bundle ends inside a part")]
    Truncated,
    #[error("a header name is not UTF-8")]
    BadName,
    #[error("part {0}: {1}")]
    Part(usize, MetaError),
}

/// One part as read back: its meta and its envelope's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub meta: DeliveryMeta,
    pub body: Vec<u8>,
}

/// The bundle's body for `parts`, in their order.
pub fn encode<'a>(parts: impl IntoIterator<Item = (&'a DeliveryMeta, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(MAGIC);
    for (meta, body) in parts {
        let headers = meta.headers();
        out.extend_from_slice(&(headers.len() as u16).to_be_bytes());
        for (name, value) in &headers {
            out.push(name.len() as u8);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value.as_bytes());
        }
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
    }
    out
}

/// A reader over the body that never reads past its end (a length beyond what is left is
/// [`BundleError::Truncated`], never an allocation of that size).
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BundleError> {
        if self.0.len() < n {
            return Err(BundleError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<usize, BundleError> {
        Ok(self.take(1)?[0] as usize)
    }
    fn u16(&mut self) -> Result<usize, BundleError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
    }
    fn u32(&mut self) -> Result<usize, BundleError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}

/// Reads a bundle's body back into its parts, in order.
pub fn decode(bytes: &[u8]) -> Result<Vec<Part>, BundleError> {
    let mut r = Reader(bytes);
    if r.take(MAGIC.len()).map_err(|_| BundleError::NotABundle)? != MAGIC {
        return Err(BundleError::NotABundle);
    }
    let mut parts = Vec::new();
    while !r.0.is_empty() {
        let count = r.u16()?;
        let mut headers: Vec<(&str, String)> = Vec::with_capacity(count.min(16));
        for _ in 0..count {
            let n = r.u8()?;
            let name = std::str::from_utf8(r.take(n)?).map_err(|_| BundleError::BadName)?;
            let n = r.u32()?;
            let value = String::from_utf8_lossy(r.take(n)?).into_owned();
            headers.push((name, value));
        }
        let meta = DeliveryMeta::from_lookup(|k| {
            headers
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.clone())
        })
        .map_err(|e| BundleError::Part(parts.len(), e))?;
        let n = r.u32()?;
        let body = r.take(n)?.to_vec();
        parts.push(Part { meta, body });
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualifier_domain::EventType;

    fn meta(i: u32) -> DeliveryMeta {
        DeliveryMeta {
            delivery_id: uuid::Uuid::new_v4(),
            event_id: uuid::Uuid::new_v4(),
            org_id: uuid::Uuid::new_v4(),
            event_type: EventType::LeadCreated,
            attempt: 1,
            occurred_at_ms: Some(1_763_720_000_000 + i as i64),
            traceparent: i
                .is_multiple_of(2)
                .then(|| "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            not_before_ms: None,
            test: i == 3,
            seq: Some(89_262_305_312_769 + i as i64),
            endpoint_id: Some(uuid::Uuid::new_v4()),
        }
    }

    #[test]
    fn parts_come_back_in_order_with_their_bytes_unchanged() {
        let metas: Vec<DeliveryMeta> = (0..5).map(meta).collect();
        // Bytes a receiver's signature covers: non-ASCII, control characters, an empty body.
        let bodies: Vec<Vec<u8>> = vec![
            br#"{"name":"J\u00f6rg"}"#.to_vec(),
            "{\"a\":\"é\tb\r\n\"}".as_bytes().to_vec(),
            vec![],
            vec![0, 255, 10, 13],
            vec![b'x'; 70_000],
        ];
        let bytes = encode(metas.iter().zip(bodies.iter().map(Vec::as_slice)));
        let parts = decode(&bytes).unwrap();
        assert_eq!(parts.len(), 5);
        for ((p, m), b) in parts.iter().zip(&metas).zip(&bodies) {
            assert_eq!(&p.meta, m);
            assert_eq!(&p.body, b);
        }
        assert_eq!(
            decode(MAGIC).unwrap(),
            vec![],
            "an empty bundle has no parts"
        );
    }

    #[test]
    fn a_damaged_or_foreign_body_is_an_error_never_a_panic() {
        let metas: Vec<DeliveryMeta> = (0..3).map(meta).collect();
        let bytes = encode(metas.iter().map(|m| (m, &b"{\"k\":1}"[..])));
        // Every truncation ends inside a part (or before the mark).
        for cut in 0..bytes.len() {
            let tail_is_a_part_boundary = decode(&bytes[..cut]).is_ok();
            if tail_is_a_part_boundary {
                let n = decode(&bytes[..cut]).unwrap().len();
                assert!(n < 3, "a cut at {cut} read {n} whole parts");
            }
        }
        assert_eq!(decode(b"{\"id\":1}"), Err(BundleError::NotABundle));
        assert_eq!(decode(b"qb"), Err(BundleError::NotABundle));
        // A body length far beyond the bundle: refused without allocating it.
        let mut huge = encode([(&metas[0], &b"abc"[..])]);
        let at = huge.len() - 3 - 4;
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode(&huge), Err(BundleError::Truncated));
        // A part without its required headers names the part.
        let mut bare = MAGIC.to_vec();
        bare.extend_from_slice(&0u16.to_be_bytes());
        bare.extend_from_slice(&0u32.to_be_bytes());
        assert!(matches!(
            decode(&bare),
            Err(BundleError::Part(0, MetaError::Missing(_)))
        ));
        // Random bytes after the mark: an error or parts, never a panic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2_000 {
            let mut junk = MAGIC.to_vec();
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                junk.push(x as u8);
            }
            let _ = decode(&junk);
        }
    }
}
