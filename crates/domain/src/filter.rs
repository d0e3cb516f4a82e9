//! An endpoint's filter: a small, bounded matcher over an event's envelope (docs/api.md,
//! "Filters"). A filter is a JSON object whose keys are dotted paths into the envelope
//! (`data.lead.channel`) or the operators `$and`, `$or` and `$not`; a path's value is a JSON
//! value (equality) or an object of operators (`$eq`, `$neq`, `$in`, `$nin`, `$gt`, `$gte`,
//! `$lt`, `$lte`, `$exists`, `$startsWith`), all of which must hold. At most [`MAX_BYTES`]
//! and [`MAX_DEPTH`] levels deep. [`Filter::parse`] compiles it once (when an endpoint is
//! saved, and when a writer loads its org's filters); [`Filter::matches`] is then a walk of
//! the tree with no allocation.

use serde_json::Value;

use crate::validate::FieldError;

/// A filter's largest form, as compact JSON.
pub const MAX_BYTES: usize = 4096;
/// A filter's deepest nesting of JSON objects and arrays.
pub const MAX_DEPTH: usize = 8;

/// A compiled filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    /// Every operator holds for the value at `path`.
    Path {
        path: Vec<String>,
        ops: Vec<Op>,
    },
}

/// One operator on a path's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Eq(Value),
    Neq(Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Gt(Value),
    Gte(Value),
    Lt(Value),
    Lte(Value),
    Exists(bool),
    StartsWith(String),
}

fn refuse(at: &str, why: &str) -> FieldError {
    FieldError::new(format!("Invalid filter at {at}: {why}"))
}

/// Nesting depth of a JSON value (a scalar is 0).
fn depth(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A path segment: letters, digits, `_` and `-` (an array index is digits).
fn segment_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn comparable(v: &Value) -> bool {
    v.is_number() || v.is_string()
}

impl Filter {
    /// The filter of an endpoint's `filter` field, compiled; else the 422 naming where in it
    /// the problem is (`filter` is the whole, `filter.$or[1].data.lead.channel.$gt` a part).
    pub fn parse(v: &Value) -> Result<Filter, FieldError> {
        let size = serde_json::to_string(v)
            .map(|s| s.len())
            .unwrap_or(usize::MAX);
        if size > MAX_BYTES {
            return Err(refuse("filter", &format!("at most {MAX_BYTES} bytes")));
        }
        if depth(v) > MAX_DEPTH {
            return Err(refuse(
                "filter",
                &format!("at most {MAX_DEPTH} levels deep"),
            ));
        }
        Self::object(v, "filter")
    }

    fn object(v: &Value, at: &str) -> Result<Filter, FieldError> {
        let Some(m) = v.as_object() else {
            return Err(refuse(at, "a filter is a JSON object"));
        };
        if m.is_empty() {
            return Err(refuse(at, "a filter needs at least one condition"));
        }
        let mut all = Vec::with_capacity(m.len());
        for (k, v) in m {
            let here = format!("{at}.{k}");
            all.push(match k.as_str() {
                "$and" | "$or" => {
                    let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
                        return Err(refuse(&here, "a non-empty list of filters"));
                    };
                    let parts = items
                        .iter()
                        .enumerate()
                        .map(|(i, f)| Self::object(f, &format!("{here}[{i}]")))
                        .collect::<Result<Vec<_>, _>>()?;
                    if k == "$and" {
                        Filter::And(parts)
                    } else {
                        Filter::Or(parts)
                    }
                }
                "$not" => Filter::Not(Box::new(Self::object(v, &here)?)),
                op if op.starts_with('$') => {
                    return Err(refuse(
                        &here,
                        "unknown operator (paths do not start with $)",
                    ));
                }
                path => {
                    let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
                    if segments.len() > 16 || !segments.iter().all(|s| segment_ok(s)) {
                        return Err(refuse(
                            &here,
                            "a path is dot-separated names of letters, digits, _ and -",
                        ));
                    }
                    Filter::Path {
                        path: segments,
                        ops: Self::ops(v, &here)?,
                    }
                }
            });
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Filter::And(all)
        })
    }

    /// A path's value: operators when every key starts with `$`, else equality with it.
    fn ops(v: &Value, at: &str) -> Result<Vec<Op>, FieldError> {
        let Some(m) = v
            .as_object()
            .filter(|m| m.keys().any(|k| k.starts_with('$')))
        else {
            return Ok(vec![Op::Eq(v.clone())]);
        };
        let mut ops = Vec::with_capacity(m.len());
        for (k, arg) in m {
            let here = format!("{at}.{k}");
            let list = || {
                arg.as_array()
                    .cloned()
                    .ok_or_else(|| refuse(&here, "a list of values"))
            };
            let scalar = || {
                if comparable(arg) {
                    Ok(arg.clone())
                } else {
                    Err(refuse(&here, "a number or a string"))
                }
            };
            ops.push(match k.as_str() {
                "$eq" => Op::Eq(arg.clone()),
                "$neq" => Op::Neq(arg.clone()),
                "$in" => Op::In(list()?),
                "$nin" => Op::Nin(list()?),
                "$gt" => Op::Gt(scalar()?),
                "$gte" => Op::Gte(scalar()?),
                "$lt" => Op::Lt(scalar()?),
                "$lte" => Op::Lte(scalar()?),
                "$exists" => Op::Exists(
                    arg.as_bool()
                        .ok_or_else(|| refuse(&here, "true or false"))?,
                ),
                "$startsWith" => Op::StartsWith(
                    arg.as_str()
                        .ok_or_else(|| refuse(&here, "a string"))?
                        .to_owned(),
                ),
                _ if !k.starts_with('$') => {
                    return Err(refuse(&here, "operators and values cannot be mixed"));
                }
                _ => return Err(refuse(&here, "unknown operator")),
            });
        }
        Ok(ops)
    }

    /// Whether the envelope `event` matches.
    pub fn matches(&self, event: &Value) -> bool {
        match self {
            Filter::And(all) => all.iter().all(|f| f.matches(event)),
            Filter::Or(any) => any.iter().any(|f| f.matches(event)),
            Filter::Not(f) => !f.matches(event),
            Filter::Path { path, ops } => {
                let found = lookup(event, path);
                ops.iter().all(|op| op.holds(found))
            }
        }
    }
}

