//! The API phase: GET and PATCH on the public API at fixed concurrency, beside the ceiling of a
//! bare actix-web server doing one primary-key select.

use super::*;

/// Phase 1: the public API and its ceiling, in this process.
pub(crate) async fn api_phase(o: &Opts, sink: &Sink) -> anyhow::Result<Value> {
    let mut env = Env::new(sink.ca_file.clone()).await;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    // As a deployment's lead-api would have it, and the ceiling's server alike.
    let pool_size = lead_api::config::default_db_pool_size();
    let cfg = lead_api::ApiConfig {
        app_base_url: "https://app.qualifier.local".into(),
        rate_limit_per_minute: 100_000_000,
        allow_cidrs: vec!["127.0.0.0/8".parse()?],
        db_pool_size: pool_size,
        http_workers: workers,
        compress_payloads: None,
        ..lead_api::ApiConfig::local(
            env.db.database(),
            qualifier_testkit::brokers(),
            env.key(),
            env.topo.prefix.clone(),
            services::RETRY_DELAYS.to_vec(),
            INTERNAL_TOKEN.into(),
        )
    };

    let api = lead_api::start(cfg).await?;
    env.internal = format!("http://{}", api.internal_addr);
    env.public = format!("http://{}", api.public_addr);
    let (_, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 16).await?;
    let leads = 1000u64;
    produce(&env, &org, leads, 0, 16, None, false).await;
    let ids: Vec<String> = qualifier_testkit::sql::try_column(
        &env.db.client().await,
        "SELECT id::text FROM leads",
        &[],
    )
    .await?;
    let ids = Arc::new(ids);
    let tokens = Arc::new(org.tokens.clone());
    let concurrency = 32;
    let secs = Duration::from_secs(o.api_secs());
    let http = env.http.clone();
    let get = |base: String, authed: bool| {
        let (http, ids, tokens) = (http.clone(), ids.clone(), tokens.clone());
        move |i: u64| {
            let id = &ids[i as usize % ids.len()];
            let mut rb = http.get(format!("{base}/{id}"));
            if authed {
                rb = rb.bearer_auth(&tokens[i as usize % tokens.len()]);
            }
            async move { rb.send().await.is_ok_and(|r| r.status() == 200) }
        }
    };
    let leads_url = format!("{}/api/v1/leads", env.public);
    let (ceiling_base, ceiling) =
        ceilings::start_pk_server(&env.db.database(), pool_size, workers)?;
    let ceiling_url = format!("{ceiling_base}/pk");
    // A short warm-up of each, so pools and connections exist before anything is timed.
    load::closed_loop(
        concurrency,
        Duration::from_millis(500),
        get(leads_url.clone(), true),
    )
    .await;
    load::closed_loop(
        concurrency,
        Duration::from_millis(500),
        get(ceiling_url.clone(), false),
    )
    .await;
    let get_rate = load::closed_loop(concurrency, secs, get(leads_url.clone(), true)).await;
    let ceiling_rate = load::closed_loop(concurrency, secs, get(ceiling_url, false)).await;
    let patch_rate = {
        let (http, ids, tokens) = (http.clone(), ids.clone(), tokens.clone());
        load::closed_loop(concurrency, secs, move |i| {
            let id = &ids[i as usize % ids.len()];
            let rb = http
                .patch(format!("{leads_url}/{id}"))
                .bearer_auth(&tokens[i as usize % tokens.len()])
                .json(&json!({"ai_paused": i % 2 == 0}));
            async move { rb.send().await.is_ok_and(|r| r.status() == 200) }
        })
        .await
    };
    ceiling.stop(false).await;
    api.stop(true).await;
    Ok(json!({
        "concurrency": concurrency, "tokens": tokens.len(), "http_workers": workers,
        "db_pool_size": pool_size, "seconds_each": o.api_secs(),
        "get": get_rate.json(),
        "patch": patch_rate.json(),
        "ceiling_pk_select": ceiling_rate.json(),
        "get_ratio_to_ceiling": r3(get_rate.per_s / ceiling_rate.per_s),
        "patch_ratio_to_ceiling": r3(patch_rate.per_s / ceiling_rate.per_s),
    }))
}
