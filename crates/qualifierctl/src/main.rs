//! `qualifierctl`: the operator CLI. Every command prints JSON on stdout so scripts (and
//! `make run`) can read what it created; errors go to stderr, with their causes, and a non-zero
//! exit.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use qualifier_config::{
    AllowCidrsArgs, AppBaseUrlArgs, BrokerArgs, DatabaseArgs, PayloadStorageArgs, ReplayRateArgs,
    RetryDelaysArgs, SecretKeyArgs,
};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::pace::{
    DeliveryOrdering, MAX_PER_SECOND_MESSAGE, MaxPerSecond, ORDERING_MESSAGE, Pace,
};
use qualifier_domain::{DeliveryStatus, EventType};
use qualifier_egress::EgressPolicy;
use qualifier_store::deliveries::DeliveryFilter;
use qualifier_store::webhooks::{EndpointRef, EndpointSettings, ReceiverSettings};
use qualifier_store::{SecretKey, Store};
use serde_json::json;
use strum::VariantArray;
use uuid::Uuid;

/// Qualifier operator CLI.
#[derive(Parser)]
#[command(name = "qualifierctl", version, about)]
struct Cli {
    /// Every command but gen-secret-key and gen-operator-secret needs DATABASE_URL;
    /// set-webhook and rotate-secret need QUALIFIER_SECRET_KEY.
    #[command(flatten)]
    database: DatabaseArgs,
    #[command(flatten)]
    secret_key: SecretKeyArgs,
    #[command(flatten)]
    app_base_url: AppBaseUrlArgs,
    /// The form of the outbox rows this command writes (replays, erasure, test events) and
    /// that compact-attempt-logs rewrites into: set it as for the services.
    #[command(flatten)]
    payload_storage: PayloadStorageArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apply pending database migrations.
    Migrate,
    /// Create an org.
    CreateOrg {
        #[arg(long)]
        name: String,
    },
    /// Create an API token (the secret is shown once).
    CreateToken {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        name: Option<String>,
    },
    /// Create or update the org's primary endpoint, its webhook, or with --endpoint another one
    /// (QUALIFIER_WEBHOOK_ALLOW_CIDRS applies).
    SetWebhook {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
        #[command(flatten)]
        settings: EndpointSettingsArgs,
    },
    /// The org's endpoints (docs/api.md, "Endpoints"): list, create, update, delete.
    Endpoints {
        #[command(subcommand)]
        action: EndpointsCommand,
    },
    /// Give the org's endpoint a client certificate (mutual TLS), replacing any other; every
    /// request to it presents the certificate from then on. The key is sealed and never shown.
    SetClientCertificate {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
        /// PEM file: the certificate, its chain after it.
        #[arg(long, required_unless_present = "remove")]
        certificate: Option<std::path::PathBuf>,
        /// PEM file: the certificate's private key (PKCS#8, PKCS#1 or SEC1).
        #[arg(long, required_unless_present = "remove")]
        private_key: Option<std::path::PathBuf>,
        /// Remove the client certificate instead: requests present none from then on.
        #[arg(long, conflicts_with_all = ["certificate", "private_key"])]
        remove: bool,
    },
    /// Replace the org's signing secret; the previous one also signs (Standard Webhooks
    /// header) for the grace window.
    RotateSecret {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
        #[arg(long, default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(0..=604_800))]
        grace_seconds: u64,
    },
    /// List the org's dead deliveries (newest first).
    DeadLetters {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=500))]
        limit: i64,
    },
    /// Give a finished delivery (or, with --all-dead, every dead one) 5 fresh attempts, each
    /// under its own delivery id, paced at QUALIFIER_REPLAY_RATE_PER_SECOND per org.
    Replay {
        #[arg(long)]
        org: Uuid,
        /// With --all-dead: that endpoint's dead deliveries (default: the primary's).
        #[command(flatten)]
        endpoint: EndpointArg,
        #[arg(
            long,
            required_unless_present = "all_dead",
            conflicts_with = "all_dead"
        )]
        delivery: Option<Uuid>,
        /// Every dead delivery of the org (narrowed by --since and --until).
        #[arg(long)]
        all_dead: bool,
        /// Only deliveries of events created at or after this RFC 3339 time.
        #[arg(long, requires = "all_dead", value_parser = parse_time)]
        since: Option<time::OffsetDateTime>,
        /// Only deliveries of events created before this RFC 3339 time.
        #[arg(long, requires = "all_dead", value_parser = parse_time)]
        until: Option<time::OffsetDateTime>,
        /// Count what would be replayed; send nothing.
        #[arg(long, requires = "all_dead")]
        dry_run: bool,
        #[command(flatten)]
        rate: ReplayRateArgs,
    },
    /// Erase a contact: the lead, its handoffs and every stored snapshot of it (docs/api.md,
    /// "Erasing a lead"); `lead.erased` is sent to the org's webhook.
    EraseLead {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        lead: Uuid,
    },
    /// Rewrite stored attempt logs into the compact form (each attempt keeps its signatures,
    /// not every header again; with QUALIFIER_PAYLOAD_STORAGE=compressed, short keys too):
    /// batched, one short transaction each, printing its progress; safe to stop and to run
    /// again (docs/operations.md, "Moving a deployment with history to the compact layout").
    CompactAttemptLogs {
        /// Rows per batch (each batch locks its rows for a moment).
        #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(i64).range(1..=100_000))]
        batch: i64,
        /// Resume after this outbox sequence (the last `through_seq` a run printed).
        #[arg(long, default_value_t = 0)]
        from_seq: i64,
    },
    /// Create an org and a token in one go.
    BootstrapDev {
        #[arg(long, default_value = "Dev Org")]
        name: String,
    },
    /// Print a fresh QUALIFIER_SECRET_KEY.
    GenSecretKey,
    /// Print a fresh QUALIFIER_OPERATOR_WEBHOOK_SECRET (Standard Webhooks `whsec_...`): give it
    /// to webhook-delivery and to the operator service that receives endpoint.* events.
    GenOperatorSecret,
    /// Show an org endpoint's health (docs/delivery.md, "Endpoint health"): state, since when,
    /// last error, next probe.
    Health {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
    },
    /// Probe a failing endpoint now (the console's "Check now"): a webhook-delivery replica
    /// sends the probe within a second or so.
    Probe {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        endpoint: EndpointArg,
    },
    /// Delete a throwaway environment's exchanges and queues (messages are lost). Retry queue
    /// names carry their wait, so the environment's QUALIFIER_RETRY_DELAYS_MS applies.
    DeleteTopology {
        #[arg(long)]
        prefix: String,
        #[command(flatten)]
        broker: BrokerArgs,
        #[command(flatten)]
        retry_delays: RetryDelaysArgs,
    },
}

