//! OAuth 2 client credentials (RFC 6749 section 4.4) for endpoints whose receiver wants a
//! bearer token: the token request's form and its answer read ([`token_request`],
//! [`read_answer`]), and the tokens each worker keeps ([`Tokens`]).
//!
//! Written over reqwest and serde rather than with the `oauth2` crate: the grant is one form
//! POST and one JSON answer, and the request must leave through the endpoint's own transport
//! (the address rules, the egress proxy, its client certificate) and within the attempt's
//! deadline, which the sender already provides; the crate would bring its own HTTP plumbing
//! to be adapted for the same result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qualifier_domain::delivery::{FailureKind, NoAnswer};
use qualifier_domain::receiver::{ClientAuth, OAuthClient, basic};
use uuid::Uuid;

/// A token is used until this long before the `expires_in` its server gave.
pub(crate) const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// The lifetime of a token whose answer says none (RFC 6749 makes `expires_in` optional).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// At most this much of a token server's answer is read.
pub(crate) const ANSWER_LIMIT: usize = 16 * 1024;

/// The token request: its headers and its form body. The client's credentials go in the
/// form, or as basic authentication with each part form-encoded first (RFC 6749 section
/// 2.3.1).
pub(crate) fn token_request(c: &OAuthClient, secret: &str) -> (Vec<(String, String)>, String) {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "client_credentials");
    if let Some(scope) = &c.scope {
        form.append_pair("scope", scope);
    }
    if let Some(audience) = &c.audience {
        form.append_pair("audience", audience);
    }
    let mut headers = vec![
        (
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("Accept".to_owned(), "application/json".to_owned()),
    ];
    match c.client_auth {
        ClientAuth::Body => {
            form.append_pair("client_id", &c.client_id);
            form.append_pair("client_secret", secret);
        }
        ClientAuth::Basic => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            headers.push((
                "Authorization".to_owned(),
                basic(&enc(&c.client_id), &enc(secret)),
            ));
        }
    }
    (headers, form.finish())
}

/// A token server's answer read: the token and how long to keep it, or the attempt's error,
/// which names the request, the status and the server's `error` code (never the token, never
/// the rest of the answer).
pub(crate) fn read_answer(code: u16, body: &[u8]) -> Result<(String, Duration), NoAnswer> {
    let v: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |k: &str| v.as_ref().and_then(|v| v.get(k));
    if !(200..300).contains(&code) {
        // Only an error code's own characters (RFC 6749 section 5.2), so an answer cannot
        // write anything else into the delivery log.
        let error: String = field("error")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\')
            .take(64)
            .collect();
        let sep = if error.is_empty() { "" } else { " " };
        return Err(failed(format!("HTTP {code}{sep}{error}")));
    }
    let token = field("access_token")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| failed(format!("HTTP {code} without an access_token")))?;
    let lifetime = field("expires_in")
        .and_then(|e| e.as_u64().or_else(|| e.as_str()?.parse().ok()))
        .map_or(DEFAULT_LIFETIME, Duration::from_secs);
    Ok((token.to_owned(), lifetime))
}

/// The attempt's error for a token request that gave no token.
pub(crate) fn failed(why: impl std::fmt::Display) -> NoAnswer {
    NoAnswer::new(
        FailureKind::TokenRequest,
        format!("OAuth token request failed: {why}"),
    )
}

/// A token kept for an endpoint, with what it was fetched for: a change of the endpoint's
/// auth (another url, client or secret) makes it someone else's.
struct Kept {
    token: String,
    until: Instant,
    for_auth: [u8; 32],
}

/// The tokens of one worker process, one per endpoint, each behind its own lock: the first
/// delivery that finds none fetches it while the others to that endpoint wait for it, so an
/// endpoint's token server sees one request at a time from a process however many deliveries
/// are in flight, and other endpoints never wait.
#[derive(Clone, Default)]
pub(crate) struct Tokens {
    by_endpoint: Arc<Mutex<HashMap<Uuid, Slot>>>,
}

/// An endpoint's kept token, behind the lock its fetch holds.
type Slot = Arc<tokio::sync::Mutex<Option<Kept>>>;

