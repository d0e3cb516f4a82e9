//! Where a run's CPU goes, process by process, read from `/proc` (Linux).
//!
//! A snapshot sums user + system time per group of processes, found by their command name, so
//! it needs no pid plumbing and measures an older build's binaries the same way. A process that
//! exits between two snapshots is not lost: its time moves into its parent's `cutime`/`cstime`
//! (the postmaster reaps its backends), and both are counted. The harness's own process is split
//! by thread: the sink's actix-web threads against the rest (the load generator, the feed
//! tail, the harness itself).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};

use crate::load::r3;

/// The groups a run's CPU is shown in, in the order of the table.
pub const GROUPS: [&str; 6] = [
    "lead-api",
    "webhook-delivery",
    "postgresql",
    "rabbitmq",
    "bench sink",
    "bench load",
];

/// Which group a process belongs to, by its command name (`/proc/PID/comm`: at most 15
/// characters, so `webhook-delivery` reads `webhook-deliver`).
pub fn group_of(comm: &str) -> Option<&'static str> {
    match comm {
        "lead-api" => Some("lead-api"),
        c if "webhook-delivery".starts_with(c) && c.len() >= 12 => Some("webhook-delivery"),
        "postgres" => Some("postgresql"),
        // The Erlang VM and its helpers; `rabbitmqctl` is a VM too, but the harness only calls
        // it outside the measured window.
        "beam.smp" | "erl_child_setup" | "epmd" | "inet_gethost" => Some("rabbitmq"),
        _ => None,
    }
}

/// Fields 14-17 of `/proc/PID/stat` (utime, stime, cutime, cstime), in clock ticks, and the
/// command name. The name sits in parentheses and may itself hold spaces or parentheses, so
/// the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<(String, [u64; 4])> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14.
    let f = |i: usize| rest.get(i - 3).and_then(|s| s.parse::<u64>().ok());
    Some((comm, [f(14)?, f(15)?, f(16)?, f(17)?]))
}

/// The machine's busy and total ticks from the first line of `/proc/stat`. Busy is user, nice,
/// system, irq and softirq; idle, iowait and steal (time the hypervisor gave elsewhere) are not.
pub fn parse_machine(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let total: u64 = v.iter().take(8).sum();
    Some((busy, total))
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    machine_busy: u64,
    machine_total: u64,
    groups: BTreeMap<&'static str, u64>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Ticks per second (`getconf CLK_TCK`; 100 on every Linux this runs on).
fn ticks_per_s() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

impl Snapshot {
    pub fn take() -> Snapshot {
        let (machine_busy, machine_total) = read("/proc/stat")
            .and_then(|s| parse_machine(&s))
            .unwrap_or((0, 0));
        let mut groups: BTreeMap<&'static str, u64> = GROUPS.iter().map(|g| (*g, 0)).collect();
        let me = std::process::id();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if pid == me {
                    continue;
                }
                let Some((comm, t)) =
                    read(&format!("/proc/{pid}/stat")).and_then(|s| parse_stat(&s))
                else {
                    continue;
                };
                if let Some(g) = group_of(&comm) {
                    *groups.entry(g).or_default() += t.iter().sum::<u64>();
                }
            }
        }
        // The harness itself: its threads by name, whatever is left (threads that ended) to load.
        let whole = read("/proc/self/stat")
            .and_then(|s| parse_stat(&s))
            .map_or(0, |(_, t)| t[0] + t[1]);
        let mut sink = 0;
        if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
            for e in dir.flatten() {
                let path = e.path().join("stat");
                if let Some((comm, t)) = std::fs::read_to_string(path)
                    .ok()
                    .and_then(|s| parse_stat(&s))
                    && comm.starts_with("actix-")
                {
                    sink += t[0] + t[1];
                }
            }
        }
        groups.insert("bench sink", sink);
        groups.insert("bench load", whole.saturating_sub(sink));
        Snapshot {
            at: Instant::now(),
            machine_busy,
            machine_total,
            groups,
        }
    }
}

/// A busy share of the machine under which it counts as quiet: the services between runs (the
/// chart's tick, the relays' polls) stay well under it.
pub const QUIET_SHARE: f64 = 0.10;

/// What [`settle`] waited for: how long, and the CPU the machine and each group spent meanwhile.
#[derive(Debug, Clone)]
pub struct Settled {
    pub waited_s: f64,
    pub report: Value,
}

/// Waits until the machine has been under [`QUIET_SHARE`] busy for two half-seconds in a row, or
/// `limit` has passed. A measured window opened right after the run before it would charge this
/// run with what that run left behind (the broker writing back its queue's log, the database
/// writing back its pages), and a build that leaves more behind would make the next run look
/// dearer, whichever build it is.
pub async fn settle(limit: std::time::Duration) -> Settled {
    let start = Snapshot::take();
    let mut last = start.clone();
    let mut quiet = 0;
    while quiet < 2 && start.at.elapsed() < limit {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let now = Snapshot::take();
        let busy = now.machine_busy.saturating_sub(last.machine_busy) as f64;
        let total = now.machine_total.saturating_sub(last.machine_total) as f64;
        quiet = if busy < QUIET_SHARE * total.max(1.0) {
            quiet + 1
        } else {
            0
        };
        last = now;
    }
    Settled {
        waited_s: last.at.duration_since(start.at).as_secs_f64(),
        // Reported as if 1,000 events were delivered, so each per-1,000 figure is the CPU ms.
        report: report(&start, &last, 1000),
    }
}

