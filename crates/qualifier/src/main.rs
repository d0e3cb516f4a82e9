//! `qualifier`: the integrator's command line. It speaks only the public API (`/api/v1`) with
//! an org token; `qualifierctl` is the operator's, with the database. `listen` forwards the
//! org's events, signed as deliveries are, to a receiver on a laptop (src/listen.rs).

mod api;
mod listen;

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use qualifier_domain::EventType;
use reqwest::Method;
use serde_json::{Value, json};

use api::Api;

/// Where `make run` serves the public API.
const DEFAULT_API_URL: &str = "http://127.0.0.1:8080";

/// The integrator's command line: the public API with an org token.
#[derive(Parser)]
#[command(name = "qualifier", version, about)]
struct Cli {
    /// The public API's base URL.
    #[arg(
        long,
        env = "QUALIFIER_API_URL",
        default_value = DEFAULT_API_URL,
        global = true
    )]
    api_url: String,
    /// An org token (`qlf_org_...`).
    #[arg(long, env = "QUALIFIER_TOKEN", hide_env_values = true, global = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Follow the events feed and POST each event to a local URL, signed as a delivery is.
    Listen {
        /// Where to POST each event, e.g. http://127.0.0.1:4242/webhook.
        #[arg(long, value_parser = listen::parse_forward_to)]
        forward_to: url::Url,
        /// Comma-separated event types to forward; all of them when omitted.
        #[arg(long, value_delimiter = ',')]
        types: Vec<EventType>,
        /// The signing secret (`qlf_whsec_...` or `whsec_...`); one is made and printed when
        /// omitted.
        #[arg(long, env = "QUALIFIER_LISTEN_SECRET", hide_env_values = true)]
        secret: Option<String>,
        /// A cursor `listen` or `events` printed: forwarding resumes after it. Omitted: from now.
        #[arg(long)]
        after: Option<String>,
    },
    /// Print the events feed as JSON lines, one envelope each, up to its end; the cursor to
    /// resume from goes to stderr.
    Events {
        #[arg(long)]
        after: Option<String>,
        /// Comma-separated event types; all of them when omitted.
        #[arg(long, value_delimiter = ',')]
        types: Vec<EventType>,
    },
    /// Read and change leads.
    Leads {
        #[command(subcommand)]
        command: LeadsCommand,
    },
}

#[derive(Subcommand)]
enum LeadsCommand {
    /// Print one lead.
    Get { id: String },
    /// Print the org's leads as JSON lines, following the cursors to the end.
    List {
        /// Inclusive lower bound on `updated_at` (RFC 3339).
        #[arg(long)]
        updated_since: Option<String>,
    },
    /// Change a lead; prints the lead as it is after the change.
    Patch {
        id: String,
        /// Only `closed` can be set.
        #[arg(long)]
        status: Option<String>,
        /// `{"system": ..., "id": ..., "url": ...}`.
        #[arg(long)]
        external_ref: Option<String>,
        #[arg(long)]
        ai_paused: Option<bool>,
        /// Change only if the lead is at this revision (`7`, or `"7"`): 412 otherwise.
        #[arg(long)]
        if_match: Option<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    // reqwest is built without a default TLS provider; HTTPS to the API and to a local
    // receiver uses ring's, as the services do.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(e) = rt.block_on(run(cli)) {
        eprintln!("qualifier: {e:#}");
        std::process::exit(1);
    }
}

/// Whether `value` is what the environment variable `name` holds (so it came from there, or
/// the same is there anyway).
fn from_env(name: &str, value: Option<&str>) -> bool {
    value.is_some() && std::env::var(name).ok().as_deref() == value
}

async fn run(cli: Cli) -> Result<()> {
    let resume = listen::Resume {
        program: std::env::args()
            .next()
            .unwrap_or_else(|| "qualifier".into()),
        api_url: (!from_env("QUALIFIER_API_URL", Some(&cli.api_url))
            && cli.api_url != DEFAULT_API_URL)
            .then(|| cli.api_url.clone()),
        token: cli
            .token
            .clone()
            .filter(|t| !from_env("QUALIFIER_TOKEN", Some(t))),
        secret_from_env: false,
    };
    let api = Api::new(&cli.api_url, cli.token)?;
    match cli.command {
        Command::Listen {
            forward_to,
            types,
            secret,
            after,
        } => {
            listen::run(
                &api,
                listen::Listen {
                    forward_to,
                    types: types.iter().map(|t| t.as_str().to_owned()).collect(),
                    resume: listen::Resume {
                        secret_from_env: from_env("QUALIFIER_LISTEN_SECRET", secret.as_deref()),
                        ..resume
                    },
                    secret,
                    after,
                },
            )
            .await
        }
        Command::Events { after, types } => events(&api, after, types).await,
        Command::Leads { command } => leads(&api, command).await,
    }
}