/// `--endpoint ID`: the command acts on that endpoint of the org; the org's primary (its
/// webhook, the oldest endpoint) when omitted.
#[derive(clap::Args, Clone, Copy)]
struct EndpointArg {
    /// The endpoint's id (`qualifierctl endpoints list`); the org's primary when omitted.
    #[arg(long = "endpoint")]
    id: Option<Uuid>,
}

impl EndpointArg {
    fn of(&self, org: Uuid) -> EndpointRef {
        EndpointRef {
            org_id: org,
            id: self.id,
        }
    }
}

/// An endpoint's settings, as `set-webhook` and `endpoints create|update` take them.
#[derive(clap::Args)]
struct EndpointSettingsArgs {
    /// Where an `https` endpoint's requests go; omitted with another `--destination`.
    #[arg(long, required_unless_present = "destination")]
    url: Option<String>,
    /// Comma-separated event types; all of them when omitted.
    #[arg(long, value_delimiter = ',')]
    events: Vec<EventType>,
    #[arg(long)]
    disabled: bool,
    /// A throttle: the endpoint receives at most this many requests in any second (1 to
    /// 1000), deliveries, replays, test events and probes together, across every
    /// webhook-delivery replica; those waiting spend no attempt. No throttle when omitted.
    #[arg(long, value_parser = parse_max_per_second)]
    max_per_second: Option<MaxPerSecond>,
    /// `none` (the default: each delivery as soon as it can go) or `per_lead` (one lead's
    /// deliveries one at a time, in event order; leads never wait for each other; replays
    /// and test events outside the order).
    #[arg(long, default_value = "none", value_parser = parse_ordering)]
    ordering: DeliveryOrdering,
    /// A note for the org's administrators (at most 255 characters); the saved one when
    /// omitted.
    #[arg(long)]
    description: Option<String>,
    /// The receiver's own headers, as the API takes them: a JSON list of
    /// `{"name", "value", "secret"}` (`[]` removes them); the saved ones when omitted.
    #[arg(long)]
    headers: Option<String>,
    /// The receiver's credentials, as the API takes them: a JSON object
    /// (`{"type": "bearer", "token": "…"}`, `basic`, `oauth2_client_credentials`) or `null`;
    /// the saved ones when omitted.
    #[arg(long)]
    auth: Option<String>,
    /// The events the endpoint wants among those it subscribes to, as the API takes it: a
    /// JSON filter (`{"data.lead.channel": "whatsapp"}`) or `null`; the saved one when omitted.
    #[arg(long)]
    filter: Option<String>,
    /// Where the endpoint sends, as the API takes it (docs/destinations.md): a JSON object,
    /// `{"type": "amqp", "url": "amqps://user:password@host/vhost", "exchange": "…",
    /// "routing_key": "…"}`; `https` (to `--url`) when omitted.
    #[arg(long)]
    destination: Option<String>,
    #[command(flatten)]
    allow_cidrs: AllowCidrsArgs,
}

