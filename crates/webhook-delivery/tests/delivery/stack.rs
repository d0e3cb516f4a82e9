use std::time::Duration;

use lead_api::{ApiConfig, RunningApi};
use qualifier_store::SecretKey;
use qualifier_testkit::receiver::Receiver;
use qualifier_testkit::{TestDb, TestTopology, amqp_url};
use reqwest::{Client, Method, Response};
use serde_json::{Value, json};
use webhook_delivery::{DeliveryConfig, RunningDelivery};

pub const INTERNAL_TOKEN: &str = "test-internal-token-0123456789";

pub struct Stack {
    pub db: TestDb,
    pub topo: TestTopology,
    /// The same key as base64, for services started as separate processes.
    pub key_b64: String,
    pub api: Option<RunningApi>,
    pub delivery: Option<RunningDelivery>,
    pub receiver: Receiver,
    pub http: Client,
    pub internal: String,
    pub public: String,
    pub org: String,
    pub token: String,
    pub secret: String,
}

pub fn api_config(db: &TestDb, topo: &TestTopology, key: &SecretKey) -> ApiConfig {
    ApiConfig {
        rate_limit_per_minute: 100_000,
        // The receiver runs on loopback: allowed for configuration in tests only.
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        ..ApiConfig::local(
            db.database(),
            qualifier_testkit::brokers(),
            key.clone(),
            topo.prefix.clone(),
            topo.retry_delays_ms.clone(),
            INTERNAL_TOKEN.into(),
        )
    }
}

pub fn delivery_config(
    db: &TestDb,
    topo: &TestTopology,
    key: &SecretKey,
    receiver: &Receiver,
) -> DeliveryConfig {
    DeliveryConfig {
        database: db.database(),
        brokers: qualifier_testkit::brokers(),
        secret_key: key.clone(),
        topology_prefix: topo.prefix.clone(),
        addr: "127.0.0.1:0".parse().unwrap(),
        concurrency: 8,
        org_concurrency: 8,
        timeout_ms: 1500,
        retry_delays_ms: topo.retry_delays_ms.clone(),
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        ca_file: Some(receiver.ca_file.clone()),
        egress_proxy: None,
        db_pool_size: 4,
        health: Default::default(),
        operator_webhook: None,
        shutdown_grace: std::time::Duration::from_secs(30),
        compact_storage: Some(false),
    }
}

/// Endpoint health in the tests' time scale: failing after three failures within 200 ms, probed
/// every 200 to 400 ms, disabled after `disable_after`.
pub fn quick_health(disable_after: std::time::Duration) -> webhook_delivery::decide::HealthRules {
    webhook_delivery::decide::HealthRules {
        failing_after: 3,
        failing_span: std::time::Duration::from_millis(200),
        probe_min: std::time::Duration::from_millis(200),
        probe_max: std::time::Duration::from_millis(400),
        disable_after,
    }
}

impl Stack {
    /// A stack with [`quick_health`] (disabled after an hour: never, in a test).
    pub async fn with_quick_health() -> Stack {
        Self::start_with(|c| c.health = quick_health(std::time::Duration::from_secs(3600))).await
    }

