//! What each delivered event costs PostgreSQL, statement by statement, from
//! `pg_stat_statements` (the bench's own server preloads it: `scripts/bench.sh`).
//!
//! Only the run's own database is read, and its counters are reset when the measured window
//! opens, so every row is the services' work during that window. `track = top` (the default):
//! a PL/pgSQL function is one statement, its planning and execution included in the call.

use serde_json::{Value, json};

use crate::load::r3;
use crate::services::Env;

/// Rows of the printed table (the JSON has every statement).
const SHOWN: usize = 12;

/// Why a run has no statement table.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    /// The server does not preload the module (a server other than `scripts/bench.sh`'s).
    #[error(
        "pg_stat_statements unavailable ({0}); run the bench through `make bench`, which starts a server that preloads it"
    )]
    NotLoaded(String),
    #[error("pg_stat_statements could not be read: {0}")]
    Unreadable(String),
}

/// Opens the window: the extension in the run's database and its counters zeroed. Err says why
/// there will be no statement table.
pub async fn reset(env: &Env) -> Result<(), Unavailable> {
    let pg = env.db.client().await;
    pg.batch_execute(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0);",
    )
    .await
    .map_err(|e| {
        Unavailable::NotLoaded(
            e.as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
        )
    })
}

/// One statement's text on one line, at most `n` characters.
pub fn one_line(q: &str, n: usize) -> String {
    let flat = q.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= n {
        flat
    } else {
        let mut s: String = flat.chars().take(n.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// Statements grouped by normalised text.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub query: String,
    pub calls: i64,
    pub plans: i64,
    pub plan_ms: f64,
    pub exec_ms: f64,
    pub rows: i64,
    /// WAL records the statement wrote (its row versions and index entries, triggers included;
    /// not the commit's own record, which the `COMMIT` row carries when the client sent one).
    pub wal_records: i64,
}

/// Merges rows of the same text (several query ids can normalise to one text) and orders them
/// by total time, the most expensive first.
pub fn group(rows: Vec<Stmt>) -> Vec<Stmt> {
    let mut out: Vec<Stmt> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|s| s.query == r.query) {
            Some(s) => {
                s.calls += r.calls;
                s.plans += r.plans;
                s.plan_ms += r.plan_ms;
                s.exec_ms += r.exec_ms;
                s.rows += r.rows;
                s.wal_records += r.wal_records;
            }
            None => out.push(r),
        }
    }
    out.sort_by(|a, b| (b.plan_ms + b.exec_ms).total_cmp(&(a.plan_ms + a.exec_ms)));
    out
}

/// The window's statements so far (call this before the harness's own queries): Err when the
/// view cannot be read.
pub async fn fetch(env: &Env) -> Result<Vec<Stmt>, Unavailable> {
    let pg = env.db.client().await;
    let rows = pg
        .query(
            "SELECT query, calls::int8, plans::int8, total_plan_time, total_exec_time, rows::int8,
                    wal_records::int8
             FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND query NOT LIKE '%pg_stat_statements%'",
            &[],
        )
        .await
        .map_err(|e| Unavailable::Unreadable(e.to_string()))?;
    Ok(group(
        rows.iter()
            .map(|r| Stmt {
                query: r.get(0),
                calls: r.get(1),
                plans: r.get(2),
                plan_ms: r.get(3),
                exec_ms: r.get(4),
                rows: r.get(5),
                wal_records: r.get(6),
            })
            .collect(),
    ))
}

/// Statements per delivered event, from what [`reset`] and [`fetch`] gave.
pub fn summarize(fetched: Result<Vec<Stmt>, Unavailable>, delivered: u64) -> Value {
    let stmts = match fetched {
        Ok(s) => s,
        Err(why) => return json!({"unavailable": why.to_string()}),
    };
    let d = delivered.max(1) as f64;
    let total = |f: fn(&Stmt) -> f64| stmts.iter().map(f).sum::<f64>();
    json!({
        "delivered_events": delivered,
        "statements_per_event": r3(total(|s| s.calls as f64) / d),
        "plans_per_event": r3(total(|s| s.plans as f64) / d),
        "plan_ms_per_1000_events": r3(total(|s| s.plan_ms) * 1000.0 / d),
        "exec_ms_per_1000_events": r3(total(|s| s.exec_ms) * 1000.0 / d),
        "wal_records_per_event": r3(total(|s| s.wal_records as f64) / d),
        "by_query": stmts.iter().map(|s| json!({
            "query": s.query,
            "calls_per_event": r3(s.calls as f64 / d),
            "plans_per_event": r3(s.plans as f64 / d),
            "plan_ms_per_1000_events": r3(s.plan_ms * 1000.0 / d),
            "exec_ms_per_1000_events": r3(s.exec_ms * 1000.0 / d),
            "rows_per_event": r3(s.rows as f64 / d),
            "wal_records_per_event": r3(s.wal_records as f64 / d),
        })).collect::<Vec<_>>(),
    })
}

/// The table of a [`read`], printed under `title`.
pub fn print(title: &str, v: &Value) {
    if let Some(why) = v["unavailable"].as_str() {
        println!("  {title}: no statement table: {why}");
        return;
    }
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "  {title}: {:.2} statements, {:.2} plans and {:.1} WAL records (statements') per delivered event; per 1,000 events {:.1} ms planning, {:.1} ms executing",
        f("statements_per_event"),
        f("plans_per_event"),
        f("wal_records_per_event"),
        f("plan_ms_per_1000_events"),
        f("exec_ms_per_1000_events")
    );
    println!(
        "    {:>7} {:>7} {:>9} {:>9} {:>6}  statement",
        "calls/ev", "plans/ev", "plan ms/k", "exec ms/k", "WAL/ev"
    );
    let empty = Vec::new();
    for s in v["by_query"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .take(SHOWN)
    {
        let g = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "    {:>7.2} {:>7.2} {:>9.1} {:>9.1} {:>6.2}  {}",
            g("calls_per_event"),
            g("plans_per_event"),
            g("plan_ms_per_1000_events"),
            g("exec_ms_per_1000_events"),
            g("wal_records_per_event"),
            one_line(s["query"].as_str().unwrap_or(""), 90)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(q: &str, calls: i64, ms: f64) -> Stmt {
        Stmt {
            query: q.into(),
            calls,
            plans: calls,
            plan_ms: ms / 2.0,
            exec_ms: ms / 2.0,
            rows: calls,
            wal_records: calls,
        }
    }

    #[test]
    fn same_text_is_merged_and_the_costliest_comes_first() {
        let g = group(vec![
            s("SELECT 1", 10, 1.0),
            s("COMMIT", 5, 9.0),
            s("SELECT 1", 10, 1.0),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].query, "COMMIT");
        assert_eq!(g[1].calls, 20);
        assert_eq!(g[1].plan_ms + g[1].exec_ms, 2.0);
    }

    #[test]
    fn statements_are_shown_on_one_line_and_cut_short() {
        assert_eq!(one_line("SELECT a,\n   b FROM t", 90), "SELECT a, b FROM t");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
