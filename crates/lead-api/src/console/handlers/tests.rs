use super::*;

#[test]
fn only_known_notices_are_shown() {
    assert_eq!(notice_text("done=saved"), Some("Saved."));
    assert_eq!(notice_text("done=<script>"), None);
    assert_eq!(notice_text(""), None);
}

#[test]
fn pages_escape_what_they_show() {
    let html = pages::plain("T", "<script>alert(1)</script>").into_string();
    assert!(!html.contains("<script>alert"));
    assert!(html.contains("&lt;script&gt;"));
}
