//! `--against DIR` (`make perf-check`): this build beside another one, usually the previous
//! release, in one sitting and with one harness.
//!
//! One run is the end-to-end run at the maximum rate (`e2e.rs`): new contacts and closings from
//! 32 clients, one org, one `webhook-delivery`, an HTTPS sink verifying every signature, CPU
//! read from `/proc` for the whole machine. The two builds take turns, and which goes first
//! alternates from pair to pair, so that a machine getting slower (a neighbour's load, a warm
//! page cache, a growing broker) weighs on both alike. Each pair gives a ratio (this build over
//! the other); the verdict is the median of those ratios, so one noisy run cannot decide it.

use super::*;

/// One run of one build.
struct Run {
    build: &'static str,
    delivered_per_s: f64,
    cpu_ms_per_event: f64,
    p50_ms: f64,
    p99_ms: f64,
    lost: u64,
    cpu: Value,
    statements: Value,
    /// Rows, WAL and broker messages per delivered event (`e2e.rs`'s cost figures).
    writes: Value,
}

/// The median of a few values (the mean of the middle two for an even count).
/// `values` with `places` decimals, separated by commas: a line's list of pairs or runs.
pub(crate) fn listed<'a>(values: impl Iterator<Item = &'a f64>, places: usize) -> String {
    let shown: Vec<String> = values.map(|v| format!("{v:.places$}")).collect();
    shown.join(", ")
}

pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if !v.len().is_multiple_of(2) {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Whether this build passes: its median CPU per event over the other's is at most
/// `max_cpu_ratio`, and nothing was lost on either side.
pub(crate) fn verdict(cpu_ratios: &[f64], lost: u64, max_cpu_ratio: f64) -> Result<(), String> {
    if lost > 0 {
        return Err(format!("{lost} committed events were never delivered"));
    }
    let m = median(cpu_ratios);
    if !m.is_finite() {
        return Err("no pair measured CPU".into());
    }
    if m > max_cpu_ratio {
        return Err(format!(
            "median CPU per event is {m:.3}x the other build's, above the allowed {max_cpu_ratio:.2}x"
        ));
    }
    Ok(())
}

/// Which build goes first in pair `i`: this one in even pairs, the other in odd ones.
pub(crate) fn order(i: usize) -> [bool; 2] {
    if i.is_multiple_of(2) {
        [true, false]
    } else {
        [false, true]
    }
}

async fn one(sink: &Sink, events: u64, this: bool, other: &std::path::Path) -> anyhow::Result<Run> {
    services::use_build((!this).then(|| other.to_path_buf()));
    let run = e2e(sink, events, 1, None, Measure::Cost).await;
    services::use_build(None);
    let run = run?;
    let cost = run.cost.clone().unwrap_or(Value::Null);
    let cpu = cost["cpu"].clone();
    Ok(Run {
        build: if this { "this" } else { "other" },
        delivered_per_s: run.delivered_per_s,
        cpu_ms_per_event: cpu["machine_cpu_ms_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        p50_ms: pct(&run.tally.lat_ms, 0.5),
        p99_ms: pct(&run.tally.lat_ms, 0.99),
        lost: run.tally.lost,
        cpu,
        statements: cost["statements"].clone(),
        writes: {
            let mut w = cost.clone();
            if let Some(o) = w.as_object_mut() {
                o.remove("cpu");
                o.remove("statements");
            }
            w
        },
    })
}

/// WAL records per delivered event from a run's cost figures (NaN when the run had none).
fn wal_records(writes: &Value) -> f64 {
    writes["pg_wal_records_per_delivered_event"]
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// Per process, the median CPU ms per 1,000 events of one build's runs.
fn by_process(runs: &[&Run]) -> Value {
    let mut out = serde_json::Map::new();
    for g in cpu::GROUPS.iter().copied().chain(["other"]) {
        let v: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.cpu["by_process"][g]["cpu_ms_per_1000_events"].as_f64())
            .collect();
        out.insert(g.to_owned(), json!(r3(median(&v))));
    }
    Value::Object(out)
}

/// `pairs` alternating pairs of runs of `events` each; fails when the median CPU ratio is above
/// `max_cpu_ratio` or an event was lost.
pub(crate) async fn against(
    sink: &Sink,
    other: &std::path::Path,
    pairs: usize,
    events: u64,
    max_cpu_ratio: f64,
) -> anyhow::Result<Value> {
    println!(
        "perf-check: this build against {}, {pairs} alternating pairs of {events} events",
        other.display()
    );
    println!(
        "  {:<5} {:<6} {:>14} {:>16} {:>9} {:>9} {:>6}   settled before it (s, CPU ms)",
        "pair", "build", "delivered ev/s", "CPU ms per event", "p50 ms", "p99 ms", "lost"
    );
    let mut runs: Vec<(usize, Run)> = Vec::new();
    for i in 0..pairs {
        for this in order(i) {
            let r = one(sink, events, this, other).await?;
            let settled = &r.writes["settled_before"];
            println!(
                "  {:<5} {:<6} {:>14.0} {:>16.3} {:>9.1} {:>9.1} {:>6}   {:.1}, {:.0}",
                i + 1,
                r.build,
                r.delivered_per_s,
                r.cpu_ms_per_event,
                r.p50_ms,
                r.p99_ms,
                r.lost,
                settled["waited_s"].as_f64().unwrap_or(f64::NAN),
                settled["cpu"]["machine_busy_ms"]
                    .as_f64()
                    .unwrap_or(f64::NAN)
            );
            runs.push((i, r));
        }
    }
    let side = |i: usize, this: bool| {
        runs.iter()
            .find(|(p, r)| *p == i && (r.build == "this") == this)
            .map(|(_, r)| r)
    };
    let mut cpu_ratios = Vec::new();
    let mut rate_ratios = Vec::new();
    for i in 0..pairs {
        if let (Some(a), Some(b)) = (side(i, true), side(i, false)) {
            cpu_ratios.push(a.cpu_ms_per_event / b.cpu_ms_per_event);
            rate_ratios.push(a.delivered_per_s / b.delivered_per_s);
        }
    }
    let lost: u64 = runs.iter().map(|(_, r)| r.lost).sum();
    let of = |this: bool| -> Vec<&Run> {
        runs.iter()
            .filter(|(_, r)| (r.build == "this") == this)
            .map(|(_, r)| r)
            .collect()
    };
    let (mine, theirs) = (of(true), of(false));
    let med =
        |rs: &[&Run], f: fn(&Run) -> f64| r3(median(&rs.iter().map(|r| f(r)).collect::<Vec<_>>()));
    let cpu_ratio = median(&cpu_ratios);
    let rate_ratio = median(&rate_ratios);
    println!();
    println!(
        "  median CPU per event ratio (this / other): {cpu_ratio:.3}   (pairs: {})",
        listed(cpu_ratios.iter(), 3)
    );
    println!(
        "  median delivered rate ratio (this / other): {rate_ratio:.3}   (pairs: {})",
        listed(rate_ratios.iter(), 3)
    );
    let (bp_mine, bp_theirs) = (by_process(&mine), by_process(&theirs));
    println!(
        "    {:<18} {:>14} {:>14}   (median CPU ms per 1,000 events)",
        "process", "this", "other"
    );
    for g in cpu::GROUPS.iter().copied().chain(["other"]) {
        println!(
            "    {g:<18} {:>14.1} {:>14.1}",
            bp_mine[g].as_f64().unwrap_or(f64::NAN),
            bp_theirs[g].as_f64().unwrap_or(f64::NAN)
        );
    }
    // WAL records are what a row version and each of its index entries cost the database, and
    // what a standby replays: printed beside CPU, as a shape change shows here first.
    let wal = |rs: &[&Run]| med(rs, |r| wal_records(&r.writes));
    let (wal_mine, wal_theirs) = (wal(&mine), wal(&theirs));
    println!(
        "    {:<18} {:>14.1} {:>14.1}   (median per delivered event)",
        "WAL records", wal_mine, wal_theirs
    );
    let verdict = verdict(&cpu_ratios, lost, max_cpu_ratio);
    let report = json!({
        "other_build": other.display().to_string(),
        "pairs": pairs,
        "events_per_run": events,
        "max_cpu_ratio": max_cpu_ratio,
        "runs": runs.iter().map(|(i, r)| json!({
            "pair": i + 1, "build": r.build, "delivered_per_s": r3(r.delivered_per_s),
            "cpu_ms_per_event": r3(r.cpu_ms_per_event), "p50_ms": r3(r.p50_ms),
            "p99_ms": r3(r.p99_ms), "events_lost": r.lost, "cpu": r.cpu,
            "statements": r.statements, "writes": r.writes,
        })).collect::<Vec<_>>(),
        "cpu_ratio_per_pair": cpu_ratios.iter().map(|r| r3(*r)).collect::<Vec<_>>(),
        "rate_ratio_per_pair": rate_ratios.iter().map(|r| r3(*r)).collect::<Vec<_>>(),
        "median_cpu_ratio": r3(cpu_ratio),
        "median_rate_ratio": r3(rate_ratio),
        "this": {"median_cpu_ms_per_event": med(&mine, |r| r.cpu_ms_per_event),
                 "median_wal_records_per_delivered_event": wal_mine,
                 "median_delivered_per_s": med(&mine, |r| r.delivered_per_s),
                 "median_cpu_ms_per_1000_events_by_process": bp_mine},
        "other": {"median_cpu_ms_per_event": med(&theirs, |r| r.cpu_ms_per_event),
                  "median_wal_records_per_delivered_event": wal_theirs,
                  "median_delivered_per_s": med(&theirs, |r| r.delivered_per_s),
                  "median_cpu_ms_per_1000_events_by_process": bp_theirs},
        "events_lost": lost,
        "passed": verdict.is_ok(),
    });
    match verdict {
        Ok(()) => {
            println!("\nperf-check: passed (median CPU ratio {cpu_ratio:.3} <= {max_cpu_ratio:.2})")
        }
        Err(why) => println!("\nperf-check: FAILED: {why}"),
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn one_noisy_pair_cannot_fail_the_check_but_two_can() {
        // One pair measured while something else ran: 1.6x. The median of three stays low.
        assert!(verdict(&[1.02, 1.6, 0.98], 0, 1.2).is_ok());
        let two = verdict(&[1.35, 1.6, 0.98], 0, 1.2).unwrap_err();
        assert!(two.contains("1.350x"), "{two}");
    }

    #[test]
    fn a_lost_event_fails_whatever_the_cost() {
        let e = verdict(&[0.5, 0.5, 0.5], 1, 1.2).unwrap_err();
        assert!(e.contains("never delivered"), "{e}");
    }

    #[test]
    fn builds_take_turns_going_first() {
        assert_eq!(order(0), [true, false]);
        assert_eq!(order(1), [false, true]);
        assert_eq!(order(2), [true, false]);
    }
}
