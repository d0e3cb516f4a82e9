//! The parts measured bare, in the same run and on the same machine: what the system could do if
//! it were nothing but that part.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use diesel::{QueryDsl, SelectableHelper};
use futures_util::StreamExt;
use qualifier_bus::lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use qualifier_bus::lapin::types::FieldTable;
use qualifier_bus::{DeliveryMeta, Outgoing, Publisher};
use qualifier_store::DbPool;
use qualifier_store::answer::ReadToEnd;
use qualifier_store::schema::leads;
use qualifier_testkit::{TestTopology, amqp_url};
use serde_json::json;

use crate::load;
use crate::services::RETRY_DELAYS;
use crate::sink::Sink;

/// A body the size of a real `lead.stage_changed` envelope.
pub fn sample_body() -> Vec<u8> {
    let lead = json!({"id": uuid::Uuid::new_v4(), "name": "Bench Lead", "email": null,
        "phone": "+447700900123", "channel": "sms", "qualification_stage": "closed",
        "route_target": null, "profile": {}, "external_ref": null, "ai_paused": false,
        "url": "https://app.qualifier.local/leads/00000000-0000-0000-0000-000000000000",
        "created_at": "2026-11-21T10:00:00.000Z", "updated_at": "2026-11-21T10:00:00.000Z"});
    serde_json::to_vec(
        &json!({"id": uuid::Uuid::new_v4(), "type": "lead.stage_changed",
        "created_at": "2026-11-21T10:00:00.000Z", "org_id": uuid::Uuid::new_v4(),
        "data": {"lead": lead, "previous_stage": "qualifying"}}),
    )
    .unwrap_or_default()
}

#[derive(diesel::Queryable, diesel::Selectable, serde::Serialize)]
#[diesel(table_name = leads)]
struct LeadRow {
    id: uuid::Uuid,
    name: String,
    phone: String,
    qualification_stage: String,
    profile: serde_json::Value,
}

/// The API ceiling: one primary-key select of a lead, serialised as JSON, nothing else.
async fn pk_select(path: web::Path<uuid::Uuid>, pool: web::Data<DbPool>) -> HttpResponse {
    let Ok(mut conn) = pool.get().await else {
        return HttpResponse::ServiceUnavailable().finish();
    };
    match leads::table
        .find(path.into_inner())
        .select(LeadRow::as_select())
        .first_row(&mut conn)
        .await
    {
        Ok(row) => HttpResponse::Ok().json(json!({ "lead": row })),
        Err(_) => HttpResponse::NotFound().finish(),
    }
}

/// Starts the ceiling server with the same worker count and pool size as `lead-api`; returns
/// its base URL and its handle.
pub fn start_pk_server(
    database: &qualifier_store::Database,
    pool_size: usize,
    workers: usize,
) -> anyhow::Result<(String, actix_web::dev::ServerHandle)> {
    let pool = qualifier_store::connect(database, pool_size)?;
    let data = web::Data::new(pool);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/pk/{id}", web::get().to(pk_select))
    })
    .workers(workers)
    .disable_signals()
    .bind("127.0.0.1:0")?;
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((format!("http://127.0.0.1:{port}"), handle))
}

/// The sink driven by a bare reqwest client: the same TLS (rustls with ring, the sink's
/// certificate trusted), the same headers and signing, the same concurrency as a delivery
/// process, and nothing else.
pub async fn bare_sink(sink: &Sink, n: u64, concurrency: usize) -> anyhow::Result<f64> {
    let (ep, url) = sink.endpoint(crate::sink::Answer::Ok);
    let secret = "whsec_bench_bare_reqwest";
    sink.set_secret(ep, secret);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(&sink.ca_pem)?)
        .build()?;
    let body = Arc::new(sample_body());
    let started = Instant::now();
    load::run_n(n, concurrency, None, move |_| {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        async move {
            let sig = qualifier_signing::sign(secret, &body);
            client
                .post(&url)
                .header("Content-Type", "application/json")
                .header("X-Qualifier-Event", "lead.stage_changed")
                .header("X-Qualifier-Signature", sig)
                .header("X-Qualifier-Delivery", uuid::Uuid::new_v4().to_string())
                .header("X-Qualifier-Timestamp", "2026-11-21T10:00:00.000Z")
                .body(body.as_ref().clone())
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await;
    let rate = n as f64 / started.elapsed().as_secs_f64();
    let valid = sink.count_valid(ep) as u64;
    anyhow::ensure!(valid >= n, "bare sink run: only {valid} of {n} verified");
    Ok(rate)
}

/// lapin alone on the same broker and the same topology kind (quorum work queue): publish with
/// confirms in the relay's batches, then consume with the worker's prefetch, acking each.
pub async fn lapin_rates(n: u64, batch: usize, prefetch: u16) -> anyhow::Result<(f64, f64)> {
    let topo = TestTopology::new(RETRY_DELAYS.to_vec());
    let t = topo.topology();
    let conn = qualifier_bus::connect(&amqp_url(), "qualifier-bench ceiling").await?;
    let publisher = Publisher::new(&conn).await?;
    t.declare(publisher.channel()).await?;
    let body = sample_body();
    let exchange = t.events_exchange();
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < n {
        let k = (n - sent).min(batch as u64);
        let metas: Vec<DeliveryMeta> = (0..k)
            .map(|_| DeliveryMeta {
                delivery_id: uuid::Uuid::new_v4(),
                event_id: uuid::Uuid::new_v4(),
                org_id: uuid::Uuid::new_v4(),
                event_type: qualifier_domain::EventType::LeadStageChanged,
                attempt: 1,
                occurred_at_ms: Some(0),
                traceparent: None,
                not_before_ms: None,
                test: false,
                seq: None,
                endpoint_id: None,
            })
            .collect();
        let msgs: Vec<Outgoing<'_>> = metas
            .iter()
            .map(|m| Outgoing {
                exchange: &exchange,
                routing_key: "lead.stage_changed",
                body: &body,
                headers: m.headers(),
                message_id: Some(m.delivery_id.to_string()),
                content_type: "application/json",
            })
            .collect();
        publisher.publish_all(&msgs).await?;
        sent += k;
    }
    let publish_rate = n as f64 / started.elapsed().as_secs_f64();

    let ch = conn.create_channel().await?;
    ch.basic_qos(prefetch, BasicQosOptions::default()).await?;
    let mut consumer = ch
        .basic_consume(
            t.work_queue().as_str().into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let started = Instant::now();
    let mut got = 0u64;
    while got < n {
        let Some(d) = consumer.next().await else {
            anyhow::bail!("consumer closed after {got} messages");
        };
        let d = d?;
        // Acked one by one from their own tasks, as the worker does.
        tokio::spawn(async move {
            let _ = d.acker.ack(BasicAckOptions::default()).await;
        });
        got += 1;
    }
    let consume_rate = n as f64 / started.elapsed().as_secs_f64();
    let _ = conn.close(200, "bench done".into()).await;
    drop(topo);
    Ok((publish_rate, consume_rate))
}
