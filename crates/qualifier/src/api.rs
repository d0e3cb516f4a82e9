//! The public API as `qualifier` speaks it: an org token, the API's own error messages, and the
//! rate limit's `Retry-After` obeyed rather than fought.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

/// What the API answered when it was not a success: its status and its `{"error": ...}` message.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Seconds from `Retry-After` (429 and 503 carry it).
    pub retry_after: Option<u64>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status)?;
        if self.status == StatusCode::UNAUTHORIZED {
            write!(
                f,
                ": the API refused the token; pass an org token (qlf_org_...) with --token or QUALIFIER_TOKEN"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// Worth asking again later: the limit, a database that is away, or a proxy in between.
    pub fn is_transient(&self) -> bool {
        self.status == StatusCode::TOO_MANY_REQUESTS || self.status.is_server_error()
    }
}

pub struct Api {
    base: url::Url,
    token: String,
    http: reqwest::Client,
}

/// A successful answer: its body, and how much of the token's rate limit is left.
pub struct Answer {
    pub body: Vec<u8>,
    pub remaining: Option<u64>,
}

/// One page of the events feed, each envelope as the bytes the API sent.
#[derive(Deserialize)]
pub struct FeedPage {
    pub events: Vec<Box<RawValue>>,
    pub next_cursor: String,
}

#[derive(Deserialize)]
pub struct LeadPage {
    pub leads: Vec<Box<RawValue>>,
    pub next_cursor: Option<String>,
}

/// The warning printed before a token goes over plain `http://` to another machine, where
/// anyone on the way can read it and act as the org until it is revoked; loopback is the
/// development stack's own (`make run`), and says nothing.
pub fn plain_http_warning(base: &url::Url) -> Option<String> {
    let loopback = match base.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    (base.scheme() == "http" && !loopback).then(|| {
        format!(
            "qualifier: warning: {base} is plain http:// to another machine; the org token will \
             cross the network unencrypted (use https://)"
        )
    })
}

impl Api {
    pub fn new(base: &str, token: Option<String>) -> Result<Api> {
        let base = url::Url::parse(base).with_context(|| {
            format!("--api-url {base:?} is not a URL (e.g. http://127.0.0.1:8080)")
        })?;
        if !matches!(base.scheme(), "http" | "https") {
            bail!("--api-url {base} must be http:// or https://");
        }
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            bail!("no token: pass an org token (qlf_org_...) with --token or QUALIFIER_TOKEN");
        };
        if let Some(warning) = plain_http_warning(&base) {
            eprintln!("{warning}");
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("qualifier-cli/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Api { base, token, http })
    }

    fn url(&self, path: &str) -> url::Url {
        let mut u = self.base.clone();
        let prefix = u.path().trim_end_matches('/').to_owned();
        u.set_path(&format!("{prefix}{path}"));
        u
    }

    /// One request; a non-2xx answer is an [`ApiError`] carrying the API's message.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer> {
        let mut url = self.url(path);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut rb = self.http.request(method, url).bearer_auth(&self.token);
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = rb.send().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot reach the API at {}: {} (is lead-api running? --api-url or QUALIFIER_API_URL)",
                self.base,
                root_cause(&e)
            )
        })?;
        let status = resp.status();
        let header_u64 = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let remaining = header_u64("x-ratelimit-remaining");
        let retry_after = header_u64("retry-after");
        let bytes = resp.bytes().await.context("reading the API's answer")?;
        if status.is_success() {
            return Ok(Answer {
                body: bytes.to_vec(),
                remaining,
            });
        }
        #[derive(Deserialize)]
        struct ErrorBody {
            error: String,
        }
        let message = serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|e| e.error)
            .unwrap_or_else(|_| {
                status
                    .canonical_reason()
                    .unwrap_or("unexpected answer")
                    .to_owned()
            });
        Err(ApiError {
            status,
            message,
            retry_after,
        }
        .into())
    }

    /// One feed page after `after` (the start when `None`).
    pub async fn feed_page(&self, after: Option<&str>, limit: u32) -> Result<(FeedPage, Answer)> {
        let limit = limit.to_string();
        let mut q = vec![("limit", limit.as_str())];
        if let Some(a) = after {
            q.push(("after", a));
        }
        let answer = self
            .call(Method::GET, "/api/v1/events", &q, &[], None)
            .await?;
        let page: FeedPage = serde_json::from_slice(&answer.body)
            .context("the feed's page is not what the API documents")?;
        Ok((page, answer))
    }
}

/// The innermost cause of an error, which is what says why a connection failed.
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// How long to wait before asking again after a transient failure.
pub fn wait_after(err: &anyhow::Error, fallback: Duration) -> Option<Duration> {
    match err.downcast_ref::<ApiError>() {
        Some(api) if api.is_transient() => {
            Some(api.retry_after.map(Duration::from_secs).unwrap_or(fallback))
        }
        Some(_) => None,
        // Not an answer at all: the API is restarting or the network is away.
        None => Some(fallback),
    }
}

#[cfg(test)]
mod tests {
    use super::plain_http_warning;

    fn warns(u: &str) -> bool {
        plain_http_warning(&url::Url::parse(u).unwrap()).is_some()
    }

    #[test]
    fn only_plain_http_to_another_machine_is_warned_of() {
        for quiet in [
            "http://127.0.0.1:8080",
            "http://localhost:8080/api",
            "http://LOCALHOST",
            "http://[::1]:8080",
            "http://127.0.0.2",
            "https://api.example.com",
            "https://10.0.0.5",
        ] {
            assert!(!warns(quiet), "{quiet}");
        }
        for loud in [
            "http://api.example.com",
            "http://10.0.0.5:8080",
            "http://localhost.example.com",
            "http://[2001:db8::1]",
        ] {
            assert!(warns(loud), "{loud}");
        }
    }
}
