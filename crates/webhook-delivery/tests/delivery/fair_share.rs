//! A promise holds whatever unit carries the work (docs/delivery.md, "Fairness between orgs"):
//! an org's cap counts its requests across all of its endpoints, and a delivery's row, not the
//! message that carries it, says when it is due.

use std::time::Duration;

use qualifier_testkit::receiver::{Behaviour, Receiver};
use qualifier_testkit::{free_port, http_client};

use crate::crash::spawn_delivery_with;
use crate::stack::{SecondOrg, Stack};

const WAIT: Duration = Duration::from_secs(30);

/// A new endpoint of the stack's org on `receiver` for `lead.created`: its id.
async fn add_endpoint(s: &Stack, receiver: &Receiver) -> String {
    crate::endpoints::add_endpoint(s, receiver, &["lead.created"], "fair share").await
}

/// A stack of 8 slots, 2 an org, whose attempts may hang for a minute (longer than a test).
async fn two_slots_an_org() -> Stack {
    Stack::start_with(|c| {
        c.org_concurrency = 2;
        c.concurrency = 8;
        c.timeout_ms = 60_000;
    })
    .await
}

/// Requests received by all of `receivers` together.
fn received(receivers: &[&Receiver]) -> usize {
    receivers.iter().map(|r| r.received().len()).sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_org_with_four_hanging_endpoints_holds_its_cap_and_another_org_flows() {
    // A's four endpoints hold every request until the test lets them go.
    let s = two_slots_an_org().await;
    let others = [
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    ];
    for r in &others {
        add_endpoint(&s, r).await;
    }
    let a: Vec<&Receiver> = std::iter::once(&s.receiver).chain(others.iter()).collect();
    for r in &a {
        r.hold();
    }
    let b = SecondOrg::add(&s).await;
    // Six events of A, 24 deliveries: counted per endpoint, A would take 4 x 2 = all 8 slots.
    for i in 0..6 {
        s.inbound(&format!("+4477009031{i:02}")).await;
    }
    // A's first requests are out and held.
    let deadline = std::time::Instant::now() + WAIT;
    while received(&a) < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(received(&a), 2, "A's cap, across its endpoints");
    // B's event, published after all of A's: it finds a slot while A's requests still hang.
    b.inbound(&s, "+447700903200").await;
    let got = b.receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1, "B arrived while A's four endpoints hang");
    assert_eq!(received(&a), 2, "A never held more than its cap");
    for r in &a {
        r.let_go();
    }
    let deadline = std::time::Instant::now() + WAIT;
    while received(&a) < 24 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(received(&a), 24, "every delivery of A arrives once let go");
}