/// Pages the feed to its end: each envelope on a line of its own, as the API sent it.
async fn events(api: &Api, after: Option<String>, types: Vec<EventType>) -> Result<()> {
    let types: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    let mut cursor = after;
    let mut out = std::io::stdout().lock();
    loop {
        let (page, _) = api.feed_page(cursor.as_deref(), 500).await?;
        for e in &page.events {
            #[derive(serde::Deserialize)]
            struct Typed<'a> {
                #[serde(rename = "type", borrow)]
                event_type: std::borrow::Cow<'a, str>,
            }
            let keep = types.is_empty()
                || serde_json::from_str::<Typed>(e.get())
                    .is_ok_and(|t| types.contains(&t.event_type.as_ref()));
            if keep {
                writeln!(out, "{}", e.get())?;
            }
        }
        let empty = page.events.is_empty();
        cursor = Some(page.next_cursor);
        if empty {
            break;
        }
    }
    out.flush()?;
    eprintln!("next_cursor: {}", cursor.unwrap_or_default());
    Ok(())
}

async fn leads(api: &Api, command: LeadsCommand) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        LeadsCommand::Get { id } => {
            let a = api
                .call(Method::GET, &lead_path(&id), &[], &[], None)
                .await?;
            out.write_all(&a.body)?;
            writeln!(out)?;
        }
        LeadsCommand::List { updated_since } => {
            let mut cursor: Option<String> = None;
            loop {
                let mut q: Vec<(&str, &str)> = vec![("limit", "500")];
                if let Some(ts) = &updated_since {
                    q.push(("updated_since", ts));
                }
                if let Some(c) = &cursor {
                    q.push(("cursor", c));
                }
                let a = api
                    .call(Method::GET, "/api/v1/leads", &q, &[], None)
                    .await?;
                let page: api::LeadPage = serde_json::from_slice(&a.body)?;
                for l in &page.leads {
                    writeln!(out, "{}", l.get())?;
                }
                match page.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
        }
        LeadsCommand::Patch {
            id,
            status,
            external_ref,
            ai_paused,
            if_match,
        } => {
            let mut body = serde_json::Map::new();
            if let Some(s) = status {
                body.insert("status".into(), json!(s));
            }
            if let Some(r) = external_ref {
                let v: Value = serde_json::from_str(&r).map_err(|e| {
                    anyhow::anyhow!("--external-ref must be JSON such as {{\"system\":\"hubspot\",\"id\":\"9001\"}}: {e}")
                })?;
                body.insert("external_ref".into(), v);
            }
            if let Some(p) = ai_paused {
                body.insert("ai_paused".into(), json!(p));
            }
            if body.is_empty() {
                bail!("nothing to change: give --status, --external-ref or --ai-paused");
            }
            let tag = if_match.map(|m| entity_tag(&m));
            let headers: Vec<(&str, &str)> = tag
                .as_deref()
                .map(|t| vec![("If-Match", t)])
                .unwrap_or_default();
            let a = api
                .call(
                    Method::PATCH,
                    &lead_path(&id),
                    &[],
                    &headers,
                    Some(&Value::Object(body)),
                )
                .await?;
            out.write_all(&a.body)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The lead's path, its id escaped as one path segment (an id with `/` or `?` in it reaches the
/// API as an id, which answers `Lead not found`, never as another route).
fn lead_path(id: &str) -> String {
    let mut u = url::Url::parse("http://x/api/v1/leads/").expect("a constant URL");
    u.path_segments_mut()
        .expect("a base")
        .pop_if_empty()
        .push(id);
    u.path().to_owned()
}

/// `--if-match 7` means the revision 7: the entity tag `"7"`. A value already quoted, a weak
/// tag or `*` is sent as given, so the API judges it (docs/api.md, "Revisions").
fn entity_tag(given: &str) -> String {
    let g = given.trim();
    if g.bytes().all(|b| b.is_ascii_digit()) && !g.is_empty() {
        format!("\"{g}\"")
    } else {
        g.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_revision_becomes_its_entity_tag() {
        assert_eq!(entity_tag("7"), "\"7\"");
        assert_eq!(entity_tag("\"7\""), "\"7\"");
        assert_eq!(entity_tag("*"), "*");
        assert_eq!(entity_tag("W/\"7\""), "W/\"7\"");
    }

    #[test]
    fn a_lead_id_stays_one_path_segment() {
        assert_eq!(lead_path("abc"), "/api/v1/leads/abc");
        assert_eq!(lead_path("../orgs?x=1"), "/api/v1/leads/..%2Forgs%3Fx=1");
    }
}
