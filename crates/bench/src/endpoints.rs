//! Several endpoints per organisation (docs/api.md, "Endpoints"): what an event costs sent to three
//! endpoints against one, in the same sitting (the event's write, its commit and its relay are
//! shared; each delivery is a request, an outcome and a message of its own), and whether one
//! endpoint that fails or is throttled changes the others' commit-to-receipt latency.

use super::*;
use anyhow::Context;

/// The event types every endpoint of a run subscribes to: what [`produce`] causes.
const TYPES: [&str; 3] = ["lead.created", "lead.updated", "lead.stage_changed"];

/// The deployed default of `QUALIFIER_RETRY_DELAYS_MS` (docs/operations.md).
const DEPLOYED_RETRIES: &str = "30000,120000,480000,1920000";

/// How long a paced run causes events before its measured ones (see [`run`]).
const WARM_UP: Duration = Duration::from_secs(4);

/// The time scale of a failing endpoint: how long it fails before it is found failing
/// (`QUALIFIER_ENDPOINT_FAILING_SPAN_MS`), and whether the worker retries as deployed or on the
/// bench's scale.
#[derive(Clone, Copy)]
pub(crate) struct Scale {
    pub failing_span_ms: u64,
    pub deployed_retries: bool,
    /// How many times the isolation runs are repeated, in turn: one run's p99 is its slowest
    /// hundredth, a few dozen deliveries, and moves by several milliseconds between runs of
    /// one build, so each round's ratios are taken against that round's run without a third,
    /// and their medians reported.
    pub rounds: u32,
}

/// One run's figures: each measured endpoint's tally, and the machine's CPU over the run per
/// delivered request.
struct Run {
    tallies: Vec<Tally>,
    cpu: Value,
    /// PostgreSQL's statements over the run (`pg_stat_statements`), per delivered request.
    statements: Value,
}

