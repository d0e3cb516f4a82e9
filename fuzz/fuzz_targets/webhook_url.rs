//! Any string as a webhook endpoint: parsing never panics, and whatever is accepted is https and
//! never names a non-public IP literal in any spelling.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qualifier_domain::netguard::{WebhookUrl, is_public_ip};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(url) = WebhookUrl::parse(s) {
        assert_eq!(url.url().scheme(), "https");
        if let Some(ip) = url.ip_literal() {
            // The egress policy (no allow-list) must agree with the domain rule.
            assert_eq!(
                qualifier_egress::EgressPolicy::new(vec![]).permits(ip),
                is_public_ip(ip)
            );
        }
    }
});
