use lead_api::{ApiConfig, RunningApi};
use qualifier_store::SecretKey;
use qualifier_testkit::{TestDb, TestTopology};
use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

pub const INTERNAL_TOKEN: &str = "test-internal-token-0123456789";

pub struct TestApp {
    pub db: TestDb,
    pub topo: TestTopology,
    pub api: Option<RunningApi>,
    pub public: String,
    pub internal: String,
    pub http: Client,
}

pub use qualifier_testkit::http_client as client;

/// Waits until `n` sessions of the database `c` is connected to are waiting for a lock: the
/// barrier a concurrency test reads from PostgreSQL itself, so that the interleaving it forces
/// (a lock the test holds, work queued behind it in a known order) is there before it lets
/// go, whatever the machine's speed. The polling only looks; it decides nothing.
pub async fn until_waiting_on_locks(c: &tokio_postgres::Client, n: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let waiting: i64 = qualifier_testkit::sql::one(
            c,
            "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            &[],
        )
        .await;
        if waiting >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{waiting} of {n} sessions came to wait for a lock"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Waits until a session of the database waits for a lock while running `like`.
pub async fn waits_for_a_lock(c: &tokio_postgres::Client, like: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let n: i64 = qualifier_testkit::sql::one(
            c,
            "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND query LIKE $1",
            &[&like],
        )
        .await;
        if n > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no session waits in {like}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

pub fn config(db: &TestDb, topo: &TestTopology) -> ApiConfig {
    ApiConfig::local(
        db.database(),
        qualifier_testkit::brokers(),
        SecretKey::from_base64(&SecretKey::generate_base64()).unwrap(),
        topo.prefix.clone(),
        topo.retry_delays_ms.clone(),
        INTERNAL_TOKEN.into(),
    )
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    pub async fn spawn_with(tweak: impl FnOnce(&mut ApiConfig)) -> TestApp {
        Self::spawn_on(TestDb::new().await, tweak).await
    }

    pub async fn spawn_on(db: TestDb, tweak: impl FnOnce(&mut ApiConfig)) -> TestApp {
        qualifier_testkit::init_test_logging();
        let topo = TestTopology::new(vec![50, 50, 50, 50]);
        let mut cfg = config(&db, &topo);
        tweak(&mut cfg);
        let api = lead_api::start(cfg).await.expect("start lead-api");
        TestApp {
            public: format!("http://{}", api.public_addr),
            internal: format!("http://{}", api.internal_addr),
            api: Some(api),
            db,
            topo,
            http: client(),
        }
    }

    /// A store on the app's database with a pool of its own, for what the API does not expose
    /// (retention, the relay's next-replay query, a bucket's level). Its secret key is not the
    /// app's: nothing it opens is a webhook secret.
    pub fn store(&self) -> qualifier_store::Store {
        store_on(&self.db)
    }

    /// The Prometheus page of the internal listener (no token needed).
    pub async fn metrics(&self) -> String {
        qualifier_testkit::text_200(self.http.get(format!("{}/metrics", self.internal))).await
    }

    pub async fn internal(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let url = format!("{}{path}", self.internal);
        qualifier_testkit::authorized(&self.http, method, url, INTERNAL_TOKEN, body)
            .send()
            .await
            .unwrap()
    }

    /// [`Self::internal`], answered `status` (else the test fails, showing what came back).
    pub async fn internal_expect(
        &self,
        status: u16,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Response {
        let what = format!("{method} {path}");
        expect_status(status, &what, self.internal(method, path, body).await).await
    }

    /// [`Self::internal_expect`]'s answer as JSON.
    pub async fn internal_json(
        &self,
        status: u16,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let r = self.internal_expect(status, method, path, body).await;
        r.json::<Value>().await.unwrap()
    }

    /// [`Self::public_expect`]'s answer as JSON.
    pub async fn public_json(
        &self,
        status: u16,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Value {
        let r = self.public_expect(status, method, path, token, body).await;
        r.json::<Value>().await.unwrap()
    }

    /// [`Self::internal`]'s answer as the contract's error: its status and message.
    pub async fn internal_error(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, String) {
        error_of(self.internal(method, path, body).await).await
    }

    /// [`Self::public`]'s answer as the contract's error: its status and message.
    pub async fn public_error(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, String) {
        error_of(self.public(method, path, token, body).await).await
    }

    /// [`Self::public`], answered `status` (else the test fails, showing what came back).
    pub async fn public_expect(
        &self,
        status: u16,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Response {
        let what = format!("{method} {path}");
        expect_status(status, &what, self.public(method, path, token, body).await).await
    }

    pub async fn public(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Response {
        let url = format!("{}{path}", self.public);
        qualifier_testkit::authorized(&self.http, method, url, token, body)
            .send()
            .await
            .unwrap()
    }

    /// `GET` of `lead` (an answer's `lead` object) through the public API, as `token` sees it.
    pub async fn get_lead(&self, token: &str, lead: &Value) -> Response {
        let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());
        self.public(Method::GET, &path, token, None).await
    }

    /// A new org and a token for it: (org_id, token).
    pub async fn org(&self) -> (String, String) {
        let org_id = self
            .internal_json(
                201,
                Method::POST,
                "/internal/v1/orgs",
                Some(json!({"name": "Acme"})),
            )
            .await["org"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let token = self.new_token(&org_id, "crm").await["secret"]
            .as_str()
            .unwrap()
            .to_owned();
        (org_id, token)
    }

    /// `POST …/tokens` for `org` named `name` (201): the answer, with `token` and `secret`.
    pub async fn new_token(&self, org: &str, name: &str) -> Value {
        let path = format!("/internal/v1/orgs/{org}/tokens");
        let body = Some(json!({ "name": name }));
        self.internal_json(201, Method::POST, &path, body).await
    }

    /// A new org, its token and a lead of it that arrived through an inbound channel.
    pub async fn org_with_lead(&self, phone: &str) -> (String, String, Value) {
        let (org, token) = self.org().await;
        let lead = self.inbound_lead(&org, phone).await;
        (org, token, lead)
    }

    /// A lead that arrived through an inbound channel (emits lead.created).
    pub async fn inbound_lead(&self, org_id: &str, phone: &str) -> Value {
        let r = self.internal_expect(201, Method::POST,
                &format!("/internal/v1/orgs/{org_id}/inbound"),
                Some(json!({"name": "Ada Lovelace", "phone": phone, "email": "ada@example.com", "channel": "whatsapp",
                            "profile": {"budget": "500k", "bedrooms": 2}}))).await;
        r.json::<Value>().await.unwrap()["lead"].clone()
    }

    /// Waits until `n` sessions of this test's database are waiting for a lock
    /// ([`until_waiting_on_locks`]).
    pub async fn until_waiting_on_locks(&self, n: i64) {
        until_waiting_on_locks(&self.db.client().await, n).await;
    }

    /// Points the org's webhook at a loopback endpoint for `lead.created` (an app started with
    /// loopback allowed, `crate::console::app`); the answer's status must be 200.
    pub async fn loopback_webhook(&self, org: &str) {
        self.internal_expect(
            200,
            Method::PUT,
            &format!("/internal/v1/orgs/{org}/webhook"),
            Some(json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"]})),
        )
        .await;
    }

    /// An open handoff on the lead (emits handoff.created): its id.
    pub async fn open_handoff(&self, org_id: &str, lead_id: &str) -> String {
        let r = self
            .internal_expect(
                201,
                Method::POST,
                &format!("/internal/v1/orgs/{org_id}/leads/{lead_id}/handoffs"),
                None,
            )
            .await;
        r.json::<Value>().await.unwrap()["handoff"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// `GET /api/v1/leads/{id}` sent with its own `X-Request-Id`: the answer and that id.
    pub async fn get_lead_traced(&self, token: &str, lead_id: &str) -> (Response, String) {
        let rid = format!("traced-{}", uuid::Uuid::new_v4());
        let r = self
            .http
            .get(format!("{}/api/v1/leads/{lead_id}", self.public))
            .bearer_auth(token)
            .header("x-request-id", &rid)
            .send()
            .await
            .unwrap();
        (r, rid)
    }

    /// Outbox rows in commit order: (event_type, parsed envelope, raw bytes).
    pub async fn outbox(&self) -> Vec<(String, Value, Vec<u8>)> {
        let c = self.db.client().await;
        c.query("SELECT event_type, payload FROM outbox ORDER BY seq", &[])
            .await
            .unwrap()
            .into_iter()
            .map(|r| {
                let bytes: Vec<u8> = r.get(1);
                (
                    r.get::<_, String>(0),
                    serde_json::from_slice(&bytes).unwrap(),
                    bytes,
                )
            })
            .collect()
    }

    pub async fn outbox_types(&self) -> Vec<String> {
        self.outbox().await.into_iter().map(|(t, _, _)| t).collect()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Stop the servers before the database is dropped; forced, the test is over.
        if let Some(api) = self.api.take() {
            let handle = tokio::runtime::Handle::current();
            let _ = std::thread::spawn(move || handle.block_on(api.stop(false))).join();
        }
    }
}

/// The JSON log line of the failed request `rid` (the 5xx line `lead-api` writes).
pub fn failure_log_line(rid: &str) -> Value {
    let logs = qualifier_testkit::telemetry::captured_logs();
    let line = logs
        .lines()
        .find(|l| l.contains(rid) && l.contains("request failed"))
        .unwrap_or_else(|| panic!("no 500 log line for {rid}"));
    serde_json::from_str(line).unwrap()
}

pub async fn error_of(r: Response) -> (u16, String) {
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v.as_object().unwrap().len(),
        1,
        "error body has one key: {v}"
    );
    (status, v["error"].as_str().unwrap().to_owned())
}

/// `n` random base62 characters: the alphabet of tokens, tickets and session ids, for forging
/// them as an attacker would.
pub fn base62(n: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..n)
        .map(|_| {
            let c = rng.random_range(0..62u8);
            (match c {
                0..=9 => b'0' + c,
                10..=35 => b'a' + c - 10,
                _ => b'A' + c - 36,
            }) as char
        })
        .collect()
}

/// A store on `db` with a pool of its own and a throwaway secret key (see [`TestApp::store`]).
pub fn store_on(db: &TestDb) -> qualifier_store::Store {
    store_over(qualifier_store::connect(&db.database(), 1).unwrap())
}

/// A store over `pool`, with a secret key of its own.
pub fn store_over(pool: qualifier_store::DbPool) -> qualifier_store::Store {
    let key =
        qualifier_store::SecretKey::from_base64(&qualifier_store::SecretKey::generate_base64())
            .unwrap();
    qualifier_store::Store::new(pool, key)
}

/// Rows of the outbox's partitions PostgreSQL has read so far, through indexes or scans, as the
/// statistics collector has them (a backend reports its counters when it goes idle).
pub async fn outbox_rows_read(c: &tokio_postgres::Client) -> i64 {
    rows_read(c, "outbox").await
}

/// [`outbox_rows_read`] for the partitions of `table` (`outbox` or `deliveries`).
pub async fn rows_read(c: &tokio_postgres::Client, table: &str) -> i64 {
    let like = format!("{table}\\_%");
    qualifier_testkit::sql::one(
        c,
        "SELECT (SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
                 WHERE relname LIKE $1)::int8
              + (SELECT coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables
                 WHERE relname LIKE $1)::int8",
        &[&like],
    )
    .await
}

/// Autovacuum off on every partition the outbox has now, so that no ANALYZE lands during a test
/// that depends on the statistics (or the plans) being those of an earlier moment.
pub async fn outbox_autovacuum_off(c: &tokio_postgres::Client) {
    c.batch_execute(
        "DO $$ DECLARE p regclass; BEGIN
           FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'outbox'::regclass
           LOOP EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p); END LOOP;
         END $$",
    )
    .await
    .unwrap();
}

/// `r` when it has `status`; otherwise the test fails with what came back instead.
async fn expect_status(status: u16, what: &str, r: Response) -> Response {
    if r.status().as_u16() != status {
        let got = r.status();
        let body = r.text().await.unwrap_or_default();
        panic!("{what}: expected {status}, got {got}: {body}");
    }
    r
}

/// Folds until no change is left to fold. The app's own fold runs every second, and a fold
/// that finds it under way does nothing (`pg_try_advisory_xact_lock`): if that one began before
/// the test's last write, the write is left for the next fold, which this waits for.
pub async fn fold_all(store: &qualifier_store::Store, c: &tokio_postgres::Client) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        store.console().fold_delivery_hours().await.unwrap();
        let left: i64 =
            qualifier_testkit::sql::one(c, "SELECT count(*) FROM delivery_hour_changes", &[]).await;
        if left == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} changes never folded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Two endpoints of `org` subscribed to `lead.created`, rows as the endpoints' routes write
/// them (a secret no request opens), the first of them the org's primary when it has none.
pub async fn two_endpoints(c: &tokio_postgres::Client, org: &str) {
    c.execute(
        "INSERT INTO webhooks (org_id, url, event_types, enabled, secret_sealed, created_at,
                               updated_at, id)
         SELECT $1::text::uuid, 'https://hooks.example.com/' || n, ARRAY['lead.created'], true,
                '\\x00'::bytea, now() + n * interval '1 millisecond', now(), gen_random_uuid()
         FROM generate_series(1, 2) n",
        &[&org],
    )
    .await
    .unwrap();
}
