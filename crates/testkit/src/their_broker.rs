//! A receiver's own RabbitMQ, for the tests of `amqp` destinations: on the test broker, an
//! exchange and a queue bound to it, named after the test's topology prefix, and a user of its
//! own with a password (`rabbitmqctl`), all removed on drop.

use std::collections::HashMap;
use std::time::Duration;

use qualifier_bus::lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
    QueueDeclareOptions, QueueDeleteOptions,
};
use qualifier_bus::lapin::types::{AMQPValue, FieldTable};
use qualifier_bus::lapin::{Channel, Connection, ExchangeKind};

use crate::{amqp_url, block_on_own_runtime};

/// One message a destination published, as the receiver's consumer sees it.
#[derive(Debug, Clone)]
pub struct Taken {
    pub message_id: String,
    pub kind: String,
    pub content_type: String,
    pub persistent: bool,
    pub body: Vec<u8>,
    /// Its headers, names lowercased, every value as text.
    pub headers: HashMap<String, String>,
}

impl Taken {
    pub fn header(&self, name: &str) -> &str {
        crate::receiver::header_in(&self.headers, name)
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// The receiver's exchange (`direct`), its queue bound with [`Self::routing_key`], and its user.
pub struct TheirBroker {
    pub exchange: String,
    pub queue: String,
    pub routing_key: String,
    pub user: String,
    pub password: String,
}

async fn channel() -> (Connection, Channel) {
    let conn = qualifier_bus::connect(&amqp_url(), "qualifier test")
        .await
        .expect("the test broker");
    let ch = conn.create_channel().await.expect("a channel");
    (conn, ch)
}

/// How many messages wait in `queue` on the test broker (a passive declare: it must exist).
pub async fn queue_depth(queue: &str) -> u32 {
    let (conn, ch) = channel().await;
    let q = ch
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    let _ = conn.close(200, "ok".into()).await;
    q.message_count()
}

fn rabbitmqctl(args: &[&str]) {
    crate::output_of(
        std::process::Command::new("rabbitmqctl").args(args),
        &format!("rabbitmqctl {args:?}"),
    );
}

impl TheirBroker {
    /// Names under `prefix` and a user with a password; nothing declared yet
    /// ([`Self::declare`]): a destination whose exchange is missing refuses every message.
    pub fn named(prefix: &str) -> TheirBroker {
        let b = TheirBroker {
            exchange: format!("{prefix}.theirs"),
            queue: format!("{prefix}.theirs.inbox"),
            routing_key: "leads".into(),
            user: format!("{prefix}_crm"),
            password: format!("pw-{}", uuid::Uuid::new_v4().simple()),
        };
        rabbitmqctl(&["add_user", &b.user, &b.password]);
        rabbitmqctl(&["set_permissions", "-p", "/", &b.user, ".*", ".*", ".*"]);
        b
    }

    /// [`Self::named`], declared.
    pub async fn new(prefix: &str) -> TheirBroker {
        let b = Self::named(prefix);
        b.declare().await;
        b
    }

    /// Declares the exchange and the queue, and binds them.
    pub async fn declare(&self) {
        let (conn, ch) = channel().await;
        ch.exchange_declare(
            self.exchange.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        ch.queue_declare(
            self.queue.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        ch.queue_bind(
            self.queue.as_str().into(),
            self.exchange.as_str().into(),
            self.routing_key.as_str().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        let _ = conn.close(200, "ok".into()).await;
    }

    /// The broker's url with the user and its password.
    pub fn url(&self) -> String {
        let mut u = url::Url::parse(&amqp_url()).expect("the test broker's url");
        u.set_username(&self.user).unwrap();
        u.set_password(Some(&self.password)).unwrap();
        u.to_string()
    }

    /// How many messages wait in the queue.
    pub async fn depth(&self) -> u32 {
        queue_depth(&self.queue).await
    }

    /// Every message waiting in the queue, taken off it in order.
    pub async fn take_all(&self) -> Vec<Taken> {
        let (conn, ch) = channel().await;
        let mut out = Vec::new();
        while let Ok(Some(m)) = ch
            .basic_get(self.queue.as_str().into(), BasicGetOptions { no_ack: true })
            .await
        {
            let p = &m.delivery.properties;
            let text = |v: &Option<qualifier_bus::lapin::types::ShortString>| {
                v.as_ref().map(|s| s.to_string()).unwrap_or_default()
            };
            let headers = p
                .headers()
                .as_ref()
                .map(|t| {
                    t.inner()
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                AMQPValue::LongString(s) => s.to_string(),
                                other => format!("{other:?}"),
                            };
                            (k.to_string().to_ascii_lowercase(), v)
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(Taken {
                message_id: text(p.message_id()),
                kind: text(p.kind()),
                content_type: text(p.content_type()),
                persistent: *p.delivery_mode() == Some(2),
                body: m.delivery.data.clone(),
                headers,
            });
        }
        let _ = conn.close(200, "ok".into()).await;
        out
    }

    /// Takes messages until there are `n` (or `within` has passed): what was taken.
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Taken> {
        let deadline = tokio::time::Instant::now() + within;
        let mut got = Vec::new();
        loop {
            got.extend(self.take_all().await);
            if got.len() >= n || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for TheirBroker {
    fn drop(&mut self) {
        let (exchange, queue) = (self.exchange.clone(), self.queue.clone());
        block_on_own_runtime(async move {
            let (conn, ch) = channel().await;
            let _ = ch
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
            let _ = ch
                .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
                .await;
            let _ = conn.close(200, "test done".into()).await;
        });
        let _ = std::process::Command::new("rabbitmqctl")
            .args(["delete_user", &self.user])
            .output();
    }
}
