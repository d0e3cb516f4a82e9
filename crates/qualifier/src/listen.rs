//! `qualifier listen`: follows the org's events feed and POSTs each event to a local URL as a
//! delivery would be sent: the same body bytes, the same headers (built by
//! `qualifier_domain::delivery::Request`, as the worker builds them), signed by
//! `qualifier-signing`, the crate the worker signs with. What a receiver verifies on a laptop is
//! what it verifies in production.
//!
//! Retries never skip: an event that the local receiver refuses (or that finds it down) is sent
//! again with back-off until it answers 2xx, and the next event waits for it, so the local
//! receiver sees the feed's order. The feed has a cursor per page, not per event: stopped in the
//! middle of a page, `listen` prints the cursor before that page, and the events of it already
//! forwarded come again on resume, under the same `webhook-id` (at least once, as deliveries).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api::{Api, ApiError, wait_after};

pub struct Listen {
    pub forward_to: url::Url,
    /// Event types to forward; every type when empty.
    pub types: Vec<String>,
    pub secret: Option<String>,
    pub after: Option<String>,
    /// What the resume line repeats besides these.
    pub resume: Resume,
}

/// The parts of the command that started `listen` that its resume line repeats, so that the
/// line, pasted in the same shell, carries on where it stopped (docs/decisions.md, "A 2xx is a
/// commit": the resume line).
pub struct Resume {
    /// The program as it was invoked (`target/debug/qualifier`, `qualifier`, …).
    pub program: String,
    /// `--api-url`, when it was given on the command line.
    pub api_url: Option<String>,
    /// `--token`, when it was given on the command line: the shell's history already holds
    /// it. A token read from `QUALIFIER_TOKEN` is not printed; the same shell still has it.
    pub token: Option<String>,
    /// Whether the signing secret came from `QUALIFIER_LISTEN_SECRET` (not repeated, for the
    /// same reason).
    pub secret_from_env: bool,
}

