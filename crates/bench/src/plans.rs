//! What each statement read, from the plans `auto_explain` logs (the bench's server preloads it
//! and writes a JSON log: `scripts/bench.sh`, `scripts/topology/postgres.sh`).
//!
//! A plan's rows read are what its scans touched: the rows each scan returned plus the rows its
//! filter or a lossy bitmap's recheck threw away, times its loops. What it answered is the rows
//! the statement returned or, for a count or a chart, the rows its aggregates took in. A
//! statement that reads many times what it answers walks history it does not need.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::load::r3;

/// The server's log directory (`QUALIFIER_BENCH_PG_LOG_DIR`, set by `scripts/bench.sh`).
pub struct LogDir(PathBuf);

/// How far each log file had been written when a window opened.
pub struct Mark(BTreeMap<PathBuf, u64>);

impl LogDir {
    pub fn from_env() -> Option<LogDir> {
        let d = PathBuf::from(std::env::var_os("QUALIFIER_BENCH_PG_LOG_DIR")?);
        d.is_dir().then_some(LogDir(d))
    }

    fn json_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.0)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn mark(&self) -> Mark {
        Mark(
            self.json_files()
                .into_iter()
                .map(|p| {
                    let n = std::fs::metadata(&p).map_or(0, |m| m.len());
                    (p, n)
                })
                .collect(),
        )
    }

    /// The plans logged since `mark` by sessions named `application`.
    pub fn plans_since(&self, mark: &Mark, application: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for p in self.json_files() {
            let from = mark.0.get(&p).copied().unwrap_or(0) as usize;
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            for line in bytes.get(from..).unwrap_or_default().split(|b| *b == b'\n') {
                let Ok(entry) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                if entry["application_name"].as_str() != Some(application) {
                    continue;
                }
                if let Some(plan) = entry["message"].as_str().and_then(plan_of) {
                    out.push(plan);
                }
            }
        }
        out
    }
}

/// The JSON plan in an `auto_explain` message (`duration: … ms  plan:` then the plan).
pub fn plan_of(message: &str) -> Option<Value> {
    let at = message.find("plan:")?;
    let start = at + message[at..].find('{')?;
    serde_json::from_str(&message[start..]).ok()
}

/// (rows read, rows answered) of one logged plan; scans of the tables in `small` are not
/// counted.
pub fn rows_of(plan: &Value, small: &HashSet<String>) -> (f64, f64) {
    let root = &plan["Plan"];
    let mut read = 0.0;
    let mut counted = 0.0;
    walk(root, small, &mut read, &mut counted);
    let top = num(root, "Actual Rows") * num(root, "Actual Loops").max(1.0);
    (read, top.max(counted))
}