/// What a token is fetched for: the auth's every part, hashed.
pub(crate) fn fingerprint(c: &OAuthClient, secret: &str) -> [u8; 32] {
    let mut d = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [
        c.token_url.as_str(),
        c.client_id.as_str(),
        secret,
        c.scope.as_deref().unwrap_or("\u{0}"),
        c.audience.as_deref().unwrap_or("\u{0}"),
        c.client_auth.as_str(),
    ] {
        d.update(&(part.len() as u64).to_be_bytes());
        d.update(part.as_bytes());
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(d.finish().as_ref());
    out
}

impl Tokens {
    /// The endpoint's token: the kept one unless it is `refused` (the receiver answered 401
    /// to it), expired or fetched for other settings; else one from `fetch`, kept until its
    /// lifetime less [`EXPIRY_MARGIN`].
    pub(crate) async fn token<F, Fut>(
        &self,
        endpoint: Uuid,
        for_auth: [u8; 32],
        refused: Option<&str>,
        fetch: F,
    ) -> Result<String, NoAnswer>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(String, Duration), NoAnswer>>,
    {
        let slot = {
            let mut all = self.by_endpoint.lock().unwrap();
            // Endpoints whose token expired long ago give their place back now and then, so
            // the map holds what is in use, not every endpoint ever seen.
            if all.len() > 4096 {
                all.retain(|_, s| {
                    s.try_lock()
                        .map(|k| k.as_ref().is_some_and(|k| k.until > Instant::now()))
                        .unwrap_or(true)
                });
            }
            all.entry(endpoint).or_default().clone()
        };
        let mut kept = slot.lock().await;
        if let Some(k) = kept.as_ref()
            && k.for_auth == for_auth
            && k.until > Instant::now()
            && refused != Some(k.token.as_str())
        {
            return Ok(k.token.clone());
        }
        *kept = None;
        let (token, lifetime) = fetch().await?;
        if let Some(keep) = lifetime.checked_sub(EXPIRY_MARGIN) {
            *kept = Some(Kept {
                token: token.clone(),
                until: Instant::now() + keep,
                for_auth,
            });
        }
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn client(auth: ClientAuth) -> OAuthClient {
        OAuthClient {
            token_url: "https://auth.example.com/token".into(),
            client_id: "crm app".into(),
            scope: Some("leads:write".into()),
            audience: None,
            client_auth: auth,
        }
    }

    #[test]
    fn the_request_carries_the_credentials_where_the_client_auth_says() {
        let (h, body) = token_request(&client(ClientAuth::Body), "s&cret");
        assert_eq!(
            body,
            "grant_type=client_credentials&scope=leads%3Awrite&client_id=crm+app&client_secret=s%26cret"
        );
        assert!(h.iter().all(|(k, _)| k != "Authorization"));
        let (h, body) = token_request(&client(ClientAuth::Basic), "s&cret");
        assert_eq!(body, "grant_type=client_credentials&scope=leads%3Awrite");
        let authz = &h.iter().find(|(k, _)| k == "Authorization").unwrap().1;
        assert_eq!(authz, &basic("crm+app", "s%26cret"));
    }

    #[test]
    fn answers_give_a_token_or_an_error_naming_the_request() {
        let (t, life) = read_answer(
            200,
            br#"{"access_token":"abc","token_type":"Bearer","expires_in":3600}"#,
        )
        .unwrap();
        assert_eq!((t.as_str(), life), ("abc", Duration::from_secs(3600)));
        assert_eq!(
            read_answer(200, br#"{"access_token":"abc"}"#).unwrap().1,
            DEFAULT_LIFETIME
        );
        let e = read_answer(
            400,
            br#"{"error":"invalid_client","error_description":"x"}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "OAuth token request failed: HTTP 400 invalid_client"
        );
        assert_eq!(e.kind, FailureKind::TokenRequest);
        assert!(e.kind.blames_endpoint());
        let e = read_answer(500, b"<html>down</html>").unwrap_err();
        assert_eq!(e.message, "OAuth token request failed: HTTP 500");
        let e = read_answer(200, br#"{"token_type":"Bearer"}"#).unwrap_err();
        assert!(e.message.contains("without an access_token"));
        // An error code with control characters or quotes cannot forge a log line.
        let e = read_answer(401, b"{\"error\":\"bad\\r\\nX: \\\"y\"}").unwrap_err();
        assert_eq!(e.message, "OAuth token request failed: HTTP 401 badX:y");
    }

    #[tokio::test]
    async fn one_fetch_at_a_time_per_endpoint_and_the_token_kept() {
        let tokens = Tokens::default();
        let fetches = Arc::new(AtomicUsize::new(0));
        let endpoint = Uuid::new_v4();
        let fp = fingerprint(&client(ClientAuth::Body), "s");
        // The first fetch is held until every other caller is waiting on the endpoint's lock.
        let (go, gate) = tokio::sync::watch::channel(false);
        let mut callers = Vec::new();
        for _ in 0..50 {
            let (tokens, fetches, mut gate) = (tokens.clone(), fetches.clone(), gate.clone());
            callers.push(tokio::spawn(async move {
                tokens
                    .token(endpoint, fp, None, || async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        let _ = gate.wait_for(|g| *g).await;
                        Ok(("t1".to_owned(), Duration::from_secs(3600)))
                    })
                    .await
            }));
        }
        // The first caller is fetching; on this one-thread runtime, every other caller runs
        // until it waits for the endpoint's lock before the fetch is let go.
        while fetches.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        go.send(true).unwrap();
        for c in callers {
            assert_eq!(c.await.unwrap().unwrap(), "t1");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // A 401 to the kept token fetches a new one; other settings fetch their own.
        let again = |t: &'static str| {
            let fetches = fetches.clone();
            move || async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                Ok((t.to_owned(), Duration::from_secs(3600)))
            }
        };
        assert_eq!(
            tokens
                .token(endpoint, fp, Some("t1"), again("t2"))
                .await
                .unwrap(),
            "t2"
        );
        assert_eq!(
            tokens.token(endpoint, fp, None, again("t9")).await.unwrap(),
            "t2"
        );
        let other = fingerprint(&client(ClientAuth::Body), "new secret");
        assert_eq!(
            tokens
                .token(endpoint, other, None, again("t3"))
                .await
                .unwrap(),
            "t3"
        );
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
        // A token that lives less than the margin is used once, not kept.
        let short = || async { Ok(("s1".to_owned(), Duration::from_secs(10))) };
        tokens.token(endpoint, fp, None, short).await.unwrap();
        assert_eq!(
            tokens.token(endpoint, fp, None, again("s2")).await.unwrap(),
            "s2"
        );
    }
}
