//! moto's server mode over HTTPS (scripts/moto-https.py), for the tests of the AWS
//! destinations: SQS, EventBridge and S3 on a port of the test's own, presenting the test
//! receivers' certificate (which the worker under test trusts through its CA file), killed on
//! drop. The test's own calls name the service and region in an unsigned credential scope:
//! moto routes by it and does not check signatures (the worker's are checked against the AWS
//! SDK's in its unit tests).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// The region and account moto answers for.
pub const REGION: &str = "us-east-1";
pub const ACCOUNT: &str = "123456789012";

pub struct Moto {
    /// `https://127.0.0.1:{port}`.
    pub url: String,
    child: std::process::Child,
    files: std::path::PathBuf,
    http: reqwest::Client,
}

/// A message taken off an SQS queue.
#[derive(Debug, Clone)]
pub struct SqsMessage {
    pub body: String,
    /// Its string attributes, by name.
    pub attributes: BTreeMap<String, String>,
    pub group_id: Option<String>,
    pub deduplication_id: Option<String>,
}

/// An object read back from a bucket.
#[derive(Debug, Clone)]
pub struct S3Object {
    pub key: String,
    pub body: Vec<u8>,
    pub content_type: String,
    /// Its `x-amz-meta-*` headers, without the prefix.
    pub metadata: BTreeMap<String, String>,
}

fn scope(service: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=test/20260101/{REGION}/{service}/aws4_request, \
         SignedHeaders=host, Signature=0"
    )
}

/// An access key of a user moto's IAM knows.
#[derive(Debug, Clone)]
pub struct AccessKey {
    pub id: String,
    pub secret: String,
}

/// The text of the first `<tag>` in an XML answer.
fn xml_text(xml: &str, tag: &str) -> String {
    xml.split(&format!("<{tag}>"))
        .nth(1)
        .and_then(|s| s.split(&format!("</{tag}>")).next())
        .unwrap_or_default()
        .to_owned()
}

impl Moto {
    pub async fn start() -> Moto {
        Self::start_with(&[]).await
    }