impl EndpointSettingsArgs {
    /// The settings, the url checked against the egress policy now (as the API checks it).
    async fn checked(&self) -> anyhow::Result<EndpointSettings> {
        let policy = EgressPolicy::new(self.allow_cidrs.cidrs()?);
        let destination = self.destination(&policy).await?;
        let url = match (&self.url, &destination.destination) {
            (Some(raw), None) => {
                let url = WebhookUrl::parse(raw)?;
                policy.resolve(&url).await?;
                url.as_str().to_owned()
            }
            (None, Some(_)) => String::new(),
            (Some(_), Some(_)) => anyhow::bail!("--url: not with a --destination other than https"),
            (None, None) => anyhow::bail!("--url: required for an https endpoint"),
        };
        if let Some(d) = &self.description
            && (d.chars().count() > 255 || d.chars().any(char::is_control))
        {
            anyhow::bail!("--description: at most 255 characters, no control characters");
        }
        let mut receiver = self.receiver(&policy).await?;
        receiver.destination = Some(destination);
        Ok(EndpointSettings {
            url,
            event_types: if self.events.is_empty() {
                EventType::VARIANTS.to_vec()
            } else {
                self.events.clone()
            },
            enabled: !self.disabled,
            pace: Pace {
                max_per_second: self.max_per_second,
                ordering: self.ordering,
            },
            description: self.description.clone(),
            receiver,
        })
    }

    /// `--destination`, checked by the API's rules (a broker's host as the endpoint's url).
    async fn destination(
        &self,
        policy: &EgressPolicy,
    ) -> anyhow::Result<qualifier_domain::destination::DestinationInput> {
        use qualifier_domain::destination::DestinationInput;
        let Some(raw) = &self.destination else {
            return Ok(DestinationInput {
                destination: None,
                secret: None,
            });
        };
        let v: serde_json::Value = serde_json::from_str(raw)
            .map_err(|e| anyhow::anyhow!("--destination: not JSON: {e}"))?;
        let d = DestinationInput::parse(&v).map_err(|e| anyhow::anyhow!("--destination: {e}"))?;
        if let Some(to) = &d.destination {
            policy
                .check_destination(to)
                .await
                .map_err(|e| anyhow::anyhow!("--destination: {e}"))?;
        }
        Ok(d)
    }