/// A backlog parked in its rows behind a hanging endpoint, each for a turn guessed before any
/// attempt had ended (half the 60 s timeout a turn: 30 s and more), flows as soon as the
/// endpoint answers: each attempt that ends calls the next parked delivery forward, so the
/// backlog does not wait out the guess.
#[tokio::test(flavor = "multi_thread")]
async fn a_backlog_parked_in_its_rows_is_called_forward_as_its_endpoints_slots_free() {
    let s = two_slots_an_org().await;
    s.receiver.hold();
    for i in 0..12 {
        s.inbound(&format!("+4477009035{i:02}")).await;
    }
    assert_eq!(s.receiver.wait_for(2, WAIT).await.len(), 2, "the org's cap");
    // The other ten wait in their rows, due 30 s from now at the soonest.
    let db = s.db.client().await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let parked: i64 = db
            .query_one(
                "SELECT count(*) FROM deliveries
                 WHERE state = 'queued' AND due_at > now() + interval '20 seconds'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if parked == 10 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{parked} of 10 parked in their rows"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let let_go = std::time::Instant::now();
    s.receiver.let_go();
    let got = s.receiver.wait_for(12, Duration::from_secs(20)).await;
    assert_eq!(
        got.len(),
        12,
        "the backlog came in {:?}, not at its parked due times",
        let_go.elapsed()
    );
    let ids: std::collections::HashSet<_> = got
        .iter()
        .map(|r| r.header("x-qualifier-delivery"))
        .collect();
    assert_eq!(ids.len(), 12, "each delivery once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_endpoint_leaves_its_org_a_slot_for_a_sibling() {
    let s = two_slots_an_org().await;
    let sibling = Receiver::start().await;
    add_endpoint(&s, &sibling).await;
    s.receiver.hold();
    for i in 0..4 {
        s.inbound(&format!("+4477009033{i:02}")).await;
    }
    // Each event goes to both; the hanging one holds one of the org's two slots, never both.
    assert_eq!(
        s.receiver.wait_for(1, WAIT).await.len(),
        1,
        "one request hangs"
    );
    let got = sibling.wait_for(4, WAIT).await;
    assert_eq!(
        got.len(),
        4,
        "the sibling gets all four while the other hangs"
    );
    assert_eq!(
        s.receiver.received().len(),
        1,
        "the hanging one holds one slot"
    );
    s.receiver.let_go();
    s.receiver.wait_for(4, WAIT).await;
}

/// The value of a counter with these labels in a Prometheus text page (0 when absent).
fn counter(page: &str, name: &str, label: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bundle_put_back_after_a_crash_never_repeats_an_answered_part() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    let second = Receiver::start().await;
    add_endpoint(&s, &second).await;
    // The event goes to both endpoints in one bundle: the primary asks for two minutes, the second
    // hangs until the worker is killed.
    s.receiver.script(vec![Behaviour::RetryAfter(429, 120)]);
    second.hold();
    let port = free_port();
    let addr = ("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{port}"));
    let mut worker = spawn_delivery_with(&s, std::slice::from_ref(&addr));
    s.inbound("+447700903400").await;
    assert_eq!(s.receiver.wait_for(1, WAIT).await.len(), 1);
    assert_eq!(second.wait_for(1, WAIT).await.len(), 1);
    // The 429 is durable: its row waits for its due time.
    let db = s.db.client().await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let row = db
            .query_one(
                "SELECT count(*) FROM deliveries WHERE attempts = 1 AND due_at > now()",
                &[],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the 429 never settled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.kill9();
    second.let_go();
    second.set_behaviour(Behaviour::Ok);

    // The bundle comes back to a new worker: its unanswered part is sent again, its answered
    // part is found not due in its row and left there.
    let _worker = spawn_delivery_with(&s, &[addr]);
    let metrics = format!("http://127.0.0.1:{port}/metrics");
    let http = http_client();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Ok(r) = http.get(&metrics).send().await {
            let page = r.text().await.unwrap_or_default();
            if counter(&page, "qualifier_delivery_parked_total", "not_due") >= 1.0 {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the answered part was never looked at; primary got {}",
            s.receiver.received().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        second.wait_for(2, WAIT).await.len() >= 2,
        "the hanging part"
    );
    assert_eq!(
        s.receiver.received().len(),
        1,
        "nothing sent to the primary before its Retry-After"
    );
}

/// An address that takes connections and never says a word (a broker or an AWS endpoint that
/// hangs): the connections it has taken so far.
struct Silent {
    port: u16,
    taken: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Silent {
    async fn start() -> Silent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = taken.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(socket);
            }
        });
        Silent { port, taken, task }
    }

    fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// An `amqp` destination on it.
    fn amqp(&self) -> serde_json::Value {
        serde_json::json!({"type": "amqp", "url": format!("amqp://guest:guest@127.0.0.1:{}/", self.port),
                           "exchange": "leads", "routing_key": "crm"})
    }

    /// An `sqs` destination whose AWS endpoint is it.
    fn sqs(&self) -> serde_json::Value {
        let at = format!("https://127.0.0.1:{}", self.port);
        serde_json::json!({"type": "sqs", "queue_url": format!("{at}/123456789012/leads"),
                           "region": "us-east-1", "endpoint_url": at,
                           "credentials": {"access_key_id": "AKIDFAIR", "secret_access_key": "fair"}})
    }
}

/// A new endpoint of the stack's org sending `lead.created` to `destination`.
async fn add_destination(s: &Stack, destination: serde_json::Value) {
    let body = serde_json::json!({"destination": destination, "event_types": ["lead.created"]});
    s.create_endpoint(body).await;
}