    /// moto as AWS is: every request's signature checked and every action held to the
    /// caller's IAM policy. It has two buckets, `allowed` and `denied`, and one user whose key
    /// may put objects into `allowed` only: that key. The test's own calls are unsigned, so
    /// this makes them all before moto starts to check (its first five actions are free).
    pub async fn enforcing_iam(allowed: &str, denied: &str) -> (Moto, AccessKey) {
        let m = Self::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "5")]).await;
        let iam = |form: Vec<(&str, String)>| {
            let mut form = form;
            form.push(("Version", "2010-05-08".to_owned()));
            let body = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            m.http
                .post(format!("{}/", m.url))
                .header("authorization", scope("iam"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
        };
        let user = || ("UserName", "qualifier-worker".to_owned());
        let r = iam(vec![("Action", "CreateUser".into()), user()])
            .await
            .unwrap();
        assert!(r.status().is_success(), "create user: {}", r.status());
        let r = iam(vec![("Action", "CreateAccessKey".into()), user()])
            .await
            .unwrap();
        let xml = r.text().await.unwrap();
        let key = AccessKey {
            id: xml_text(&xml, "AccessKeyId"),
            secret: xml_text(&xml, "SecretAccessKey"),
        };
        assert!(!key.secret.is_empty(), "create access key: {xml}");
        let policy = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Action": "s3:PutObject", "Resource": format!("arn:aws:s3:::{allowed}/*")}]});
        let r = iam(vec![
            ("Action", "PutUserPolicy".into()),
            user(),
            ("PolicyName", "put-into-allowed".into()),
            ("PolicyDocument", policy.to_string()),
        ])
        .await
        .unwrap();
        assert!(r.status().is_success(), "put user policy: {}", r.status());
        m.create_bucket(allowed).await;
        m.create_bucket(denied).await;
        (m, key)
    }

    async fn start_with(env: &[(&str, &str)]) -> Moto {
        let (cert, key) = crate::receiver::server_certificate();
        let files =
            std::env::temp_dir().join(format!("qualifier-moto-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(files.join("cert.pem"), cert).unwrap();
        std::fs::write(files.join("key.pem"), key).unwrap();
        let port = crate::free_port();
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/moto-https.py");
        let child = std::process::Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(files.join("cert.pem"))
            .arg(files.join("key.pem"))
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 runs moto (scripts/ensure-test-deps.sh installs moto[server])");
        let http = reqwest::Client::builder()
            .tls_certs_merge(reqwest::Certificate::from_pem_bundle(cert.as_bytes()).unwrap())
            .build()
            .unwrap();
        let m = Moto {
            url: format!("https://127.0.0.1:{port}"),
            child,
            files,
            http,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if m.http
                .get(format!("{}/moto-api/", m.url))
                .send()
                .await
                .is_ok()
            {
                return m;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "moto did not start on {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn call(&self, service: &str, target: &str, version: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}/", self.url))
            .header("authorization", scope(service))
            .header("x-amz-target", target)
            .header("content-type", format!("application/x-amz-json-{version}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{target}: {status} {v}");
        v
    }

    /// A queue's url (a FIFO one when the name ends in `.fifo`).
    pub async fn create_queue(&self, name: &str) -> String {
        let mut body = json!({"QueueName": name});
        if name.ends_with(".fifo") {
            body["Attributes"] = json!({"FifoQueue": "true"});
        }
        self.call("sqs", "AmazonSQS.CreateQueue", "1.0", body).await;
        self.queue_url(name)
    }

    /// The url of queue `name` (which need not exist).
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/{ACCOUNT}/{name}", self.url)
    }

    /// Takes up to ten messages off the queue (deleting them, in one batch), in the order it
    /// gives them. A queue kept short is also what keeps moto quick: it counts the messages a
    /// queue holds on every send.
    pub async fn receive(&self, queue_url: &str) -> Vec<SqsMessage> {
        let v = self
            .call(
                "sqs",
                "AmazonSQS.ReceiveMessage",
                "1.0",
                json!({"QueueUrl": queue_url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 3600,
                       "AttributeNames": ["All"], "MessageAttributeNames": ["All"]}),
            )
            .await;
        let messages = v["Messages"].as_array().cloned().unwrap_or_default();
        if !messages.is_empty() {
            let entries: Vec<Value> = messages
                .iter()
                .enumerate()
                .map(|(i, m)| json!({"Id": i.to_string(), "ReceiptHandle": m["ReceiptHandle"]}))
                .collect();
            self.call(
                "sqs",
                "AmazonSQS.DeleteMessageBatch",
                "1.0",
                json!({"QueueUrl": queue_url, "Entries": entries}),
            )
            .await;
        }
        let text = |v: &Value| v.as_str().map(str::to_owned);
        messages
            .iter()
            .map(|m| SqsMessage {
                body: text(&m["Body"]).unwrap_or_default(),
                attributes: m["MessageAttributes"]
                    .as_object()
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| (k.clone(), text(&v["StringValue"]).unwrap_or_default()))
                            .collect()
                    })
                    .unwrap_or_default(),
                group_id: text(&m["Attributes"]["MessageGroupId"]),
                deduplication_id: text(&m["Attributes"]["MessageDeduplicationId"]),
            })
            .collect()
    }

    /// Takes messages until there are `n` or `within` has passed.
    pub async fn wait_messages(
        &self,
        queue_url: &str,
        n: usize,
        within: Duration,
    ) -> Vec<SqsMessage> {
        let deadline = tokio::time::Instant::now() + within;
        let mut got = Vec::new();
        loop {
            got.extend(self.receive(queue_url).await);
            if got.len() >= n || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An event bus whose every event from `source` goes to a new queue; the queue's url, where
    /// the test reads what the bus received (as EventBridge delivers it: the entry inside an
    /// event with `detail`, `detail-type` and `source`).
    pub async fn create_bus_into_queue(&self, bus: &str, source: &str) -> String {
        let queue = format!("{bus}-seen");
        let url = self.create_queue(&queue).await;
        self.call(
            "events",
            "AWSEvents.CreateEventBus",
            "1.1",
            json!({"Name": bus}),
        )
        .await;
        let pattern = json!({"source": [source]}).to_string();
        self.call(
            "events",
            "AWSEvents.PutRule",
            "1.1",
            json!({"Name": "all", "EventBusName": bus, "EventPattern": pattern}),
        )
        .await;
        self.call(
            "events",
            "AWSEvents.PutTargets",
            "1.1",
            json!({"Rule": "all", "EventBusName": bus,
                   "Targets": [{"Id": "seen", "Arn": format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}")}]}),
        )
        .await;
        url
    }

    /// An S3 request (`path` after the address, path-style), unsigned.
    async fn s3(&self, method: reqwest::Method, path: &str) -> reqwest::Response {
        let url = format!("{}/{path}", self.url);
        let rb = self.http.request(method, url);
        rb.header("authorization", scope("s3"))
            .send()
            .await
            .unwrap()
    }

    pub async fn create_bucket(&self, name: &str) {
        let r = self.s3(reqwest::Method::PUT, name).await;
        assert!(r.status().is_success(), "create bucket: {}", r.status());
    }

    /// Every object in the bucket, read back.
    pub async fn objects(&self, bucket: &str) -> Vec<S3Object> {
        let list = self
            .s3(reqwest::Method::GET, &format!("{bucket}?list-type=2"))
            .await
            .text()
            .await
            .unwrap();
        let keys: Vec<String> = list
            .split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next().map(str::to_owned))
            .collect();
        let mut out = Vec::new();
        for key in keys {
            let r = self
                .s3(reqwest::Method::GET, &format!("{bucket}/{key}"))
                .await;
            let headers = r.headers().clone();
            let metadata = headers
                .iter()
                .filter_map(|(k, v)| {
                    k.as_str()
                        .strip_prefix("x-amz-meta-")
                        .map(|n| (n.to_owned(), v.to_str().unwrap_or("").to_owned()))
                })
                .collect();
            out.push(S3Object {
                key,
                content_type: headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned(),
                body: r.bytes().await.unwrap().to_vec(),
                metadata,
            });
        }
        out
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.files);
    }
}