    /// `--headers` and `--auth`, checked by the API's rules (an OAuth 2 token url as the
    /// endpoint's url).
    async fn receiver(&self, policy: &EgressPolicy) -> anyhow::Result<ReceiverSettings> {
        use qualifier_domain::receiver::{AuthKind, auth_of, headers_of};
        let json = |flag: &str, raw: &str| {
            serde_json::from_str::<serde_json::Value>(raw)
                .map_err(|e| anyhow::anyhow!("--{flag}: not JSON: {e}"))
        };
        let headers = match &self.headers {
            Some(raw) => Some(
                headers_of(&json("headers", raw)?)
                    .map_err(|e| anyhow::anyhow!("--headers: {e}"))?,
            ),
            None => None,
        };
        let auth = match &self.auth {
            Some(raw) => {
                Some(auth_of(&json("auth", raw)?).map_err(|e| anyhow::anyhow!("--auth: {e}"))?)
            }
            None => None,
        };
        if let Some(Some(a)) = &auth
            && let AuthKind::OAuth2(c) = &a.kind
        {
            policy.resolve(&WebhookUrl::parse(&c.token_url)?).await?;
        }
        let filter = match &self.filter {
            Some(raw) => {
                let v = json("filter", raw)?;
                if !v.is_null() {
                    qualifier_domain::filter::Filter::parse(&v)
                        .map_err(|e| anyhow::anyhow!("--filter: {e}"))?;
                }
                Some((!v.is_null()).then_some(v))
            }
            None => None,
        };
        Ok(ReceiverSettings {
            headers,
            auth,
            filter,
            destination: None,
        })
    }
}

#[derive(Subcommand)]
enum EndpointsCommand {
    /// The org's endpoints, oldest (the primary) first, with their health.
    List {
        #[arg(long)]
        org: Uuid,
    },
    /// One more endpoint (its signing secret is shown once).
    Create {
        #[arg(long)]
        org: Uuid,
        #[command(flatten)]
        settings: EndpointSettingsArgs,
    },
    /// Replace an endpoint's settings; its secret stays.
    Update {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        endpoint: Uuid,
        #[command(flatten)]
        settings: EndpointSettingsArgs,
    },
    /// Delete an endpoint: its pending deliveries end `skipped` (`Endpoint deleted`).
    Delete {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        endpoint: Uuid,
    },
}

/// `--max-per-second`: the API's rule and message.
fn parse_max_per_second(s: &str) -> Result<MaxPerSecond, String> {
    s.parse::<u64>()
        .ok()
        .and_then(MaxPerSecond::new)
        .ok_or_else(|| MAX_PER_SECOND_MESSAGE.to_owned())
}

/// `--ordering`: the API's names and message.
fn parse_ordering(s: &str) -> Result<DeliveryOrdering, String> {
    s.parse().map_err(|_| ORDERING_MESSAGE.to_owned())
}

fn parse_time(s: &str) -> Result<time::OffsetDateTime, String> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("not an RFC 3339 time such as 2026-11-22T14:00:00Z: {e}"))
}

impl Cli {
    fn database(&self) -> Result<qualifier_store::Database> {
        let url = self
            .database
            .database_url
            .as_deref()
            .context("DATABASE_URL is required")?;
        qualifier_store::Database::from_url(url, "qualifierctl")
            .map_err(|p| anyhow::anyhow!("DATABASE_URL {p}"))
    }

    async fn store(&self) -> Result<Store> {
        let database = self.database()?;
        // Commands that never touch webhook secrets work without the key; a throwaway one is used.
        let key = match &self.secret_key.secret_key {
            Some(k) => SecretKey::from_base64(k).context("QUALIFIER_SECRET_KEY")?,
            None => SecretKey::from_base64(&SecretKey::generate_base64())?,
        };
        let pool = qualifier_store::connect(&database, 2)?;
        Ok(Store::new(pool, key)
            .with_app_base_url(&self.app_base_url.app_base_url)
            .with_payload_storage(self.payload_storage.compact()?)
            .await)
    }

    fn require_secret_key(&self) -> Result<()> {
        self.secret_key
            .secret_key
            .as_ref()
            .map(|_| ())
            .context("QUALIFIER_SECRET_KEY is required for this command")
    }
}