impl Resume {
    /// The command that resumes after `cursor`, each word quoted for a POSIX shell.
    fn line(&self, args: &Listen, secret: &str, cursor: &str) -> String {
        let mut words: Vec<String> = vec![self.program.clone()];
        if let Some(api) = &self.api_url {
            words.extend(["--api-url".into(), api.clone()]);
        }
        if let Some(token) = &self.token {
            words.extend(["--token".into(), token.clone()]);
        }
        words.extend([
            "listen".into(),
            "--forward-to".into(),
            args.forward_to.to_string(),
        ]);
        if !args.types.is_empty() {
            words.extend(["--types".into(), args.types.join(",")]);
        }
        // The receiver verifies with the secret printed at the start: the resumed run signs
        // with the same one.
        if !self.secret_from_env {
            words.extend(["--secret".into(), secret.to_owned()]);
        }
        words.extend(["--after".into(), cursor.to_owned()]);
        words
            .iter()
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `w` as one word of a POSIX shell: as it is when nothing in it is special, else in single
/// quotes.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c));
    if plain {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// How long the local receiver has to answer, as `webhook-delivery`'s default.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Back-off of retries to the local receiver: 1 s, doubling, at most 30 s.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LONGEST_RETRY: Duration = Duration::from_secs(30);
/// How often an empty feed is asked again. Half a second keeps an event within a second of its
/// commit and takes what the token's bucket refills (2 a second, docs/api.md "Rate limit"):
/// when other calls have drawn the bucket low, `listen` asks every 2 s and leaves them room.
const POLL: Duration = Duration::from_millis(500);
const POLL_WHEN_LOW: Duration = Duration::from_secs(2);
const LOW_REMAINING: u64 = 30;
/// Pages taken while skipping to the end (`--after` omitted): the feed's largest.
const SKIP_PAGE: u32 = 500;
const PAGE: u32 = 100;

/// The signing secret in both forms: the `qlf_whsec_...` string that keys
/// `X-Qualifier-Signature`, and the `whsec_...` form the Standard Webhooks libraries take.
pub fn signing_secret(given: Option<&str>) -> Result<String> {
    let Some(given) = given else {
        return Ok(qualifier_signing::new_secret());
    };
    if given.starts_with(qualifier_signing::SECRET_PREFIX) {
        return Ok(given.to_owned());
    }
    // A `whsec_` secret: its key bytes are what both headers are keyed with; ours are the
    // UTF-8 of a `qlf_whsec_` string, so one from `rotate-secret` comes back as that string.
    let key = qualifier_signing::standard::whsec_key(given)
        .context("--secret must be a qlf_whsec_... or a whsec_... secret")?;
    String::from_utf8(key).map_err(|_| {
        anyhow::anyhow!("--secret: this whsec_ secret's key is not text; use a qlf_whsec_... secret or let listen make one")
    })
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    event_type: std::borrow::Cow<'a, str>,
    #[serde(default)]
    data: Option<serde_json::Value>,
}

/// The lead an event is about, for the printed line: `data.lead.id`, `data.lead_id` or the
/// handoff's `lead_id`.
fn lead_of(data: Option<&serde_json::Value>) -> String {
    let Some(d) = data else { return "-".into() };
    [
        d.pointer("/lead/id"),
        d.get("lead_id"),
        d.pointer("/handoff/lead_id"),
    ]
    .into_iter()
    .flatten()
    .find_map(|v| v.as_str())
    .unwrap_or("-")
    .to_owned()
}

pub async fn run(api: &Api, args: Listen) -> Result<()> {
    let secret = signing_secret(args.secret.as_deref())?;
    let local = reqwest::Client::builder()
        .user_agent("Qualifier-Webhooks/1")
        .redirect(reqwest::redirect::Policy::none())
        .timeout(LOCAL_TIMEOUT)
        .no_proxy()
        .build()?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);

    // The first call says whether the token and the API URL are right: a mistake there ends
    // the command with the API's message instead of retrying for ever.
    let mut cursor = match args.after.clone() {
        Some(c) => {
            // Checked now, so a wrong cursor is said at once.
            api.feed_page(Some(&c), 1).await.map_err(expired_hint)?;
            c
        }
        None => skip_to_end(api).await?,
    };
    println!(
        "Signing secret: {secret} (X-Qualifier-Signature)\nStandard Webhooks secret: {} (webhook-signature)",
        qualifier_signing::standard::secret(&secret)
    );
    println!(
        "Forwarding {} events {} to {} (Ctrl-C stops and prints the cursor to resume from)",
        if args.types.is_empty() {
            "all".to_owned()
        } else {
            args.types.join(", ")
        },
        if args.after.is_some() {
            "after the given cursor"
        } else {
            "from now on"
        },
        args.forward_to
    );
    let mut trouble = FIRST_RETRY;
    let mut forwarded_of_page = 0usize;
    // An event it cannot forward ends the run, and the place reached is printed all the same.
    let mut stopped_by: Option<anyhow::Error> = None;
    'feed: loop {
        let page = tokio::select! {
            _ = &mut ctrl_c => break 'feed,
            p = api.feed_page(Some(&cursor), PAGE) => p,
        };
        let (page, answer) = match page {
            Ok(p) => {
                trouble = FIRST_RETRY;
                p
            }
            Err(e) => {
                let Some(wait) = wait_after(&e, trouble) else {
                    // The token revoked or the cursor expired under it: the place reached is
                    // still worth printing.
                    print_resume(&args, &secret, &cursor);
                    return Err(expired_hint(e));
                };
                eprintln!(
                    "{}  feed: {e}; asking again in {} s",
                    now(),
                    wait.as_secs_f32()
                );
                trouble = (trouble * 2).min(LONGEST_RETRY);
                tokio::select! {
                    _ = &mut ctrl_c => break 'feed,
                    _ = tokio::time::sleep(wait) => continue 'feed,
                }
            }
        };
        if page.events.is_empty() {
            let low = answer.remaining.is_some_and(|r| r < LOW_REMAINING);
            tokio::select! {
                _ = &mut ctrl_c => break 'feed,
                _ = tokio::time::sleep(if low { POLL_WHEN_LOW } else { POLL }) => {}
            }
            cursor = page.next_cursor;
            continue;
        }
        for event in &page.events {
            tokio::select! {
                _ = &mut ctrl_c => break 'feed,
                r = forward(&local, &args, &secret, event) => if let Err(e) = r {
                    stopped_by = Some(e);
                    break 'feed;
                },
            }
            forwarded_of_page += 1;
        }
        forwarded_of_page = 0;
        cursor = page.next_cursor;
    }
    if forwarded_of_page > 0 {
        println!(
            "Stopped in the middle of a page: its first {forwarded_of_page} events come again on resume (same webhook-id)."
        );
    }
    print_resume(&args, &secret, &cursor);
    stopped_by.map_or(Ok(()), Err)
}

fn print_resume(args: &Listen, secret: &str, cursor: &str) {
    // On a line of its own: a terminal echoes Ctrl-C as `^C` where the cursor is, and a
    // resume line that shared it was refused by the shell when pasted.
    println!(
        "\nStopped. Resume with: {}",
        args.resume.line(args, secret, cursor)
    );
    if args.resume.token.is_none() {
        println!("  (the token is read from QUALIFIER_TOKEN, as in this run)");
    }
}

/// The cursor after the last event of the feed now, so that `listen` starts from now.
async fn skip_to_end(api: &Api) -> Result<String> {
    let mut cursor: Option<String> = None;
    loop {
        let (page, _) = api.feed_page(cursor.as_deref(), SKIP_PAGE).await?;
        let empty = page.events.is_empty();
        cursor = Some(page.next_cursor);
        if empty {
            return Ok(cursor.unwrap_or_default());
        }
    }
}

fn expired_hint(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<ApiError>() {
        Some(api) if api.status == reqwest::StatusCode::GONE => {
            e.context("the cursor is older than what the API keeps: start again without --after")
        }
        Some(api) if api.status == reqwest::StatusCode::UNPROCESSABLE_ENTITY => {
            e.context("--after takes a cursor `listen` or `events` printed, for this org")
        }
        _ => e,
    }
}

fn now() -> String {
    qualifier_domain::timefmt::format(qualifier_domain::timefmt::now_millis())
}

/// POSTs one event until the local receiver answers 2xx, printing a line per attempt.
async fn forward(
    local: &reqwest::Client,
    args: &Listen,
    secret: &str,
    event: &RawValue,
) -> Result<()> {
    let body = event.get().as_bytes();
    let meta: Meta = serde_json::from_str(event.get()).context("an event without id or type")?;
    if !args.types.is_empty() && !args.types.iter().any(|t| *t == meta.event_type) {
        return Ok(());
    }
    let lead = lead_of(meta.data.as_ref());
    // One local endpoint, one delivery per event: the event's id is the delivery's, the same
    // on every retry and on a resume that repeats it.
    let request = qualifier_domain::delivery::Request {
        event_type: &meta.event_type,
        delivery_id: &meta.id,
        test: false,
        probe: false,
    };
    let mut wait = FIRST_RETRY;
    loop {
        let started_at = qualifier_domain::timefmt::now_millis();
        let clock = std::time::Instant::now();
        let headers = request.headers(
            started_at,
            qualifier_signing::sign(secret, body),
            qualifier_signing::standard::header(
                &[secret],
                &meta.id,
                started_at.unix_timestamp(),
                body,
            ),
        );
        let mut rb = local.post(args.forward_to.clone());
        for (k, v) in &headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let outcome = match rb.body(body.to_vec()).send().await {
            Ok(resp) => {
                let status = resp.status();
                // Read the answer so the connection can be used again.
                let _ = resp.bytes().await;
                Ok(status)
            }
            Err(e) => Err(crate::api::root_cause(&e)),
        };
        let ms = clock.elapsed().as_millis();
        let shown = match &outcome {
            Ok(s) => s.as_u16().to_string(),
            Err(why) => format!("no answer ({why})"),
        };
        println!(
            "{}  {:<20} {}  {}  {} ms",
            qualifier_domain::timefmt::format(started_at),
            meta.event_type,
            lead,
            shown,
            ms
        );
        if matches!(outcome, Ok(s) if s.is_success()) {
            return Ok(());
        }
        println!("    retrying in {} s", wait.as_secs());
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_RETRY);
    }
}