/// The value at `path` in `v`: object keys, and array indexes for digit segments.
fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |at, seg| match at {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// Numbers with numbers, strings with strings (timestamps in one format order as text);
/// anything else is not ordered.
fn order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

impl Op {
    fn holds(&self, found: Option<&Value>) -> bool {
        use std::cmp::Ordering::*;
        let cmp = |b: &Value| found.and_then(|a| order(a, b));
        match self {
            Op::Eq(v) => found.is_some_and(|a| same(a, v)),
            Op::Neq(v) => !found.is_some_and(|a| same(a, v)),
            Op::In(vs) => found.is_some_and(|a| vs.iter().any(|v| same(a, v))),
            Op::Nin(vs) => !found.is_some_and(|a| vs.iter().any(|v| same(a, v))),
            Op::Gt(v) => cmp(v) == Some(Greater),
            Op::Gte(v) => matches!(cmp(v), Some(Greater | Equal)),
            Op::Lt(v) => cmp(v) == Some(Less),
            Op::Lte(v) => matches!(cmp(v), Some(Less | Equal)),
            Op::Exists(want) => found.is_some() == *want,
            Op::StartsWith(p) => found
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(p.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn event() -> Value {
        json!({
            "type": "lead.stage_changed",
            "data": {
                "lead": {"channel": "whatsapp", "qualification_stage": "qualified",
                         "revision": 7, "email": null, "profile": {"budget": 1500.0}},
                "changes": {"qualification_stage": {"previous": "new", "current": "qualified"}}
            }
        })
    }

    fn m(f: Value) -> bool {
        Filter::parse(&f).unwrap().matches(&event())
    }

    fn refused(f: Value) -> String {
        Filter::parse(&f).unwrap_err().to_string()
    }

    #[test]
    fn each_operator_on_a_real_envelope() {
        assert!(m(json!({"data.lead.channel": "whatsapp"})));
        assert!(!m(json!({"data.lead.channel": "sms"})));
        assert!(m(
            json!({"data.changes.qualification_stage.previous": {"$eq": "new"}})
        ));
        assert!(m(json!({"data.lead.channel": {"$neq": "sms"}})));
        assert!(m(
            json!({"data.lead.channel": {"$in": ["sms", "whatsapp"]}})
        ));
        assert!(m(json!({"data.lead.channel": {"$nin": ["sms"]}})));
        assert!(m(json!({"data.lead.revision": {"$gt": 6, "$lte": 7}})));
        assert!(!m(json!({"data.lead.revision": {"$gte": 8}})));
        assert!(m(json!({"data.lead.profile.budget": {"$lt": 2000}})));
        // Numbers compare by value, 1500 equals 1500.0.
        assert!(m(json!({"data.lead.profile.budget": 1500})));
        assert!(m(json!({"data.lead.email": {"$exists": true}})));
        assert!(m(json!({"data.lead.phone": {"$exists": false}})));
        assert!(m(json!({"type": {"$startsWith": "lead."}})));
        assert!(m(
            json!({"$or": [{"data.lead.channel": "sms"}, {"type": "lead.stage_changed"}]})
        ));
        assert!(!m(
            json!({"$and": [{"data.lead.channel": "whatsapp"}, {"type": "lead.created"}]})
        ));
        assert!(m(json!({"$not": {"data.lead.channel": "sms"}})));
        // A string is not ordered against a number; a missing path is not greater than anything.
        assert!(!m(json!({"data.lead.channel": {"$gt": 1}})));
        assert!(!m(json!({"data.nothing": {"$gt": 1}})));
        // Two keys: both must hold.
        assert!(!m(
            json!({"data.lead.channel": "whatsapp", "type": "lead.created"})
        ));
    }

    #[test]
    fn refusals_name_the_path() {
        let many = "x".repeat(5000);
        assert!(refused(json!({"data.a": many})).contains("at filter: at most 4096 bytes"));
        let deep = json!({"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"a": 1}}}}}}}}});
        assert!(refused(deep).contains("at most 8 levels"));
        assert!(refused(json!([])).contains("at filter: a filter is a JSON object"));
        assert!(refused(json!({})).contains("at least one"));
        assert_eq!(
            refused(json!({"$or": [{"a": 1}, {"data.lead.channel": {"$gt": [1]}}]})),
            "Invalid filter at filter.$or[1].data.lead.channel.$gt: a number or a string"
        );
        assert!(
            refused(json!({"a": {"$regex": "x"}})).contains("filter.a.$regex: unknown operator")
        );
        assert!(refused(json!({"$where": "1"})).contains("filter.$where"));
        assert!(refused(json!({"a..b": 1})).contains("filter.a..b"));
        assert!(refused(json!({"a": {"$in": "x"}})).contains("filter.a.$in: a list"));
        assert!(refused(json!({"a": {"$exists": 1}})).contains("true or false"));
        assert!(refused(json!({"a": {"$eq": 1, "b": 2}})).contains("cannot be mixed"));
        assert!(refused(json!({"$and": []})).contains("filter.$and: a non-empty list"));
    }

    /// Small JSON values of every kind, objects keyed from a few names so paths meet them.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..5).prop_map(|n| json!(n)),
            (-5.0f64..5.0).prop_map(|n| json!(n)),
            "[ab]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[abc0]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn path() -> impl Strategy<Value = String> {
        prop::collection::vec("[abc0]", 1..4).prop_map(|s| s.join("."))
    }

    fn condition() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            (path(), value()).prop_map(|(p, v)| json!({ p: v })),
            (
                path(),
                prop::sample::select(vec!["$eq", "$neq", "$gt", "$gte", "$lt", "$lte"]),
                value()
            )
                .prop_map(|(p, op, v)| json!({ p: { op: v } })),
            (
                path(),
                prop::sample::select(vec!["$in", "$nin"]),
                prop::collection::vec(value(), 0..3)
            )
                .prop_map(|(p, op, v)| json!({ p: { op: v } })),
            (path(), any::<bool>()).prop_map(|(p, b)| json!({ p: {"$exists": b} })),
            (path(), "[ab]{0,2}").prop_map(|(p, s)| json!({ p: {"$startsWith": s} })),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"$and": v})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"$or": v})),
                inner.prop_map(|f| json!({"$not": f})),
            ]
        })
    }

    proptest! {
        /// Whatever a client sends and whatever the event holds: an answer, never a panic.
        #[test]
        fn any_filter_and_any_event_never_panic(f in value(), e in value()) {
            if let Ok(f) = Filter::parse(&f) {
                let _ = f.matches(&e);
            }
        }

        /// `$not` is the complement of what it holds.
        #[test]
        fn not_is_the_complement(f in condition(), e in value()) {
            // Past the size and depth bounds either may be refused; both must then be.
            match (Filter::parse(&f), Filter::parse(&json!({"$not": f}))) {
                (Ok(inner), Ok(not)) => prop_assert_eq!(not.matches(&e), !inner.matches(&e)),
                (Err(_), Ok(_)) => prop_assert!(false, "the whole parsed, its part did not"),
                _ => {}
            }
        }

        /// `$in` of one value is `$eq` of it, and `$nin` of one `$neq`.
        #[test]
        fn in_of_one_is_eq(p in path(), v in value(), e in value()) {
            let one = |op: &str, arg: Value| Filter::parse(&json!({ p.clone(): { op: arg } }));
            if let (Ok(i), Ok(q), Ok(n), Ok(nq)) = (
                one("$in", json!([v.clone()])),
                one("$eq", v.clone()),
                one("$nin", json!([v.clone()])),
                one("$neq", v),
            ) {
                prop_assert_eq!(i.matches(&e), q.matches(&e));
                prop_assert_eq!(n.matches(&e), nq.matches(&e));
            }
        }

        /// An `$or` matches when one of its parts does, an `$and` when all do.
        #[test]
        fn and_or_are_all_and_any(a in condition(), b in condition(), e in value()) {
            let or = Filter::parse(&json!({"$or": [a.clone(), b.clone()]}));
            let and = Filter::parse(&json!({"$and": [a.clone(), b.clone()]}));
            if let (Ok(fa), Ok(fb), Ok(or), Ok(and)) = (Filter::parse(&a), Filter::parse(&b), or, and) {
                prop_assert_eq!(or.matches(&e), fa.matches(&e) || fb.matches(&e));
                prop_assert_eq!(and.matches(&e), fa.matches(&e) && fb.matches(&e));
            }
        }
    }
}