/// One run: an org whose endpoints answer as `endpoints` says (the first is its webhook, each
/// with its settings beside the url and types), `events` events caused at `pace` a second (as
/// fast as they go when `None`), measured until each of the first `measured` endpoints has
/// every event.
async fn run(
    sink: &Sink,
    events: u64,
    endpoints: &[(Answer, Value)],
    measured: usize,
    pace: Option<f64>,
    scale: Scale,
) -> anyhow::Result<Run> {
    use reqwest::Method;
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    // As deployed: each endpoint at most a quarter of a process's slots (the default of
    // `QUALIFIER_DELIVERY_ORG_CONCURRENCY`), which is what keeps one endpoint's slow or failing
    // attempts from taking the slots the others need. Endpoint health in the bench's time
    // scale, as the outage phase has it: its retries wait 1 to 8 s instead of 30 s to 32 min,
    // so a failing endpoint is found failing after a second, not a minute, and its deliveries
    // wait in their rows from then on, as they would in production after its minute
    // (`--failing-span-ms 60000`: the deployed minute, longer than a run, so the failing
    // endpoint is tried and retried throughout).
    let mut env_vars = vec![
        (
            "QUALIFIER_ENDPOINT_FAILING_SPAN_MS",
            scale.failing_span_ms.to_string(),
        ),
        ("QUALIFIER_ENDPOINT_PROBE_MIN_MS", "1000".into()),
        ("QUALIFIER_ENDPOINT_PROBE_MAX_MS", "2000".into()),
    ];
    if scale.deployed_retries {
        // After the bench's own (`Env::common`): the later value is the one the process reads.
        env_vars.push(("QUALIFIER_RETRY_DELAYS_MS", DEPLOYED_RETRIES.into()));
    }
    let settings = DeliverySettings {
        org_concurrency: default_delivery().concurrency / 4,
        env: env_vars,
        ..default_delivery()
    };
    let worker = env.start_delivery(&settings).await?;
    let (first, url) = sink.endpoint(endpoints[0].0);
    let org = env.org(&url, 16).await?;
    sink.set_secret(first, &org.secret);
    // (the sink's index, the endpoint's id): the webhook's id is the org's.
    let mut eps = vec![(first, org.id.clone())];
    for (answer, extra) in &endpoints[1..] {
        let (e, url) = sink.endpoint(*answer);
        let mut body = json!({"url": url, "event_types": TYPES});
        for (k, v) in extra.as_object().context("endpoint settings")? {
            body[k] = v.clone();
        }
        let r = env
            .internal_call(Method::POST, &format!("/orgs/{}/endpoints", org.id), body)
            .await;
        sink.set_secret(e, r["signing_secret"].as_str().context("create endpoint")?);
        eps.push((
            e,
            r["endpoint"]["id"]
                .as_str()
                .context("endpoint id")?
                .to_owned(),
        ));
    }
    // A paced run's first seconds are unmeasured: each run starts its processes afresh, and
    // their first requests open connections, prepare statements and shake hands with the
    // receiver, which a long-running deployment did long ago. Two events per lead.
    let warm_up = pace.map_or(0, |r| (r * WARM_UP.as_secs_f64()) as u64 / 2);
    if warm_up > 0 {
        produce(&env, &org, warm_up, 0, 32, pace.map(|r| r / 2.0), true).await;
    }
    let window = Window::open(&env).await;
    let start = now_us();
    produce(
        &env,
        &org,
        events / 2,
        warm_up,
        32,
        pace.map(|r| r / 2.0),
        true,
    )
    .await;
    for (e, _) in &eps[..measured] {
        wait_delivered(sink, *e, events + 2 * warm_up, patience(events)).await;
    }
    let closed = window.close(&env).await;
    let mut tallies = Vec::new();
    for (e, id) in &eps[..measured] {
        let committed = env.committed_to(id).await?;
        tallies.push(Tally::of(&committed, &sink.receipts(), *e, &org.id, start));
    }
    let delivered = tallies.iter().map(|t| t.delivered).sum();
    api.stop();
    worker.stop();
    if scale.deployed_retries {
        // The worker declared retry queues named for the deployed delays; the run's topology
        // (`env.topo`, deleted when `env` drops) knows the bench's.
        let deployed: Vec<u64> = DEPLOYED_RETRIES
            .split(',')
            .filter_map(|d| d.parse().ok())
            .collect();
        let topology = qualifier_bus::Topology::new(env.topo.prefix.clone(), deployed);
        let conn = qualifier_bus::connect(&qualifier_testkit::amqp_url(), "qualifier bench")
            .await
            .context("broker, to delete the run's retry queues")?;
        topology.delete(&conn.create_channel().await?).await?;
        let _ = conn.close(200, "run done".into()).await;
    }
    let mut measured = closed.json(delivered);
    Ok(Run {
        tallies,
        cpu: measured["cpu"].take(),
        statements: measured["statements"].take(),
    })
}

