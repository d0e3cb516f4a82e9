//! Any bytes as a request body, through every body parser of both APIs: an error is fine, a
//! panic is a bug (it would be a 500, or a dead worker thread).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = lead_api::public::parse_public_patch(&v);
    if let Some(obj) = v.as_object() {
        let _ = lead_api::public::parse_new_lead(obj);
        let _ = lead_api::internal::parse_internal_patch(obj);
        let _ = lead_api::internal::parse_event_types(obj);
    }
});