/// Refuses a `--forward-to` that is not an http(s) URL with a host, with a message saying so.
pub fn parse_forward_to(s: &str) -> Result<url::Url> {
    let u = url::Url::parse(s).with_context(|| {
        format!("--forward-to {s:?} is not a URL (e.g. http://127.0.0.1:4242/webhook)")
    })?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        bail!("--forward-to {s:?} must be an http:// or https:// URL with a host");
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whsec_secret_gives_back_the_string_it_was_made_from() {
        let s = qualifier_signing::new_secret();
        assert_eq!(
            signing_secret(Some(&qualifier_signing::standard::secret(&s))).unwrap(),
            s
        );
        assert_eq!(signing_secret(Some(&s)).unwrap(), s);
        assert!(signing_secret(Some("hunter2")).is_err());
        assert!(signing_secret(Some("whsec_!!!")).is_err());
        assert!(signing_secret(None).unwrap().starts_with("qlf_whsec_"));
    }

    #[test]
    fn the_lead_is_found_wherever_the_event_keeps_it() {
        let v = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(lead_of(Some(&v(r#"{"lead":{"id":"a"}}"#))), "a");
        assert_eq!(lead_of(Some(&v(r#"{"lead_id":"b"}"#))), "b");
        assert_eq!(lead_of(Some(&v(r#"{"handoff":{"lead_id":"c"}}"#))), "c");
        assert_eq!(lead_of(Some(&v(r#"{}"#))), "-");
        assert_eq!(lead_of(None), "-");
    }

    #[test]
    fn forward_to_must_be_an_http_url() {
        assert!(parse_forward_to("http://127.0.0.1:4242/hook").is_ok());
        assert!(parse_forward_to("localhost:4242").is_err());
        assert!(parse_forward_to("ftp://x/").is_err());
        assert!(parse_forward_to("not a url").is_err());
    }
}
