//! Pages with a byte budget (docs/reliability.md, "Strangers, quotas and pages"): the lead list, the events feed and the
//! deliveries list end a page early, at a whole item, once it would hold more than
//! `QUALIFIER_MAX_PAGE_BYTES` of JSON, and their `next_cursor` continues after the last item
//! sent. A lead can carry close to 64 KiB, so 500 of them would otherwise be a 30 MB response
//! held several times over while it is built. An item larger than the budget is sent alone, so
//! a walk always moves on. Items are serialized once, here, and spliced into the body.

use actix_web::HttpResponse;

/// The default `QUALIFIER_MAX_PAGE_BYTES`: 1 MiB.
pub const DEFAULT_MAX_PAGE_BYTES: usize = 1 << 20;

/// What a page holds besides its items: the braces, the key, the cursor (sealed cursors are
/// under 100 characters).
const FRAME_BYTES: usize = 160;

/// The bytes of items (with their separators) a page of `budget` holds: what a query that
/// applies the budget while reading is given.
pub fn item_budget(budget: usize) -> usize {
    budget.saturating_sub(FRAME_BYTES)
}

/// The tail every list shares (the lead list, the events feed, the deliveries list): as many of
/// `items` (each row's JSON) as fit in `budget`, as a 200 response with the cursor to go on
/// from. A page cut short continues after its last item (`position(i)`: where row `i`
/// stands); a whole page continues from `next`, the store's own (`None` on the last page).
pub fn within_budget<P>(
    key: &str,
    items: &[Vec<u8>],
    position: impl Fn(usize) -> P,
    next: Option<P>,
    budget: usize,
    cursor: impl FnOnce(P) -> String,
) -> HttpResponse {
    let n = fitting(items, budget);
    let next = if n < items.len() {
        Some(position(n - 1))
    } else {
        next
    };
    let cursor = next.map(cursor);
    json_page(key, &items[..n], cursor.as_deref())
}

/// How many of `items` (each one's JSON) fit in `budget` bytes: at least one, when there is one.
fn fitting(items: &[Vec<u8>], budget: usize) -> usize {
    let mut used = FRAME_BYTES;
    for (i, item) in items.iter().enumerate() {
        used += item.len() + 1;
        if used > budget && i > 0 {
            return i;
        }
    }
    items.len()
}

/// `{"<key>":[items...],"next_cursor":<cursor or null>}` as a 200 response.
fn json_page(key: &str, items: &[Vec<u8>], next_cursor: Option<&str>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body(key, items, next_cursor))
}

fn body(key: &str, items: &[Vec<u8>], next_cursor: Option<&str>) -> Vec<u8> {
    let mut body =
        Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum::<usize>() + FRAME_BYTES);
    body.extend_from_slice(b"{\"");
    body.extend_from_slice(key.as_bytes());
    body.extend_from_slice(b"\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"],\"next_cursor\":");
    match next_cursor {
        // A cursor is base64url: nothing in it needs escaping.
        Some(c) => {
            body.push(b'"');
            body.extend_from_slice(c.as_bytes());
            body.push(b'"');
        }
        None => body.extend_from_slice(b"null"),
    }
    body.push(b'}');
    body
}

/// Each item's JSON.
pub fn serialize<T: serde::Serialize>(items: &[T]) -> Result<Vec<Vec<u8>>, crate::error::ApiError> {
    items
        .iter()
        .map(|i| serde_json::to_vec(i))
        .collect::<Result<_, _>>()
        .map_err(|e| crate::error::ApiError::Internal(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_ends_at_a_whole_item_within_the_budget_and_never_empty() {
        let items: Vec<Vec<u8>> = (0..10).map(|_| vec![b'1'; 100]).collect();
        assert_eq!(fitting(&items, 10_000), 10);
        // 160 of frame, then 101 per item: three fit in 500, a fourth would not.
        assert_eq!(fitting(&items, 500), 3);
        let huge = vec![vec![b'1'; 5_000], vec![b'1'; 10]];
        assert_eq!(
            fitting(&huge, 1_000),
            1,
            "an item larger than the budget goes alone"
        );
        assert_eq!(fitting(&[], 1_000), 0);
    }

    #[test]
    fn the_body_is_the_items_spliced_in() {
        let b = body(
            "leads",
            &[b"{\"a\":1}".to_vec(), b"2".to_vec()],
            Some("abc"),
        );
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"leads": [{"a": 1}, 2], "next_cursor": "abc"})
        );
        let v: serde_json::Value = serde_json::from_slice(&body("events", &[], None)).unwrap();
        assert_eq!(v, serde_json::json!({"events": [], "next_cursor": null}));
    }
}
