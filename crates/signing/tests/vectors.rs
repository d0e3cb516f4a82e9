//! The receiver kit against the published test vectors (`docs/signature-vectors.json`), and the
//! Rust snippet of `docs/receivers.md` compiled and run as it is printed there.

use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/signature-vectors.json"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["vectors"].as_array().unwrap().clone()
}

// The snippet, included from the doc between its markers at build time would need a build
// script; instead the test reads the doc and fails if the code printed there changes.
const SNIPPET: &str = r#"/// `raw_body` is the request body exactly as received; `header` is `X-Qualifier-Signature`.
pub fn is_authentic(secret: &str, raw_body: &[u8], header: Option<&str>) -> bool {
    header.is_some_and(|h| qualifier_signing::verify(secret, raw_body, h))
}
"#;

/// `is_authentic` exactly as `docs/receivers.md` prints it.
pub fn is_authentic(secret: &str, raw_body: &[u8], header: Option<&str>) -> bool {
    header.is_some_and(|h| qualifier_signing::verify(secret, raw_body, h))
}

#[test]
fn the_rust_snippet_in_the_receiver_guide_is_this_code() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/receivers.md"
    ))
    .unwrap();
    assert!(
        doc.contains(&format!(
            "<!-- snippet: verify.rs -->\n```rust\n{SNIPPET}```"
        )),
        "docs/receivers.md's Rust snippet differs from the one tested here"
    );
}

#[test]
fn every_vector_verifies_as_published() {
    let vs = vectors();
    assert!(vs.len() >= 10);
    for v in &vs {
        let (secret, body, header) = (
            v["secret"].as_str().unwrap(),
            v["body"].as_str().unwrap().as_bytes(),
            v["header"].as_str().unwrap(),
        );
        let want = v["valid"].as_bool().unwrap();
        assert_eq!(
            is_authentic(secret, body, Some(header)),
            want,
            "vector {:?}",
            v["name"]
        );
        if want {
            // The signer produces exactly the published header.
            assert_eq!(
                qualifier_signing::sign(secret, body),
                header,
                "{:?}",
                v["name"]
            );
        }
    }
    assert!(!is_authentic("s", b"", None), "no header, no entry");
}
