//! How an event's envelope is kept in `outbox.payload`: as sent, or compressed.
//!
//! An envelope is a JSON object of about 700 bytes, most of it the same keys and stock values in
//! every event. PostgreSQL compresses a value only once the whole row passes about 2 KB, so it
//! stores envelopes as they are; compressed here with zstd and a dictionary of example envelopes
//! one takes about 220 bytes (docs/performance-log.md, "History at scale").
//!
//! The stored bytes say which form they are in, by their first byte:
//! - `{`: the envelope itself, exactly the bytes that are signed and sent;
//! - `0x01`: a zstd frame compressed with dictionary 1 (`payload-dict-v1.json`).
//!
//! Every reader of the column goes through [`unpack`], which accepts both, so rows written
//! before compression existed, or by a replica with it off, read the same. The dictionary is
//! part of the stored format: it never changes. A better one would be dictionary 2 with its own
//! first byte, and dictionary 1 kept for the rows that use it.
//!
//! Writers compress only when `QUALIFIER_COMPRESS_PAYLOADS` is on (off by default in this
//! release): a version before this one reads the column as the envelope itself, so compressed
//! rows must wait until no replica of such a version runs (docs/operations.md, "Compressed
//! envelopes").

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;

use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// Example envelopes of every type, as `qualifier_domain::event::example` wrote them when the
/// format was made: keys, stock values and URL prefixes that every envelope repeats.
const DICT_V1: &[u8] = include_bytes!("payload-dict-v1.json");
const TAG_ZSTD_V1: u8 = 0x01;
/// zstd's default level: about 3.5 µs to compress an envelope (docs/performance.md); levels 9
/// and 19 saved 5 bytes of 215.
const LEVEL: i32 = 3;
/// No envelope comes near it (one lead's snapshot, from request bodies of at most 64 KiB,
/// `lead-api`'s `BODY_LIMIT`); a corrupt frame announcing more is refused rather than
/// allocated.
const MAX_ENVELOPE: usize = 16 << 20;

/// Stored bytes that are neither an envelope nor a frame this version can read.
#[derive(Debug, thiserror::Error)]
#[error("stored payload is unreadable: {0}")]
pub struct PayloadError(String);

impl PayloadError {
    pub fn new(why: impl Into<String>) -> Self {
        PayloadError(why.into())
    }
}

fn encoder_dict() -> &'static EncoderDictionary<'static> {
    static D: OnceLock<EncoderDictionary<'static>> = OnceLock::new();
    D.get_or_init(|| EncoderDictionary::copy(DICT_V1, LEVEL))
}

fn decoder_dict() -> &'static DecoderDictionary<'static> {
    static D: OnceLock<DecoderDictionary<'static>> = OnceLock::new();
    D.get_or_init(|| DecoderDictionary::copy(DICT_V1))
}

thread_local! {
    // A zstd context is a few hundred kilobytes of tables: one per thread, reused, rather than
    // one per event.
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// The bytes to store for `envelope`: compressed when `compress` is set and that is smaller,
/// otherwise the envelope itself.
pub fn pack(envelope: Vec<u8>, compress: bool) -> Vec<u8> {
    if !compress {
        return envelope;
    }
    let frame = COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Compressor::with_prepared_dictionary(encoder_dict()).ok();
        }
        c.as_mut()?.compress(&envelope).ok()
    });
    match frame {
        Some(frame) if frame.len() + 1 < envelope.len() => {
            let mut out = Vec::with_capacity(frame.len() + 1);
            out.push(TAG_ZSTD_V1);
            out.extend_from_slice(&frame);
            out
        }
        // Compression is a saving, never a condition: the envelope as it is is always readable.
        _ => envelope,
    }
}