/// Table pages an index-only scan of `plan` had to visit because the visibility map did not
/// vouch for them: what makes a count over the index alone cost as much as reading the rows.
pub fn heap_fetches_of(plan: &Value) -> f64 {
    fn walk(node: &Value) -> f64 {
        let own = num(node, "Heap Fetches") * num(node, "Actual Loops").max(1.0);
        let children = node["Plans"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        own + children.iter().map(walk).sum::<f64>()
    }
    walk(&plan["Plan"])
}

fn num(node: &Value, key: &str) -> f64 {
    node[key].as_f64().unwrap_or(0.0)
}

fn walk(node: &Value, small: &HashSet<String>, read: &mut f64, counted: &mut f64) {
    let kind = node["Node Type"].as_str().unwrap_or("");
    let loops = num(node, "Actual Loops").max(1.0);
    let relation = node["Relation Name"].as_str().unwrap_or("");
    if matches!(
        kind,
        "Seq Scan" | "Index Scan" | "Index Only Scan" | "Bitmap Heap Scan" | "Tid Scan"
    ) && !small.contains(relation)
    {
        *read += (num(node, "Actual Rows")
            + num(node, "Rows Removed by Filter")
            + num(node, "Rows Removed by Index Recheck"))
            * loops;
    }
    let children = node["Plans"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if kind == "Aggregate" {
        for c in children {
            *counted += num(c, "Actual Rows") * num(c, "Actual Loops").max(1.0);
        }
    }
    for c in children {
        walk(c, small, read, counted);
    }
}

/// Plans grouped by statement: each statement's worst call (most rows read per row answered).
pub fn by_statement(
    plans: &[Value],
    small: &HashSet<String>,
    max_ratio: f64,
    slack: f64,
) -> Vec<Value> {
    struct Worst<'a> {
        calls: u64,
        read: f64,
        answered: f64,
        heap_fetches: f64,
        plan: &'a Value,
        compiled: bool,
    }
    let mut by: BTreeMap<String, Worst> = BTreeMap::new();
    for p in plans {
        let q = crate::stmts::one_line(p["Query Text"].as_str().unwrap_or("?"), 600);
        let (read, answered) = rows_of(p, small);
        let w = by.entry(q).or_insert(Worst {
            calls: 0,
            read: 0.0,
            answered: 0.0,
            heap_fetches: 0.0,
            plan: p,
            compiled: false,
        });
        w.calls += 1;
        w.compiled |= compiled(p);
        let excess = |r: f64, a: f64| r - max_ratio * a;
        if excess(read, answered) > excess(w.read, w.answered) || w.calls == 1 {
            w.read = read;
            w.answered = answered;
            w.plan = p;
        }
        w.heap_fetches = w.heap_fetches.max(heap_fetches_of(p));
    }
    let mut v: Vec<Value> = by
        .into_iter()
        .map(|(q, w)| {
            let over = w.read > max_ratio * w.answered + slack;
            let shown = if over || w.compiled {
                Value::from(outline(w.plan))
            } else {
                Value::Null
            };
            json!({
                "query": q,
                "calls": w.calls,
                "rows_read": w.read,
                "rows_answered": w.answered,
                "read_per_answered": r3(w.read / w.answered.max(1.0)),
                "heap_fetches": w.heap_fetches,
                "over_limit": over,
                "jit_compiled": w.compiled,
                // What to read first when a statement fails the check.
                "plan": shown,
            })
        })
        .collect();
    v.sort_by(|a, b| {
        b["rows_read"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["rows_read"].as_f64().unwrap_or(0.0))
    });
    v
}

/// Whether PostgreSQL compiled the statement to machine code before running it (JIT): tens of
/// milliseconds each time for a statement that reads a page, which the services' sessions
/// turn off (`crates/store/src/pool.rs`), so a plan that shows it is a failure of the check.
pub fn compiled(plan: &Value) -> bool {
    num(&plan["JIT"], "Functions") > 0.0
}

/// A logged plan as one line a node, indented by depth: each node's type, relation and index,
/// its conditions, and the rows it returned and threw away over its loops. Enough to see which
/// index a statement walked and which condition did not bound the walk.
pub fn outline(plan: &Value) -> Vec<String> {
    fn node(n: &Value, depth: usize, out: &mut Vec<String>) {
        let s = |k: &str| n[k].as_str().map(|v| format!(" {k}: {v}"));
        let mut line = format!(
            "{}{}",
            "  ".repeat(depth),
            n["Node Type"].as_str().unwrap_or("?")
        );
        for k in [
            "Parent Relationship",
            "Subplan Name",
            "Relation Name",
            "Index Name",
        ] {
            line.extend(s(k));
        }
        line.push_str(&format!(
            " rows={} loops={}",
            num(n, "Actual Rows"),
            num(n, "Actual Loops")
        ));
        let removed = num(n, "Rows Removed by Filter");
        if removed > 0.0 {
            line.push_str(&format!(" removed={removed}"));
        }
        for k in ["Index Cond", "Filter", "Recheck Cond"] {
            line.extend(s(k));
        }
        out.push(line);
        for c in n["Plans"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            node(c, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    node(&plan["Plan"], 0, &mut out);
    out
}

/// Each call's statement that read the most, under `mode` (custom or generic plans).
pub fn print(mode: &str, calls: &[Value]) {
    println!("      plans ({mode} plans): the statement of each call that read the most");
    println!(
        "      {:<6} {:<34} {:>9} {:>9} {:>9}",
        "org", "call", "read", "answered", "heap"
    );
    for c in calls {
        println!(
            "      {:<6} {:<34} {:>9} {:>9} {:>9} {}",
            c["org"].as_str().unwrap_or(""),
            c["call"].as_str().unwrap_or(""),
            c["rows_read"].as_f64().unwrap_or(0.0),
            c["rows_answered"].as_f64().unwrap_or(0.0),
            c["heap_fetches"].as_f64().unwrap_or(0.0),
            if c["over_limit"].as_bool() == Some(true) {
                "OVER"
            } else if c["jit_compiled"].as_bool() == Some(true) {
                "JIT"
            } else {
                "ok"
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filtered_walk_reads_what_it_threw_away_and_a_count_answers_what_it_counted() {
        let walk = json!({"Query Text": "SELECT … LIMIT 50", "Plan": {
            "Node Type": "Limit", "Actual Rows": 50, "Actual Loops": 1,
            "Plans": [{"Node Type": "Index Scan", "Actual Rows": 50, "Actual Loops": 1,
                       "Rows Removed by Filter": 4950}]}});
        let none = HashSet::new();
        assert_eq!(rows_of(&walk, &none), (5000.0, 50.0));
        let count = json!({"Query Text": "SELECT count(*) …", "Plan": {
            "Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1,
            "Plans": [{"Node Type": "Index Only Scan", "Actual Rows": 60000, "Actual Loops": 1}]}});
        assert_eq!(rows_of(&count, &none), (60000.0, 60000.0));
        let stmts = by_statement(&[walk.clone(), count], &none, 10.0, 20.0);
        let over: Vec<bool> = stmts
            .iter()
            .map(|s| s["over_limit"].as_bool().unwrap())
            .collect();
        // Sorted by rows read: the count (fine), then the walk (100 per row answered).
        assert_eq!(over, vec![false, true]);
        // A table that stays small is not counted (its seq scan is the right plan).
        let orgs = json!({"Query Text": "SELECT name …", "Plan": {
            "Node Type": "Seq Scan", "Relation Name": "orgs", "Actual Rows": 1,
            "Actual Loops": 1, "Rows Removed by Filter": 200}});
        let small: HashSet<String> = ["orgs".to_owned()].into();
        assert_eq!(rows_of(&orgs, &small), (0.0, 1.0));
        assert_eq!(rows_of(&orgs, &none), (201.0, 1.0));
    }

    #[test]
    fn a_plan_is_compiled_when_its_jit_section_names_functions() {
        let plan = |jit: Value| json!({"Plan": {"Node Type": "Result"}, "JIT": jit});
        assert!(compiled(&plan(json!({"Functions": 94}))));
        assert!(!compiled(&plan(Value::Null)));
        assert!(!compiled(&json!({"Plan": {"Node Type": "Result"}})));
    }

    #[test]
    fn an_outline_names_each_node_its_index_and_what_it_threw_away() {
        let plan = json!({"Plan": {
            "Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1,
            "Plans": [{"Node Type": "Index Only Scan", "Relation Name": "deliveries_p1",
                       "Index Name": "deliveries_p1_org_state", "Actual Rows": 1,
                       "Actual Loops": 1, "Rows Removed by Filter": 49,
                       "Index Cond": "(org_id = $1)", "Filter": "(created_at >= $4)"}]}});
        assert_eq!(
            outline(&plan),
            [
                "Aggregate rows=1 loops=1",
                "  Index Only Scan Relation Name: deliveries_p1 Index Name: deliveries_p1_org_state \
                 rows=1 loops=1 removed=49 Index Cond: (org_id = $1) Filter: (created_at >= $4)",
            ]
        );
    }

    #[test]
    fn heap_fetches_are_summed_over_the_plan_and_its_loops() {
        let plan = json!({"Plan": {
            "Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1,
            "Plans": [{"Node Type": "Index Only Scan", "Actual Rows": 60000, "Actual Loops": 2,
                       "Heap Fetches": 700}]}});
        assert_eq!(heap_fetches_of(&plan), 1400.0);
        let none = json!({"Plan": {"Node Type": "Seq Scan", "Actual Rows": 3}});
        assert_eq!(heap_fetches_of(&none), 0.0);
    }

    #[test]
    fn the_plan_is_read_out_of_the_log_message() {
        let m = "duration: 0.042 ms  plan:\n{\n  \"Query Text\": \"SELECT 1\",\n  \"Plan\": {\"Node Type\": \"Result\", \"Actual Rows\": 1, \"Actual Loops\": 1}\n}";
        let p = plan_of(m).unwrap();
        assert_eq!(p["Query Text"], "SELECT 1");
        assert_eq!(plan_of("connection received"), None);
    }
}