    /// Polls the endpoint at `path` (below `/internal/v1`) until its health is `failing`: that
    /// health.
    pub async fn wait_failing(&self, path: &str, within: std::time::Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let h = self.call(Method::GET, path, None).await["endpoint"]["health"].clone();
            if h["state"] == "failing" {
                return h;
            }
            assert!(tokio::time::Instant::now() < deadline, "never failing: {h}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Fails if `secret` is in the test database as `pg_dump --data-only` writes it, as text or
    /// as the hex of its bytes (bytea).
    pub fn absent_from_dump(&self, secret: &str) {
        let d = self.db.data_dump();
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        assert!(
            !d.contains(secret) && !d.contains(&hex),
            "{secret} in clear in pg_dump"
        );
    }

    pub async fn start() -> Stack {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut DeliveryConfig)) -> Stack {
        Self::start_tuned(|_| {}, tweak).await
    }

    /// Both services' configurations adjusted by the test before they start.
    pub async fn start_tuned(
        api_tweak: impl FnOnce(&mut ApiConfig),
        tweak: impl FnOnce(&mut DeliveryConfig),
    ) -> Stack {
        Self::start_with_retry_delays(vec![100, 100, 100, 100], api_tweak, tweak).await
    }

    /// [`Stack::start_tuned`] with these retry delays (ms): long ones keep a retried message
    /// in its retry queue, where the test can read it.
    pub async fn start_with_retry_delays(
        retry_delays_ms: Vec<u64>,
        api_tweak: impl FnOnce(&mut ApiConfig),
        tweak: impl FnOnce(&mut DeliveryConfig),
    ) -> Stack {
        qualifier_testkit::init_test_logging();
        let db = TestDb::new().await;
        let topo = TestTopology::new(retry_delays_ms);
        let key_b64 = SecretKey::generate_base64();
        let key = SecretKey::from_base64(&key_b64).unwrap();
        let receiver = Receiver::start().await;
        let mut acfg = api_config(&db, &topo, &key);
        api_tweak(&mut acfg);
        let api = lead_api::start(acfg).await.unwrap();
        let mut dcfg = delivery_config(&db, &topo, &key, &receiver);
        tweak(&mut dcfg);
        let delivery = webhook_delivery::start(dcfg).await.unwrap();
        let http = qualifier_testkit::http_client();
        let mut s = Stack {
            internal: format!("http://{}", api.internal_addr),
            public: format!("http://{}", api.public_addr),
            api: Some(api),
            delivery: Some(delivery),
            db,
            topo,
            key_b64,
            receiver,
            http,
            org: String::new(),
            token: String::new(),
            secret: String::new(),
        };
        s.org = s.new_org("Acme").await;
        let r = s.org_call(Method::POST, "tokens", None).await;
        s.token = r["secret"].as_str().unwrap().to_owned();
        let url = s.receiver.url.clone();
        let r = s.put_webhook(json!({"url": url, "event_types": ["lead.created", "lead.updated", "lead.stage_changed", "lead.qualified", "handoff.created"], "enabled": true})).await;
        s.secret = r["signing_secret"].as_str().unwrap().to_owned();
        s.receiver.set_secrets(vec![s.secret.clone()]);
        s
    }

    /// A new org named `name`, without tokens or webhook: its id.
    pub async fn new_org(&self, name: &str) -> String {
        let body = json!({ "name": name });
        let r = self
            .call(Method::POST, "/internal/v1/orgs", Some(body))
            .await;
        r["org"]["id"].as_str().unwrap().to_owned()
    }

    /// A path below this stack's org: `rest` after `/internal/v1/orgs/{org}/`.
    fn org_path(&self, rest: &str) -> String {
        format!("/internal/v1/orgs/{}/{rest}", self.org)
    }

    /// [`Stack::call`] on a path below this stack's org ([`Stack::org_path`]).
    pub async fn org_call(&self, method: Method, rest: &str, body: Option<Value>) -> Value {
        self.call(method, &self.org_path(rest), body).await
    }

    /// [`Stack::request`] on a path below this stack's org ([`Stack::org_path`]).
    pub async fn org_request(&self, m: Method, rest: &str, body: Option<Value>) -> Response {
        self.request(m, &self.org_path(rest), body).await
    }

    /// Renames lead `id` of the stack's org (`PATCH …/leads/{id}`): a `lead.updated` event.
    pub async fn rename_lead(&self, id: &str, name: &str) -> Value {
        let body = json!({ "name": name });
        self.org_call(Method::PATCH, &format!("leads/{id}"), Some(body))
            .await
    }

    /// The endpoint `id` of the stack's org as `GET …/endpoints/{id}` shows it.
    pub async fn endpoint(&self, id: &str) -> Value {
        let path = format!("endpoints/{id}");
        self.org_call(Method::GET, &path, None).await["endpoint"].clone()
    }

    /// `POST …/endpoints` with `body`, which must be created (201): the answer.
    pub async fn create_endpoint(&self, body: Value) -> Value {
        let r = self
            .org_request(Method::POST, "endpoints", Some(body))
            .await;
        let status = r.status();
        let answer: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 201, "{answer}");
        answer
    }