/// The envelope that `stored` holds: the same bytes that were signed and sent.
pub fn unpack(stored: &[u8]) -> Result<Cow<'_, [u8]>, PayloadError> {
    match stored.first() {
        Some(&TAG_ZSTD_V1) => {
            let frame = &stored[1..];
            let size = zstd::zstd_safe::get_frame_content_size(frame)
                .map_err(|_| PayloadError("not a zstd frame".into()))?
                .ok_or_else(|| PayloadError("frame without its size".into()))?;
            let size = usize::try_from(size)
                .ok()
                .filter(|s| *s <= MAX_ENVELOPE)
                .ok_or_else(|| PayloadError(format!("frame announces {size} bytes")))?;
            DECOMPRESSOR
                .with(|d| {
                    let mut d = d.borrow_mut();
                    if d.is_none() {
                        *d = Some(Decompressor::with_prepared_dictionary(decoder_dict())?);
                    }
                    d.as_mut().expect("set above").decompress(frame, size)
                })
                .map(Cow::Owned)
                .map_err(|e| PayloadError(e.to_string()))
        }
        Some(b'{') => Ok(Cow::Borrowed(stored)),
        Some(b) => Err(PayloadError(format!("unknown form {b:#04x}"))),
        None => Err(PayloadError("empty".into())),
    }
}

/// [`unpack`] for a value the caller owns: no copy when it is stored as it is.
pub fn unpack_owned(stored: Vec<u8>) -> Result<Vec<u8>, PayloadError> {
    match unpack(&stored)? {
        Cow::Borrowed(_) => Ok(stored),
        Cow::Owned(v) => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope() -> Vec<u8> {
        let org = uuid::Uuid::new_v4();
        let lead = uuid::Uuid::new_v4();
        serde_json::to_vec(&serde_json::json!({
            "id": uuid::Uuid::new_v4(), "type": "lead.updated", "version": "1",
            "occurred_at": "2026-11-20T10:11:12.345Z", "org_id": org,
            "data": {"lead": {
                "id": lead, "revision": 3, "name": "Maria López", "email": "maria@example.com",
                "phone": "+447700123456", "channel": "sms", "qualification_stage": "qualifying",
                "route_target": null, "profile": {"budget": "10k", "step": 4},
                "external_ref": null, "ai_paused": false,
                "conversation_url": format!("https://app.qualifier.local/conversations/{lead}"),
                "created_at": "2026-11-20T10:11:12.345Z", "updated_at": "2026-11-20T10:11:12.345Z"},
                "previous": {"profile": {"step": 5}}}
        }))
        .unwrap()
    }

    #[test]
    fn a_compressed_envelope_reads_back_byte_for_byte_at_a_third_of_its_size() {
        let env = envelope();
        let stored = pack(env.clone(), true);
        assert_eq!(stored[0], TAG_ZSTD_V1);
        assert!(
            stored.len() * 2 < env.len(),
            "{} of {} bytes",
            stored.len(),
            env.len()
        );
        assert_eq!(unpack(&stored).unwrap(), env.as_slice());
        assert_eq!(unpack_owned(stored).unwrap(), env);
    }

    #[test]
    fn with_compression_off_the_envelope_is_stored_and_read_as_it_is() {
        let env = envelope();
        let stored = pack(env.clone(), false);
        assert_eq!(stored, env);
        assert!(matches!(unpack(&stored).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn an_envelope_that_would_not_shrink_is_stored_as_it_is() {
        let tiny = br#"{"a":1}"#.to_vec();
        assert_eq!(pack(tiny.clone(), true), tiny);
    }

    #[test]
    fn damaged_or_unknown_bytes_are_an_error_not_a_panic() {
        let stored = pack(envelope(), true);
        let mut cut = stored.clone();
        cut.truncate(stored.len() / 2);
        assert!(unpack(&cut).is_err());
        let mut flipped = stored.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0xff;
        // A flipped byte either fails or decodes to other bytes; it never panics.
        let _ = unpack(&flipped);
        assert!(unpack(&[TAG_ZSTD_V1]).is_err());
        assert!(unpack(&[0x02, 1, 2, 3]).is_err());
        assert!(unpack(b"").is_err());
        assert!(unpack(b"[1]").is_err());
        // A frame header announcing an absurd size is refused before anything is allocated.
        let mut huge = vec![TAG_ZSTD_V1, 0x28, 0xb5, 0x2f, 0xfd, 0xa0];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(unpack(&huge).is_err());
    }

    #[test]
    fn many_threads_pack_and_unpack_at_once() {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..200 {
                        let env = envelope();
                        assert_eq!(unpack_owned(pack(env.clone(), true)).unwrap(), env);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