/// CPU between `before` and `after`, per 1,000 delivered events and as shares of the machine's
/// busy time. `other` is the busy time no group accounts for (interrupts, the kernel's own
/// threads, anything else running).
pub fn report(before: &Snapshot, after: &Snapshot, delivered: u64) -> Value {
    let tick_ms = 1000.0 / ticks_per_s();
    let per_k = 1000.0 / delivered.max(1) as f64;
    let busy = after.machine_busy.saturating_sub(before.machine_busy) as f64 * tick_ms;
    let total = after.machine_total.saturating_sub(before.machine_total) as f64 * tick_ms;
    let wall = after.at.duration_since(before.at).as_secs_f64() * 1000.0;
    let mut by = serde_json::Map::new();
    let mut counted = 0.0;
    for g in GROUPS {
        let ms = after.groups.get(g).copied().unwrap_or(0) as f64 * tick_ms
            - before.groups.get(g).copied().unwrap_or(0) as f64 * tick_ms;
        let ms = ms.max(0.0);
        counted += ms;
        by.insert(
            g.to_owned(),
            json!({"cpu_ms": r3(ms), "cpu_ms_per_1000_events": r3(ms * per_k),
                   "share_of_busy": r3(ms / busy.max(1e-9))}),
        );
    }
    let other = (busy - counted).max(0.0);
    by.insert(
        "other".into(),
        json!({"cpu_ms": r3(other), "cpu_ms_per_1000_events": r3(other * per_k),
               "share_of_busy": r3(other / busy.max(1e-9))}),
    );
    json!({
        "delivered_events": delivered,
        "wall_ms": r3(wall),
        "machine_busy_ms": r3(busy),
        "machine_busy_share": r3(busy / total.max(1e-9)),
        "machine_cpu_ms_per_delivered_event": r3(busy / delivered.max(1) as f64),
        "by_process": by,
    })
}

/// The table of a [`report`], printed under `title`.
pub fn print(title: &str, v: &Value) {
    println!(
        "  {title}: machine {:.3} CPU ms per delivered event, {:.0}% busy over {:.1} s",
        v["machine_cpu_ms_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        v["machine_busy_share"].as_f64().unwrap_or(f64::NAN) * 100.0,
        v["wall_ms"].as_f64().unwrap_or(f64::NAN) / 1000.0
    );
    println!(
        "    {:<18} {:>22} {:>8}",
        "process", "CPU ms / 1,000 events", "share"
    );
    for g in GROUPS.iter().copied().chain(["other"]) {
        let p = &v["by_process"][g];
        println!(
            "    {g:<18} {:>22.1} {:>7.1}%",
            p["cpu_ms_per_1000_events"].as_f64().unwrap_or(f64::NAN),
            p["share_of_busy"].as_f64().unwrap_or(f64::NAN) * 100.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        // A command name with a space and a parenthesis of its own.
        let line = "4242 (web (x) y) S 1 4242 4242 0 -1 4194560 500 0 0 0 \
                    1234 56 7 8 20 0 9 0 100 0 0";
        let (comm, t) = parse_stat(line).expect("parses");
        assert_eq!(comm, "web (x) y");
        assert_eq!(t, [1234, 56, 7, 8]);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn machine_busy_leaves_out_idle_iowait_and_steal() {
        let text = "cpu  100 10 50 1000 20 3 7 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_machine(text), Some((100 + 10 + 50 + 3 + 7, 1230)));
    }

    #[test]
    fn processes_are_grouped_by_their_truncated_command_names() {
        assert_eq!(group_of("webhook-deliver"), Some("webhook-delivery"));
        assert_eq!(group_of("lead-api"), Some("lead-api"));
        assert_eq!(group_of("postgres"), Some("postgresql"));
        assert_eq!(group_of("beam.smp"), Some("rabbitmq"));
        assert_eq!(group_of("webhook"), None);
        assert_eq!(group_of("bash"), None);
    }

    /// Keeps one core busy while `go` says so.
    fn spin_while(go: impl Fn() -> bool) {
        let mut x = 0u64;
        while go() {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }

    #[tokio::test]
    async fn a_machine_kept_busy_is_not_taken_for_quiet() {
        // A thread spinning for longer than the wait: at least half of a two-core machine,
        // far above the quiet share, so the wait runs to its limit and says so.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spin = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                spin_while(|| !stop.load(std::sync::atomic::Ordering::Relaxed))
            })
        };
        let settled = settle(std::time::Duration::from_millis(1500)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spin.join().unwrap();
        assert!(
            settled.waited_s >= 1.4,
            "waited {:.2} s while a thread spun",
            settled.waited_s
        );
        assert!(settled.report["machine_busy_ms"].as_f64().unwrap() >= 500.0);
    }

    #[test]
    fn this_process_is_seen_spending_cpu() {
        let before = Snapshot::take();
        let t = Instant::now();
        spin_while(|| t.elapsed().as_millis() < 150);
        let after = Snapshot::take();
        let v = report(&before, &after, 1);
        assert!(v["by_process"]["bench load"]["cpu_ms"].as_f64().unwrap() >= 50.0);
        assert!(v["machine_busy_ms"].as_f64().unwrap() >= 50.0);
    }
}
