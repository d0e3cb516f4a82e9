//! Any bytes as a request body, through every body parser of both APIs: an error is fine, a
//! panic is a bug (it would be a 500, or a dead worker thread), and whatever a parser accepts
//! holds no control character but tab, CR and LF (docs/reliability.md, "Hostile input": PostgreSQL refuses NUL,
//! and the rest would reach stored data, logs and CSV exports).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn clean(s: &str) -> bool {
    !s.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n'))
}

fn clean_ref(r: &qualifier_domain::ExternalRef) -> bool {
    clean(&r.system) && clean(&r.id) && r.url.as_deref().is_none_or(clean)
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(p) = lead_api::inputs::parse_public_patch(&v) {
        assert!(p.external_ref.as_ref().is_none_or(clean_ref));
    }
    if let Some(obj) = v.as_object() {
        if let Ok(n) = lead_api::inputs::parse_new_lead(obj) {
            assert!(clean(n.name.as_str()) && clean(n.phone.as_str()));
            assert!(n.email.as_ref().is_none_or(|e| clean(e.as_str())));
            assert!(clean(n.channel.as_str()));
            assert!(n.route_target.as_ref().is_none_or(|r| clean(r.as_str())));
            assert!(n.external_ref.as_ref().is_none_or(clean_ref));
            for (k, val) in &n.profile {
                assert!(clean(k) && val.as_str().is_none_or(clean));
            }
        }
        if let Ok(p) = lead_api::inputs::parse_internal_patch(obj) {
            assert!(p.name.as_ref().is_none_or(|n| clean(n.as_str())));
            assert!(p.email.as_ref().is_none_or(|e| clean(e.as_str())));
            assert!(p.route_target.as_ref().is_none_or(|r| clean(r.as_str())));
        }
        // The typed commands of the internal API and the console (lead-api's inputs module).
        let _ = lead_api::inputs::subscription_of(obj);
        let _ = lead_api::inputs::GraceWindow::from_json(obj);
        let _ = lead_api::inputs::ReplayFilter::from_json(obj);
        if let Ok(t) = lead_api::inputs::NewToken::from_json(obj) {
            assert!(t.name.as_ref().is_none_or(|n| clean(n.as_str())));
        }
    }
    // The same bytes as a query string of the delivery list (API and console).
    if let Ok(q) = std::str::from_utf8(data) {
        let _ = lead_api::inputs::DeliveryQuery::parse(q);
    }
});
