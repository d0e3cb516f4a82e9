//! `qualifierctl`: the operator CLI. Every command prints JSON on stdout so scripts (and
//! `make run`) can read what it created; errors go to stderr with a non-zero exit.

use qualifier_config::{EnvError, cidrs, required, with_default};
use qualifier_domain::EventType;
use qualifier_domain::netguard::WebhookUrl;
use qualifier_egress::EgressPolicy;
use qualifier_store::{SecretKey, Store};
use serde_json::json;
use uuid::Uuid;

const HELP: &str = "qualifierctl: Qualifier operator CLI

Commands:
  migrate                                  apply pending database migrations
  create-org --name NAME                   create an org
  create-token --org ID [--name NAME]      create an API token (the secret is shown once)
  set-webhook --org ID --url URL [--events T1,T2] [--disabled]
                                           create or update the org's webhook endpoint
  rotate-secret --org ID                   replace the org's signing secret
  dead-letters --org ID [--limit N]        list the org's dead deliveries (newest first)
  replay --org ID --delivery ID            give a finished delivery 5 fresh attempts (same id)
  bootstrap-dev [--name NAME]              create an org and a token in one go
  gen-secret-key                           print a fresh QUALIFIER_SECRET_KEY
  delete-topology --prefix P               delete a throwaway environment's exchanges and queues
                                           (AMQP_URL, QUALIFIER_RETRY_DELAYS_MS; messages are lost)

Environment: DATABASE_URL (all but gen-secret-key), QUALIFIER_SECRET_KEY (set-webhook,
rotate-secret), QUALIFIER_APP_BASE_URL, QUALIFIER_WEBHOOK_ALLOW_CIDRS.
";

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn need(args: &[String], name: &str) -> Result<String, String> {
    flag(args, name).ok_or_else(|| format!("{name} is required"))
}

fn org_arg(args: &[String]) -> Result<Uuid, String> {
    Uuid::parse_str(&need(args, "--org")?).map_err(|_| "--org must be a UUID".to_owned())
}

fn store() -> Result<Store, String> {
    let url = required("DATABASE_URL").map_err(|e| e.to_string())?;
    // Commands that never touch webhook secrets work without the key; a throwaway one is used.
    let key = match qualifier_config::optional("QUALIFIER_SECRET_KEY") {
        Some(k) => SecretKey::from_base64(&k)
            .map_err(|e| EnvError::new("QUALIFIER_SECRET_KEY", e).to_string())?,
        None => SecretKey::from_base64(&SecretKey::generate_base64())?,
    };
    let pool = qualifier_store::connect(&url, 2)?;
    Ok(Store::new(
        pool,
        with_default("QUALIFIER_APP_BASE_URL", "https://app.qualifier.local"),
        key,
    ))
}

async fn run(args: Vec<String>) -> Result<serde_json::Value, String> {
    let cmd = args.first().map(String::as_str).unwrap_or("--help");
    let rest = &args[1.min(args.len())..];
    match cmd {
        "migrate" => {
            let url = required("DATABASE_URL").map_err(|e| e.to_string())?;
            let applied = qualifier_store::run_migrations(&url).await?;
            Ok(json!({ "applied": applied }))
        }
        "create-org" => {
            let org = store()?
                .create_org(&need(rest, "--name")?)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "org": org }))
        }
        "create-token" => {
            let (token, secret) = store()?
                .create_token(org_arg(rest)?, flag(rest, "--name"))
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "token": token, "secret": secret }))
        }
        "bootstrap-dev" => {
            let s = store()?;
            let org = s
                .create_org(&flag(rest, "--name").unwrap_or_else(|| "Dev Org".into()))
                .await
                .map_err(|e| e.to_string())?;
            let (token, secret) = s
                .create_token(org.id, Some("dev".into()))
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "org": org, "token": token, "secret": secret }))
        }
        "set-webhook" => {
            required("QUALIFIER_SECRET_KEY").map_err(|e| e.to_string())?;
            let url = WebhookUrl::parse(&need(rest, "--url")?).map_err(|e| e.to_string())?;
            let events: Vec<String> = match flag(rest, "--events") {
                Some(list) => list
                    .split(',')
                    .map(|t| {
                        EventType::parse(t.trim())
                            .map(|t| t.as_str().to_owned())
                            .ok_or(format!("unknown event type {t}"))
                    })
                    .collect::<Result<_, _>>()?,
                None => EventType::ALL
                    .iter()
                    .map(|t| t.as_str().to_owned())
                    .collect(),
            };
            let policy = EgressPolicy::new(
                cidrs("QUALIFIER_WEBHOOK_ALLOW_CIDRS").map_err(|e| e.to_string())?,
            );
            policy.resolve(&url).await.map_err(|e| e.to_string())?;
            let enabled = !rest.iter().any(|a| a == "--disabled");
            let (webhook, secret) = store()?
                .put_webhook(org_arg(rest)?, url.as_str().to_owned(), events, enabled)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "webhook": webhook, "signing_secret": secret }))
        }
        "rotate-secret" => {
            required("QUALIFIER_SECRET_KEY").map_err(|e| e.to_string())?;
            let secret = store()?
                .rotate_webhook_secret(org_arg(rest)?)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "signing_secret": secret }))
        }
        "dead-letters" => {
            let limit = flag(rest, "--limit").map_or(Ok(100), |l| {
                l.parse::<i64>()
                    .map_err(|_| "--limit must be a number".to_owned())
            })?;
            let dead = store()?
                .list_deliveries(
                    org_arg(rest)?,
                    Some(qualifier_store::deliveries::status::DEAD),
                    limit.clamp(1, 500),
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "deliveries": dead }))
        }
        "replay" => {
            let id = Uuid::parse_str(&need(rest, "--delivery")?)
                .map_err(|_| "--delivery must be a UUID".to_owned())?;
            store()?
                .replay_delivery(org_arg(rest)?, id)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "delivery": id, "status": "pending" }))
        }
        "gen-secret-key" => Ok(json!({ "secret_key": SecretKey::generate_base64() })),
        "delete-topology" => {
            // For throwaway environments (CI stacks, previews): removes every exchange and
            // queue of one prefix, messages included.
            let prefix = need(rest, "--prefix")?;
            let amqp = required("AMQP_URL").map_err(|e| e.to_string())?;
            // Retry queue names carry their wait, so the same QUALIFIER_RETRY_DELAYS_MS applies.
            let delays = qualifier_config::retry_delays().map_err(|e| e.to_string())?;
            let topo = qualifier_bus::Topology::new(prefix.clone(), delays);
            let conn = qualifier_bus::connect(&amqp)
                .await
                .map_err(|e| e.to_string())?;
            let ch = conn.create_channel().await.map_err(|e| e.to_string())?;
            topo.delete(&ch).await.map_err(|e| e.to_string())?;
            let _ = conn.close(200, "done".into()).await;
            Ok(json!({ "deleted_prefix": prefix }))
        }
        _ => Err(HELP.to_owned()),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return;
    }
    match run(args).await {
        Ok(v) => println!("{v}"),
        Err(e) => {
            eprintln!("qualifierctl: {e}");
            std::process::exit(1);
        }
    }
}