/// The machine's CPU per delivered request of a run.
fn cpu_per_request(r: &Run) -> f64 {
    r.cpu["machine_cpu_ms_per_delivered_event"]
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// The two healthy endpoints' latencies, one run's, merged.
fn healthy_latency(r: &Run) -> (f64, f64, u64) {
    let mut lat: Vec<f64> = r.tallies.iter().flat_map(|t| t.lat_ms.clone()).collect();
    lat.sort_by(f64::total_cmp);
    let lost = r.tallies.iter().map(|t| t.lost).sum();
    (pct(&lat, 0.5), pct(&lat, 0.99), lost)
}

/// Where in a run its two measured endpoints' slowest hundredth of deliveries were: how many
/// of them in each tenth of the run, by commit time (a failing third's retries, for one, come
/// back from 30 s into a run on).
fn slow_by_tenth(r: &Run) -> String {
    let all: Vec<(i64, f64)> = r
        .tallies
        .iter()
        .flat_map(|t| t.lat_by_commit.iter().copied())
        .collect();
    let (Some(first), Some(last)) = (
        all.iter().map(|&(at, _)| at).min(),
        all.iter().map(|&(at, _)| at).max(),
    ) else {
        return "no deliveries".into();
    };
    let mut lat: Vec<f64> = all.iter().map(|&(_, ms)| ms).collect();
    lat.sort_by(f64::total_cmp);
    let p99 = pct(&lat, 0.99);
    let span = (last - first).max(1);
    let mut tenths = [0u32; 10];
    for &(at, ms) in &all {
        if ms >= p99 {
            tenths[(((at - first) * 10 / span) as usize).min(9)] += 1;
        }
    }
    let counts: Vec<String> = tenths.iter().map(u32::to_string).collect();
    format!(
        "the slowest hundredth (at or over {p99:.1} ms) by tenth of the run: {}",
        counts.join(" ")
    )
}

/// The phase: cost (one endpoint, then three, each as fast as it goes), then isolation (two
/// healthy endpoints at a steady `pace`, with a third absent, healthy, answering 500, then
/// throttled to one request a second). The healthy third tells what a third endpoint's load
/// costs the others by itself, apart from what its failing or its throttle adds.
pub(crate) async fn phase(
    sink: &Sink,
    events: u64,
    pace: f64,
    scale: Scale,
) -> anyhow::Result<Value> {
    let healthy = || (Answer::Ok, json!({}));
    let run = |endpoints: Vec<(Answer, Value)>, measured, pace| async move {
        run(sink, events, &endpoints, measured, pace, scale).await
    };
    let one = run(vec![healthy()], 1, None).await?;
    let three = run(vec![healthy(), healthy(), healthy()], 3, None).await?;
    let cost_ratio = cpu_per_request(&three) / cpu_per_request(&one);
    cpu::print("one endpoint", &one.cpu);
    cpu::print("three endpoints (per delivered request)", &three.cpu);

    let mut rounds: Vec<[Run; 4]> = Vec::new();
    for _ in 0..scale.rounds.max(1) {
        let absent = run(vec![healthy(), healthy()], 2, Some(pace)).await?;
        let third = run(vec![healthy(), healthy(), healthy()], 2, Some(pace)).await?;
        let failing = (Answer::Fail(500), json!({}));
        let failing = run(vec![healthy(), healthy(), failing], 2, Some(pace)).await?;
        let slow = (Answer::Ok, json!({"max_per_second": 1}));
        let throttled = run(vec![healthy(), healthy(), slow], 2, Some(pace)).await?;
        rounds.push([absent, third, failing, throttled]);
    }
    const TITLES: [(&str, &str); 4] = [
        ("third_absent", "beside no third endpoint"),
        ("third_healthy", "beside a healthy third"),
        ("third_failing_500", "beside a third answering 500"),
        ("third_throttled_1_per_s", "beside a third throttled to 1/s"),
    ];
    // Per request the two measured endpoints received: what a third adds to each of theirs.
    for (i, round) in rounds.iter().enumerate() {
        for ((_, title), r) in TITLES.iter().zip(round) {
            println!("round {}, {title}: {}", i + 1, slow_by_tenth(r));
            print_measured(title, &json!({"cpu": r.cpu, "statements": r.statements}));
        }
    }
    let mut isolation = json!({
        "pace_per_s": pace,
        "failing_span_ms": scale.failing_span_ms,
        "deployed_retries": scale.deployed_retries,
        "rounds": rounds.len(),
    });
    for (k, (key, _)) in TITLES.iter().enumerate() {
        let per_round: Vec<Value> = rounds
            .iter()
            .map(|round| {
                let (a50, a99, _) = healthy_latency(&round[0]);
                let (p50, p99, lost) = healthy_latency(&round[k]);
                json!({"p50_ms": r3(p50), "p99_ms": r3(p99), "lost": lost,
                       "p50_ratio": r3(p50 / a50), "p99_ratio": r3(p99 / a99),
                       "cpu_ms_per_delivered_request": r3(cpu_per_request(&round[k])),
                       "cpu": round[k].cpu})
            })
            .collect();
        let med = |f: &str| {
            let xs: Vec<f64> = per_round.iter().filter_map(|r| r[f].as_f64()).collect();
            r3(crate::perf::median(&xs))
        };
        let mut entry = json!({
            "p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"),
            "lost": per_round.iter().filter_map(|r| r["lost"].as_u64()).sum::<u64>(),
            "cpu_ms_per_delivered_request": med("cpu_ms_per_delivered_request"),
        });
        if k > 0 {
            entry["p50_ratio"] = json!(med("p50_ratio"));
            entry["p99_ratio"] = json!(med("p99_ratio"));
        }
        entry["per_round"] = Value::Array(per_round);
        isolation[*key] = entry;
    }
    let v = json!({
        "events": events,
        "cost": {
            "one_endpoint_cpu_ms_per_event": r3(cpu_per_request(&one)),
            "three_endpoints_cpu_ms_per_delivered_request": r3(cpu_per_request(&three)),
            "ratio": r3(cost_ratio),
            "lost": one.tallies.iter().chain(&three.tallies).map(|t| t.lost).sum::<u64>(),
            "one": one.cpu,
            "three": three.cpu,
        },
        "isolation": isolation,
    });
    let ratio = |run: &str, p: &str| {
        v["isolation"][run][format!("{p}_ratio")]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    println!(
        "endpoints: CPU per delivered request with three {cost_ratio:.3} of one's; the others' p50/p99 (median of {} rounds) beside a healthy third {:.2}x/{:.2}x, beside a failing one {:.2}x/{:.2}x, beside a throttled one {:.2}x/{:.2}x",
        rounds.len(),
        ratio("third_healthy", "p50"),
        ratio("third_healthy", "p99"),
        ratio("third_failing_500", "p50"),
        ratio("third_failing_500", "p99"),
        ratio("third_throttled_1_per_s", "p50"),
        ratio("third_throttled_1_per_s", "p99"),
    );
    Ok(v)
}

/// What filtering costs (docs/decisions.md, "Filters where an event becomes deliveries"): the
/// machine's CPU per event for an org whose event three endpoints' filters leave out, against
/// one whose event goes to one more endpoint, in alternating pairs of runs in one sitting. The
/// first costs a match per filter and a count per endpoint; the second a delivery row, a
/// message, a request and an outcome. Every run's org also has its webhook, which gets every
/// event.
pub(crate) async fn filters_phase(sink: &Sink, events: u64, pairs: u32) -> anyhow::Result<Value> {
    let scale = Scale {
        failing_span_ms: 1000,
        deployed_retries: false,
        rounds: 1,
    };
    let healthy = || (Answer::Ok, json!({}));
    let left_out = || {
        (
            Answer::Ok,
            json!({"filter": {"data.lead.channel": "no-such-channel"}}),
        )
    };
    // Per event: the run's machine CPU per delivered request times the requests per event.
    let per_event = |r: &Run| {
        let delivered: u64 = r.tallies.iter().map(|t| t.delivered).sum();
        cpu_per_request(r) * delivered as f64 / events as f64
    };
    let mut rows = Vec::new();
    for pair in 0..pairs.max(1) {
        let one_more = run(sink, events, &[healthy(), healthy()], 2, None, scale).await?;
        let filtered = run(
            sink,
            events,
            &[healthy(), left_out(), left_out(), left_out()],
            1,
            None,
            scale,
        )
        .await?;
        let (a, b) = (per_event(&one_more), per_event(&filtered));
        println!(
            "filters, pair {}: CPU ms per event with one more endpoint {a:.3}, with three filtered out {b:.3} ({:.3})",
            pair + 1,
            b / a
        );
        rows.push(json!({"one_more_endpoint_cpu_ms_per_event": r3(a),
                         "three_filtered_cpu_ms_per_event": r3(b),
                         "ratio": r3(b / a),
                         "lost": one_more.tallies.iter().chain(&filtered.tallies).map(|t| t.lost).sum::<u64>()}));
    }
    let ratios: Vec<f64> = rows.iter().filter_map(|r| r["ratio"].as_f64()).collect();
    let median = r3(crate::perf::median(&ratios));
    println!(
        "filters: three endpoints filtering an event out cost {median:.3} of one more endpoint getting it (median of {} pairs)",
        rows.len()
    );
    Ok(json!({"events": events, "median_ratio": median, "pairs": rows}))
}
