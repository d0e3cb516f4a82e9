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

/// The time scale of a failing endpoint: how long it fails before it is found failing
/// (`QUALIFIER_ENDPOINT_FAILING_SPAN_MS`), and whether the worker retries as deployed or on the
/// bench's scale.
#[derive(Clone, Copy)]
pub(crate) struct Scale {
    pub failing_span_ms: u64,
    pub deployed_retries: bool,
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
    let window = Window::open(&env).await;
    let start = now_us();
    produce(&env, &org, events / 2, 0, 32, pace.map(|r| r / 2.0), true).await;
    for (e, _) in &eps[..measured] {
        wait_delivered(sink, *e, events, patience(events)).await;
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

    let absent = run(vec![healthy(), healthy()], 2, Some(pace)).await?;
    let third = run(vec![healthy(), healthy(), healthy()], 2, Some(pace)).await?;
    let failing = (Answer::Fail(500), json!({}));
    let failing = run(vec![healthy(), healthy(), failing], 2, Some(pace)).await?;
    let slow = (Answer::Ok, json!({"max_per_second": 1}));
    let throttled = run(vec![healthy(), healthy(), slow], 2, Some(pace)).await?;
    // Per request the two measured endpoints received: what a third adds to each of theirs.
    for (title, r) in [
        ("beside no third endpoint", &absent),
        ("beside a healthy third", &third),
        ("beside a third answering 500", &failing),
        ("beside a third throttled to 1/s", &throttled),
    ] {
        print_measured(title, &json!({"cpu": r.cpu, "statements": r.statements}));
    }
    let (a50, a99, a_lost) = healthy_latency(&absent);
    let beside = |r: &Run| {
        let (p50, p99, lost) = healthy_latency(r);
        json!({"p50_ms": r3(p50), "p99_ms": r3(p99), "lost": lost,
               "p50_ratio": r3(p50 / a50), "p99_ratio": r3(p99 / a99),
               "cpu_ms_per_delivered_request": r3(cpu_per_request(r)), "cpu": r.cpu})
    };
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
        "isolation": {
            "pace_per_s": pace,
            "failing_span_ms": scale.failing_span_ms,
            "deployed_retries": scale.deployed_retries,
            "third_absent": {"p50_ms": r3(a50), "p99_ms": r3(a99), "lost": a_lost,
                             "cpu_ms_per_delivered_request": r3(cpu_per_request(&absent)),
                             "cpu": absent.cpu},
            "third_healthy": beside(&third),
            "third_failing_500": beside(&failing),
            "third_throttled_1_per_s": beside(&throttled),
        },
    });
    let ratio = |run: &str, p: &str| {
        v["isolation"][run][format!("{p}_ratio")]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    println!(
        "endpoints: CPU per delivered request with three {cost_ratio:.3} of one's; the others' p50/p99 beside a healthy third {:.2}x/{:.2}x, beside a failing one {:.2}x/{:.2}x, beside a throttled one {:.2}x/{:.2}x",
        ratio("third_healthy", "p50"),
        ratio("third_healthy", "p99"),
        ratio("third_failing_500", "p50"),
        ratio("third_failing_500", "p99"),
        ratio("third_throttled_1_per_s", "p50"),
        ratio("third_throttled_1_per_s", "p99"),
    );
    Ok(v)
}