    /// A request to the internal API (`path` from `/internal/…`), answered whatever its status.
    pub async fn request(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let url = format!("{}{path}", self.internal);
        qualifier_testkit::authorized(&self.http, method, url, INTERNAL_TOKEN, body)
            .send()
            .await
            .unwrap()
    }

    /// [`Stack::request`], which must succeed: its JSON answer (null for 204).
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let r = self.request(method, path, body).await;
        assert!(r.status().is_success(), "{path}: {}", r.status());
        if r.status() == 204 {
            Value::Null
        } else {
            r.json().await.unwrap()
        }
    }

    /// A fresh console sign-in link for the stack's org.
    pub async fn console_link(&self) -> String {
        self.org_call(Method::POST, "console-sessions", None).await["url"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Signs in to the console: the session cookie to send back.
    pub async fn console_cookie(&self) -> String {
        let no_redirects = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = no_redirects
            .get(self.console_link().await)
            .send()
            .await
            .unwrap();
        r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned()
    }

    /// The org's events feed from its start (`limit` at most), as the response's text.
    pub async fn feed(&self, limit: u32) -> String {
        let url = format!("{}/api/v1/events?limit={limit}", self.public);
        qualifier_testkit::text_200(self.http.get(url).bearer_auth(&self.token)).await
    }

    /// The feed's first page once it holds at least `n` events. An event's feed position is
    /// given in the relay's commit after the broker confirmed its messages, so a receiver can
    /// hold a delivery a moment before the feed shows its event.
    pub async fn feed_holding(&self, limit: u32, n: usize) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let raw = self.feed(limit).await;
            let v: Value = serde_json::from_str(&raw).unwrap();
            if v["events"].as_array().map_or(0, |e| e.len()) >= n
                || std::time::Instant::now() > deadline
            {
                return raw;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `DELETE /api/v1/leads/{id}` (erasure) with the org's token: its status.
    pub async fn erase(&self, id: &str) -> reqwest::StatusCode {
        self.http
            .delete(format!("{}/api/v1/leads/{id}", self.public))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .status()
    }

    /// `GET` of the org's webhook: its settings and its endpoint's health.
    pub async fn webhook(&self) -> Value {
        self.org_call(Method::GET, "webhook", None).await["webhook"].clone()
    }

    pub async fn put_webhook(&self, body: Value) -> Value {
        self.org_call(Method::PUT, "webhook", Some(body)).await
    }

    pub async fn inbound(&self, phone: &str) -> Value {
        let body = json!({"name": "Ada Lovelace", "phone": phone, "channel": "whatsapp"});
        self.org_call(Method::POST, "inbound", Some(body)).await["lead"].clone()
    }

    /// The CRM closes lead `id` through the public API (emits `lead.stage_changed`), optionally
    /// inside the caller's trace; the PATCH must succeed.
    pub async fn close_lead(&self, id: &str, traceparent: Option<&str>) {
        let mut rb = self
            .http
            .patch(format!("{}/api/v1/leads/{id}", self.public))
            .bearer_auth(&self.token);
        if let Some(tp) = traceparent {
            rb = rb.header("traceparent", tp);
        }
        let r = rb.json(&json!({"status": "closed"})).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }

    pub async fn deliveries(&self) -> Vec<Value> {
        self.deliveries_in(&self.org).await
    }

    /// The deliveries of `org` (the stack's own or a second org's), newest first.
    pub async fn deliveries_in(&self, org: &str) -> Vec<Value> {
        let path = format!("/internal/v1/orgs/{org}/deliveries?limit=500");
        let v = self.call(Method::GET, &path, None).await;
        v["deliveries"].as_array().unwrap().clone()
    }

    /// Waits until `org` has `n` deliveries (any number when `None`) and every one has
    /// `status`: them.
    pub async fn wait_all_in(
        &self,
        org: &str,
        n: Option<usize>,
        status: &str,
        within: Duration,
    ) -> Vec<Value> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let ds = self.deliveries_in(org).await;
            if n.is_none_or(|n| ds.len() == n) && ds.iter().all(|d| d["status"] == status) {
                return ds;
            }
            let seen: Vec<_> = ds.iter().map(|d| (&d["status"], &d["attempts"])).collect();
            assert!(
                std::time::Instant::now() < deadline,
                "not all {status}: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One delivery of `org` (the stack's own or a second org's), as the internal API shows it.
    pub async fn delivery_in(&self, org: &str, id: &str) -> Value {
        self.call(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/deliveries/{id}"),
            None,
        )
        .await["delivery"]
            .clone()
    }

    /// Polls the delivery until its status is `want` (or fails after the timeout).
    pub async fn wait_status(&self, id: &str, want: &str, timeout: Duration) -> Value {
        self.wait_status_in(&self.org, id, want, timeout).await
    }

    /// [`Stack::wait_status`] for a delivery of another org on this stack.
    pub async fn wait_status_in(
        &self,
        org: &str,
        id: &str,
        want: &str,
        timeout: Duration,
    ) -> Value {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let d = self.delivery_in(org, id).await;
            if d["status"] == want {
                return d;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "delivery {id} never became {want}: {d}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Messages waiting in a queue of this test's topology.
    /// Waits up to `within` for `queue` to hold `n` messages and returns the last depth read.
    /// The worker writes a delivery's outcome before it publishes the message on (the row is
    /// the record; a crash between the two re-runs the attempt), so a queue may trail the
    /// status the API shows by a moment.
    pub async fn wait_queue_depth(&self, queue: &str, n: u32, within: Duration) -> u32 {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let depth = self.queue_depth(queue).await;
            if depth == n || tokio::time::Instant::now() >= deadline {
                return depth;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn queue_depth(&self, queue: &str) -> u32 {
        qualifier_testkit::their_broker::queue_depth(queue).await
    }

    /// Takes the first message of `queue` off it: its message id and its body.
    pub async fn take_one(&self, queue: &str) -> (String, Vec<u8>) {
        use qualifier_bus::lapin::options::BasicGetOptions;
        let conn = qualifier_bus::connect(&amqp_url(), "qualifier test")
            .await
            .unwrap();
        let ch = conn.create_channel().await.unwrap();
        let m = ch
            .basic_get(queue.into(), BasicGetOptions { no_ack: true })
            .await
            .unwrap()
            .expect("a message waits");
        let id = m
            .delivery
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_default();
        let body = m.delivery.data.clone();
        let _ = conn.close(200, "ok".into()).await;
        (id, body)
    }

    pub async fn stop_api(&mut self) {
        if let Some(a) = self.api.take() {
            a.stop(true).await;
        }
    }

    pub async fn stop_delivery(&mut self) {
        if let Some(d) = self.delivery.take() {
            d.stop().await;
        }
    }
}

/// A second org with a receiver of its own, on the same stack.
pub struct SecondOrg {
    pub org: String,
    pub receiver: Receiver,
}

impl SecondOrg {
    pub async fn add(s: &Stack) -> SecondOrg {
        let receiver = Receiver::start().await;
        let org = s.new_org("Beta").await;
        let r = s
            .call(
                Method::PUT,
                &format!("/internal/v1/orgs/{org}/webhook"),
                Some(
                    json!({"url": receiver.url, "event_types": ["lead.created"], "enabled": true}),
                ),
            )
            .await;
        receiver.set_secrets(vec![r["signing_secret"].as_str().unwrap().to_owned()]);
        SecondOrg { org, receiver }
    }

    pub async fn inbound(&self, s: &Stack, phone: &str) -> Value {
        let body = json!({"name": "Grace Hopper", "phone": phone, "channel": "sms"});
        s.call(
            Method::POST,
            &format!("/internal/v1/orgs/{}/inbound", self.org),
            Some(body),
        )
        .await["lead"]
            .clone()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let api = self.api.take();
        let delivery = self.delivery.take();
        let handle = tokio::runtime::Handle::current();
        let _ = std::thread::spawn(move || {
            handle.block_on(async {
                if let Some(d) = delivery {
                    d.stop().await;
                }
                if let Some(a) = api {
                    a.stop(false).await;
                }
            })
        })
        .join();
    }
}