/// Waits until `held()` reaches `n` (or the wait ends): its last value.
async fn wait_until(held: impl Fn() -> usize, n: usize) -> usize {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let now = held();
        if now >= n || std::time::Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_org_whose_destinations_hang_holds_its_cap_and_another_org_flows() {
    // A's endpoints: its webhook, held, and an AMQP exchange and an SQS queue whose addresses
    // never answer; each attempt waits a minute.
    let s = two_slots_an_org().await;
    let (broker, queue) = (Silent::start().await, Silent::start().await);
    add_destination(&s, broker.amqp()).await;
    add_destination(&s, queue.sqs()).await;
    s.receiver.hold();
    let b = SecondOrg::add(&s).await;
    for i in 0..6 {
        s.inbound(&format!("+4477009035{i:02}")).await;
    }
    let held_by_a = || broker.taken() + queue.taken() + s.receiver.received().len();
    assert_eq!(wait_until(held_by_a, 2).await, 2, "A's cap reached");
    // B's event, made after all of A's: it finds a slot while A's destinations hang.
    b.inbound(&s, "+447700903600").await;
    assert_eq!(
        b.receiver.wait_for(1, WAIT).await.len(),
        1,
        "B arrived while A's destinations hang"
    );
    assert_eq!(
        held_by_a(),
        2,
        "A never held more than its cap, whatever its endpoints' types"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_destination_leaves_its_org_a_slot_for_a_webhook_beside_it() {
    let s = two_slots_an_org().await;
    let broker = Silent::start().await;
    add_destination(&s, broker.amqp()).await;
    for i in 0..4 {
        s.inbound(&format!("+4477009037{i:02}")).await;
    }
    // Each event goes to both: the exchange's connection hangs in its handshake, and every
    // other delivery to it waits behind that one (one link per endpoint), never both slots.
    assert_eq!(
        wait_until(|| broker.taken(), 1).await,
        1,
        "the handshake hangs"
    );
    assert_eq!(
        s.receiver.wait_for(4, WAIT).await.len(),
        4,
        "the webhook gets all four while the exchange hangs"
    );
    assert_eq!(
        broker.taken(),
        1,
        "one connection at a time to the exchange"
    );
}

/// What comes back to the work queue (parks expiring, waits coming due) can come thousands at
/// once when a slow org's parks expire together; a new delivery of another org does not wait
/// behind them: it travels on the bundles' queue, which the worker reads beside the work queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_delivery_does_not_wait_behind_thousands_coming_back() {
    use qualifier_bus::{DeliveryMeta, Outgoing, Publisher};
    let mut s = Stack::start().await;
    // A's one delivery, sent and ended.
    s.inbound("+447700903400").await;
    let done = s.wait_all_in(&s.org, Some(1), "succeeded", WAIT).await;
    let d = &done[0];
    s.stop_delivery().await;
    // A thousand copies of it come back to the work queue while no worker runs: the worker
    // takes them a prefetch window at a time.
    const BACK: u32 = 1_000;
    let uuid = |v: &serde_json::Value| v.as_str().unwrap().parse::<uuid::Uuid>().unwrap();
    // Named by its delivery id alone (no `seq`), as a message of an earlier release names it.
    let meta = DeliveryMeta {
        seq: None,
        endpoint_id: Some(uuid(&d["endpoint_id"])),
        delivery_id: uuid(&d["id"]),
        event_id: uuid(&d["event_id"]),
        org_id: s.org.parse().unwrap(),
        event_type: qualifier_domain::EventType::LeadCreated,
        attempt: 1,
        test: false,
        traceparent: None,
        occurred_at_ms: None,
        not_before_ms: None,
    };
    let topology = s.topo.topology();
    let work = topology.work_queue();
    let conn = qualifier_bus::connect(&qualifier_testkit::amqp_url(), "qualifier test")
        .await
        .unwrap();
    let publisher = Publisher::new(&conn).await.unwrap();
    let body = b"{}".to_vec();
    let copies: Vec<Outgoing<'_>> = (0..BACK)
        .map(|_| Outgoing {
            exchange: "",
            routing_key: work.as_str(),
            body: &body,
            headers: meta.headers(),
            message_id: None,
            content_type: "application/json",
        })
        .collect();
    publisher.publish_all(&copies).await.unwrap();
    let _ = conn.close(200, "ok".into()).await;
    // B's new event after them all, then the worker.
    let b = SecondOrg::add(&s).await;
    b.inbound(&s, "+447700903401").await;
    assert_eq!(
        s.queue_depth(&work).await,
        BACK,
        "B's delivery is not among them"
    );
    let worker = spawn_delivery_with(&s, &[]);
    assert_eq!(b.receiver.wait_for(1, WAIT).await.len(), 1);
    let left = s.queue_depth(&work).await;
    assert!(
        left >= BACK / 2,
        "B arrived with {left} of the {BACK} still waiting, not after them"
    );
    // The copies are read and dropped (its row says it ended), never sent again.
    s.wait_queue_depth(&work, 0, WAIT).await;
    assert_eq!(s.receiver.received().len(), 1, "A's delivery was sent once");
    drop(worker);
}