async fn run(cli: Cli) -> Result<serde_json::Value> {
    Ok(match &cli.command {
        Command::Migrate => {
            let applied = qualifier_store::run_migrations(&cli.database()?).await?;
            // With the key, secrets sealed before they were bound to their org are re-sealed
            // now (lead-api also does it at start).
            let resealed = match cli.secret_key.secret_key {
                Some(_) => {
                    cli.store()
                        .await?
                        .endpoints()
                        .reseal_legacy_secrets()
                        .await?
                }
                None => 0,
            };
            json!({ "applied": applied, "resealed_secrets": resealed })
        }
        Command::CreateOrg { name } => {
            let org = cli.store().await?.create_org(name).await?;
            json!({ "org": org })
        }
        Command::CreateToken { org, name } => {
            let (token, secret) = cli.store().await?.create_token(*org, name.clone()).await?;
            json!({ "token": token, "secret": secret })
        }
        Command::BootstrapDev { name } => {
            let s = cli.store().await?;
            let org = s.create_org(name).await?;
            let (token, secret) = s.create_token(org.id, Some("dev".into())).await?;
            json!({ "org": org, "token": token, "secret": secret })
        }
        Command::SetWebhook {
            org,
            endpoint,
            settings,
        } => {
            cli.require_secret_key()?;
            let settings = settings.checked().await?;
            let store = cli.store().await?;
            let (webhook, secret) = match endpoint.id {
                Some(_) => (
                    store
                        .endpoints()
                        .update_endpoint(endpoint.of(*org), settings)
                        .await?,
                    None,
                ),
                None => store.endpoints().put_webhook(*org, settings).await?,
            };
            let standard = secret.as_deref().map(qualifier_signing::standard::secret);
            json!({ "webhook": webhook, "signing_secret": secret, "standard_webhooks_secret": standard })
        }
        Command::Endpoints { action } => match action {
            EndpointsCommand::List { org } => {
                json!({ "endpoints": cli.store().await?.endpoints().list_endpoints(*org).await? })
            }
            EndpointsCommand::Create { org, settings } => {
                cli.require_secret_key()?;
                let settings = settings.checked().await?;
                let (endpoint, secret) = cli
                    .store()
                    .await?
                    .endpoints()
                    .create_endpoint(*org, settings)
                    .await?;
                json!({ "endpoint": endpoint,
                        "standard_webhooks_secret": qualifier_signing::standard::secret(&secret),
                        "signing_secret": secret })
            }
            EndpointsCommand::Update {
                org,
                endpoint,
                settings,
            } => {
                let settings = settings.checked().await?;
                let at = EndpointRef::id(*org, *endpoint);
                json!({ "endpoint": cli.store().await?.endpoints().update_endpoint(at, settings).await? })
            }
            EndpointsCommand::Delete { org, endpoint } => {
                cli.store()
                    .await?
                    .endpoints()
                    .delete_endpoint(EndpointRef::id(*org, *endpoint))
                    .await?;
                json!({ "deleted": endpoint })
            }
        },
        Command::SetClientCertificate {
            org,
            endpoint,
            certificate,
            private_key,
            remove,
        } => {
            let store = cli.store().await?;
            let webhook = match (certificate, private_key) {
                (Some(c), Some(k)) if !*remove => {
                    cli.require_secret_key()?;
                    let read = |p: &std::path::Path| {
                        std::fs::read_to_string(p)
                            .map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))
                    };
                    let (cert, key) = (read(c)?, read(k)?);
                    let checked = qualifier_egress::client_cert::check(
                        &cert,
                        &key,
                        time::OffsetDateTime::now_utc(),
                    )?;
                    store
                        .endpoints()
                        .set_client_certificate(
                            endpoint.of(*org),
                            &checked.certificate_pem,
                            &key,
                            &checked.info,
                        )
                        .await?
                }
                _ => {
                    store
                        .endpoints()
                        .remove_client_certificate(endpoint.of(*org))
                        .await?
                }
            };
            json!({ "client_certificate": webhook.client_certificate })
        }
        Command::RotateSecret {
            org,
            endpoint,
            grace_seconds,
        } => {
            cli.require_secret_key()?;
            let grace = std::time::Duration::from_secs(*grace_seconds);
            let (secret, expires) = cli
                .store()
                .await?
                .endpoints()
                .rotate_webhook_secret(endpoint.of(*org), grace)
                .await?;
            json!({
                "signing_secret": secret,
                "standard_webhooks_secret": qualifier_signing::standard::secret(&secret),
                "previous_secret_expires_at": expires.map(qualifier_domain::timefmt::format),
            })
        }
        Command::DeadLetters {
            org,
            endpoint,
            limit,
        } => {
            let only_dead = DeliveryFilter {
                endpoint_id: endpoint.id,
                statuses: vec![DeliveryStatus::Dead],
                ..Default::default()
            };
            let (dead, _) = cli
                .store()
                .await?
                .deliveries()
                .list_deliveries(*org, &only_dead, None, *limit)
                .await?;
            json!({ "deliveries": dead })
        }
        Command::Replay {
            org,
            delivery: Some(delivery),
            rate,
            ..
        } => {
            cli.store()
                .await?
                .deliveries()
                .replay_delivery(*org, *delivery, rate.rate()?)
                .await?;
            json!({ "delivery": delivery, "status": "pending" })
        }
        Command::Replay {
            org,
            endpoint,
            delivery: None,
            since,
            until,
            dry_run,
            rate,
            ..
        } => {
            let f = DeliveryFilter {
                endpoint_id: endpoint.id,
                statuses: vec![DeliveryStatus::Dead],
                since: *since,
                until: *until,
                ..Default::default()
            };
            let count = cli
                .store()
                .await?
                .deliveries()
                .replay_matching(*org, &f, *dry_run, rate.rate()?)
                .await?;
            let mut answer = qualifier_store::deliveries::replay_answer(count, *dry_run);
            answer["dry_run"] = json!(dry_run);
            answer
        }
        Command::EraseLead { org, lead } => {
            let erased = cli.store().await?.leads().erase_lead(*org, *lead).await?;
            json!({ "lead": lead, "erased": true, "events": erased.events,
                    "idempotency_answers": erased.idempotency_answers })
        }
        Command::CompactAttemptLogs { batch, from_seq } => {
            let store = cli.store().await?;
            let started = std::time::Instant::now();
            let (mut after, mut read, mut rewritten) = (*from_seq, 0usize, 0usize);
            loop {
                let b = store
                    .deliveries()
                    .compact_attempt_logs(after, *batch)
                    .await?;
                let Some(through) = b.through_seq else { break };
                after = through;
                read += b.rows_read;
                rewritten += b.rows_rewritten;
                // Progress on stderr, one line per batch: the sequence to resume after.
                eprintln!(
                    "compact-attempt-logs: through_seq {through}: {read} rows read, {rewritten} rewritten, {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
            json!({ "through_seq": after, "rows_read": read, "rows_rewritten": rewritten,
                    "seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0 })
        }
        Command::GenSecretKey => json!({ "secret_key": SecretKey::generate_base64() }),
        Command::GenOperatorSecret => {
            // 32 random bytes, in the form every Standard Webhooks library takes.
            let key = SecretKey::generate_base64();
            json!({ "operator_webhook_secret": format!("whsec_{key}") })
        }
        Command::Health { org, endpoint } => {
            json!({ "health": cli.store().await?.endpoints().endpoint_health(endpoint.of(*org)).await? })
        }
        Command::Probe { org, endpoint } => {
            let due = cli
                .store()
                .await?
                .endpoints()
                .probe_now(endpoint.of(*org))
                .await?;
            json!({ "probe_requested": due, "note": if due { "a probe is due now" } else { "the endpoint is not failing" } })
        }
        Command::DeleteTopology {
            prefix,
            broker,
            retry_delays,
        } => {
            // For throwaway environments (CI stacks, previews): removes every exchange and
            // queue of one prefix, messages included.
            let delays = retry_delays.delays()?;
            let topo = qualifier_bus::Topology::new(prefix.clone(), delays);
            let (urls, ca_file) = broker.amqp()?;
            let brokers = qualifier_bus::Brokers::parse(&urls, ca_file)?;
            let conn = brokers
                .connect("qualifierctl", &mut qualifier_bus::Rotation::default())
                .await
                .context("connecting to AMQP_URL")?;
            let ch = conn.create_channel().await?;
            topo.delete(&ch).await?;
            let _ = conn.close(200, "done".into()).await;
            json!({ "deleted_prefix": prefix })
        }
    })
}

#[tokio::main]
async fn main() {
    // Warnings on stderr, so an operator sees what a long command is waiting for (a migration
    // giving way to the services' locks); stdout keeps the command's JSON answer alone.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(v) => println!("{v}"),
        Err(e) => {
            // `{:#}` prints the whole chain: "what we were doing: why it failed: ...".
            eprintln!("qualifierctl: {e:#}");
            std::process::exit(1);
        }
    }
}
