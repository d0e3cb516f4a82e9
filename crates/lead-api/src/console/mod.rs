//! The settings console, Integrations → Webhook (contract section 7), on the public listener
//! under `/console`: server-rendered HTML that works without JavaScript.
//!
//! Sign-in is a one-time ticket minted through the internal API; it becomes a session cookie
//! scoped to one org. Every action parses its form into the same typed commands as the internal
//! API ([`crate::inputs`]) and calls the same state and store functions, so a rule lives in one
//! place.
//!
//! A handler states what it needs in its signature: [`ConsoleSession`] (signed in, else 401) for
//! a page, [`CsrfForm`] (signed in, and the form carries the session's CSRF token, else 403)
//! for an action. Every POST route is registered with [`post`], which takes only handlers that
//! answer [`Posted`], and only a [`CsrfForm`] can make one: a POST handler that skips the CSRF
//! check does not compile. A form's fields ([`Form`]) can be had only through [`CsrfForm`] too:
//!
//! ```compile_fail
//! use actix_web::HttpResponse;
//! use lead_api::console::{ConsoleSession, Form, Posted, post};
//!
//! // Signed in, but no CSRF check: `Form` is not an extractor on its own...
//! async fn save(_: ConsoleSession, _: Form) -> Result<Posted, lead_api::console::ConsoleError> {
//!     todo!()
//! }
//! let _ = post(save);
//! ```
//!
//! ```compile_fail
//! use actix_web::HttpResponse;
//! use lead_api::console::{ConsoleError, ConsoleSession, post};
//!
//! // ...and a POST handler that answers anything but `Posted` is refused by `post`.
//! async fn revoke(_: ConsoleSession) -> Result<HttpResponse, ConsoleError> {
//!     Ok(HttpResponse::Ok().finish())
//! }
//! let _ = post(revoke);
//! ```
//!
//! ```
//! use lead_api::console::{ConsoleError, CsrfForm, Posted, post};
//!
//! // What compiles: the CSRF extractor, and its proof making the answer.
//! async fn revoke(f: CsrfForm) -> Result<Posted, ConsoleError> {
//!     Ok(f.answer(actix_web::HttpResponse::SeeOther().finish()))
//! }
//! let _ = post(revoke);
//! ```

mod catalogue;
mod pages;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::http::{StatusCode, header};
use actix_web::middleware::DefaultHeaders;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder, web};
use maud::Markup;
use qualifier_domain::EventType;
use qualifier_store::StoreError;
use strum::VariantArray;
use uuid::Uuid;

use crate::error::ApiError;
use crate::inputs::{
    DeliveryQuery, DeliverySearch, GraceWindow, NewToken, ReplayFilter, WebhookSettings,
};
use crate::state::AppState;
use pages::{DeliveryFilterForm, WebhookForm};

/// The session cookie: `HttpOnly`, `SameSite=Strict`, eight hours; path `/console` where the
/// console is served over plain http (a developer's machine).
pub const COOKIE: &str = "qlf_console";
/// Its name where `Secure` applies (contract section 11): the `__Host-` prefix makes a browser
/// refuse it unless it is `Secure`, has no `Domain` and has path `/`, so no sibling subdomain
/// or plain-http page can plant or shadow it.
pub const HOST_COOKIE: &str = "__Host-qlf_console";

/// The session cookie this request carries, under either name.
fn session_cookie(req: &HttpRequest) -> Option<Cookie<'static>> {
    req.cookie(HOST_COOKIE).or_else(|| req.cookie(COOKIE))
}

/// A session cookie holding `value` (empty, with `make_removal`, to clear it); `secure` unless
/// the console is served over plain http.
fn cookie_for(secure: bool, value: String) -> Cookie<'static> {
    let (name, path) = if secure {
        (HOST_COOKIE, "/")
    } else {
        (COOKIE, "/console")
    };
    Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(actix_web::cookie::time::Duration::seconds(
            qualifier_store::console::SESSION_TTL.whole_seconds(),
        ))
        .finish()
}

const CSS: &str = include_str!("static/console.css");
const JS: &str = include_str!("static/console.js");

/// The console's security headers. By default no page may be framed (`frame-ancestors
/// 'none'`, and `X-Frame-Options: DENY` for browsers before CSP 2). With
/// `QUALIFIER_CONSOLE_FRAME_ANCESTORS`, exactly those origins may frame it, and X-Frame-Options
/// is left out: it cannot name an origin, and `DENY` would win over the CSP in old browsers.
fn security_headers(frame_ancestors: &[String]) -> DefaultHeaders {
    let headers = DefaultHeaders::new();
    if frame_ancestors.is_empty() {
        headers
            .add((
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; frame-ancestors 'none'",
            ))
            .add((header::X_FRAME_OPTIONS, "DENY"))
    } else {
        headers.add((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'self'; frame-ancestors {}",
                frame_ancestors.join(" ")
            ),
        ))
    }
}

pub fn routes(cfg: &mut web::ServiceConfig, frame_ancestors: &[String]) {
    cfg.service(
        web::scope("/console")
            .wrap(
                security_headers(frame_ancestors)
                    .add((header::REFERRER_POLICY, "no-referrer"))
                    .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                    .add((header::CACHE_CONTROL, "no-store")),
            )
            .route("", web::get().to(webhook_get))
            .route("/login", web::get().to(login))
            .route("/login", post(login_switch))
            .route("/logout", post(logout))
            .route("/webhook", post(webhook_save))
            .route("/webhook/rotate", post(webhook_rotate))
            .route("/webhook/test", post(webhook_test))
            .route("/webhook/check", post(webhook_check))
            .route("/tokens", web::get().to(tokens_get))
            .route("/tokens", post(tokens_create))
            .route("/tokens/{id}/revoke", post(tokens_revoke))
            .route("/events", web::get().to(events_get))
            .route("/events/test", post(events_test))
            .route("/deliveries", web::get().to(deliveries_get))
            .route("/deliveries/replay-dead", web::get().to(replay_dead_get))
            .route("/deliveries/replay-dead", post(replay_dead_post))
            .route("/deliveries/{id}", web::get().to(delivery_get))
            .route("/deliveries/{id}/replay", post(delivery_replay))
            .route("/static/console.css", web::get().to(css))
            .route("/static/console.js", web::get().to(js))
            .default_service(web::to(|| async {
                page(
                    StatusCode::NOT_FOUND,
                    pages::plain("Not found", "There is no such page."),
                )
            })),
    );
}

fn page(status: StatusCode, m: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(m.into_string())
}

fn ok(m: Markup) -> HttpResponse {
    page(StatusCode::OK, m)
}

fn see_other(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .finish()
}

/// A refusal or failure as a page: never a stack of details, as the API never gives one.
#[derive(Debug)]
pub enum ConsoleError {
    SignedOut,
    Csrf,
    NotFound(&'static str),
    BadRequest(String),
    Conflict(String),
    Refused(StatusCode, String),
    /// A quota (contract section 11): 429 with `Retry-After`.
    RateLimited {
        retry_after_secs: u64,
    },
    Unavailable,
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl actix_web::ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignedOut => StatusCode::UNAUTHORIZED,
            ConsoleError::Csrf => StatusCode::FORBIDDEN,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Conflict(_) => StatusCode::CONFLICT,
            ConsoleError::Refused(status, _) => *status,
            ConsoleError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ConsoleError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let m = match self {
            ConsoleError::SignedOut => pages::plain(
                "Sign in again",
                "This sign-in link was already used, has expired, or your session ended. Open the settings from the product again.",
            ),
            ConsoleError::Csrf => pages::plain(
                "Refused",
                "This form was not sent from your current settings page. Reload the page and try again.",
            ),
            ConsoleError::NotFound(what) => pages::plain("Not found", what),
            ConsoleError::BadRequest(m)
            | ConsoleError::Conflict(m)
            | ConsoleError::Refused(_, m) => pages::plain("Not accepted", m),
            ConsoleError::RateLimited { retry_after_secs } => pages::plain(
                "Rate limit exceeded",
                &format!(
                    "At most 10 test events a minute. Try again in {retry_after_secs} seconds."
                ),
            ),
            ConsoleError::Unavailable => pages::plain(
                "Temporarily unavailable",
                "The settings could not be reached just now. Try again in a moment.",
            ),
        };
        let mut r = page(self.status_code(), m);
        if let ConsoleError::RateLimited { retry_after_secs } = self
            && let Ok(v) = header::HeaderValue::from_str(&retry_after_secs.to_string())
        {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        r
    }
}

impl From<StoreError> for ConsoleError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ConsoleError::NotFound(what),
            // A rule refused it (a disabled webhook's test event, a pending delivery's replay):
            // the contract's message, as the API gives it.
            StoreError::Conflict(m) => ConsoleError::Conflict(m),
            StoreError::Invalid(e) => ConsoleError::BadRequest(e.to_string()),
            StoreError::RateLimited { retry_after_secs } => {
                ConsoleError::RateLimited { retry_after_secs }
            }
            other => {
                tracing::warn!(error = %qualifier_store::cause_chain(&other), "console request failed");
                ConsoleError::Unavailable
            }
        }
    }
}

impl From<ApiError> for ConsoleError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::NotFound(what) => ConsoleError::NotFound(what),
            ApiError::Unprocessable(m) => ConsoleError::BadRequest(m),
            // The body rules of every request (contract section 8), as pages.
            ApiError::PayloadTooLarge => {
                ConsoleError::Refused(StatusCode::PAYLOAD_TOO_LARGE, e.to_string())
            }
            ApiError::RequestTimeout => {
                ConsoleError::Refused(StatusCode::REQUEST_TIMEOUT, e.to_string())
            }
            ApiError::InvalidJson => ConsoleError::BadRequest("The form could not be read.".into()),
            ApiError::Conflict { message, .. } => ConsoleError::Conflict(message),
            ApiError::RateLimited { retry_after_secs } => {
                ConsoleError::RateLimited { retry_after_secs }
            }
            _ => ConsoleError::Unavailable,
        }
    }
}

type Result<T> = std::result::Result<T, ConsoleError>;

// --- What a handler can ask for ----------------------------------------------------------------

/// A signed-in administrator (the request's session cookie names a live session), or 401.
#[derive(Debug, Clone)]
pub struct ConsoleSession(qualifier_store::console::ConsoleSession);

impl std::ops::Deref for ConsoleSession {
    type Target = qualifier_store::console::ConsoleSession;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl ConsoleSession {
    /// What a page needs to know of who it is for.
    pub fn who(&self) -> pages::Who<'_> {
        pages::Who {
            csrf: &self.csrf_token,
            org_name: &self.org_name,
        }
    }

    async fn of(req: &HttpRequest) -> Result<ConsoleSession> {
        let st = crate::extract::state(req).map_err(|_| ConsoleError::Unavailable)?;
        let secret = session_cookie(req).ok_or(ConsoleError::SignedOut)?;
        let secret = secret.value();
        // A session secret is 43 base62 characters; anything else is not worth a query.
        if secret.len() != 43 || !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ConsoleError::SignedOut);
        }
        // Until it is found, a cookie is a stranger's: its lookup takes the narrow lane.
        let _lane = stranger_lane(&st).await?;
        st.store
            .console_session(secret)
            .await?
            .map(ConsoleSession)
            .ok_or(ConsoleError::SignedOut)
    }
}

impl FromRequest for ConsoleSession {
    type Error = ConsoleError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<ConsoleSession>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { ConsoleSession::of(&req).await })
    }
}

/// A form body: every value of every field, in order (checkbox groups repeat a name). Only
/// [`CsrfForm`] makes one, after the CSRF check.
pub struct Form(Vec<(String, String)>);

impl Form {
    fn parse(bytes: &[u8]) -> Form {
        Form(
            url::form_urlencoded::parse(bytes)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Proof that this request's form carried its session's CSRF token; private, so nothing else
/// can make one.
struct CsrfChecked(());

/// An action: a signed-in session, and its form, whose `csrf` field matched the session's
/// token (constant time). 401 without a session, 403 without the right token, and the body
/// rules of every request (413, 408; contract section 8) as pages.
pub struct CsrfForm {
    pub session: ConsoleSession,
    pub form: Form,
    checked: CsrfChecked,
}

impl CsrfForm {
    /// The answer to this action (what [`post`] requires of a POST handler).
    pub fn answer(&self, r: HttpResponse) -> Posted {
        let CsrfChecked(()) = self.checked;
        Posted(r)
    }
}

impl FromRequest for CsrfForm {
    type Error = ConsoleError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<CsrfForm>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let session = ConsoleSession::of(&req).await?;
            let bytes = crate::body::read_limited(&req, payload).await?;
            let form = Form::parse(&bytes);
            // Digest against digest, as for the internal token: the comparison's time says
            // nothing about the session's token.
            let digest = |v: &str| ring::digest::digest(&ring::digest::SHA256, v.as_bytes());
            let sent = form.get("csrf").unwrap_or("");
            if digest(sent).as_ref() != digest(&session.csrf_token).as_ref() {
                return Err(ConsoleError::Csrf);
            }
            Ok(CsrfForm {
                session,
                form,
                checked: CsrfChecked(()),
            })
        })
    }
}

/// The answer of a console POST handler; only [`CsrfForm::answer`] makes one.
pub struct Posted(HttpResponse);

impl Responder for Posted {
    type Body = actix_web::body::BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        self.0
    }
}

/// A console POST route: the handler must answer [`Posted`], so it must have taken a
/// [`CsrfForm`].
pub fn post<F, Args>(handler: F) -> actix_web::Route
where
    F: actix_web::Handler<Args, Output = Result<Posted>>,
    Args: FromRequest + 'static,
{
    web::post().to(handler)
}

fn parse_id(raw: &str, what: &'static str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ConsoleError::NotFound(what))
}

async fn css() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .body(CSS)
}

async fn js() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .body(JS)
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    ticket: Option<String>,
}

/// A place in the lane every unauthenticated database lookup shares (contract section 11: a
/// flood of forged cookies or tickets holds at most 2 connections); a lane that stays full is
/// a 503 page.
async fn stranger_lane(st: &AppState) -> Result<tokio::sync::SemaphorePermit<'_>> {
    crate::token_filter::enter(&st.strangers)
        .await
        .map_err(|()| ConsoleError::Unavailable)
}

fn ticket_of(raw: Option<&str>) -> Result<&str> {
    let ticket = raw.unwrap_or("");
    if !ticket.starts_with("qlf_ct_") || ticket.len() > 100 {
        return Err(ConsoleError::SignedOut);
    }
    Ok(ticket)
}

/// Uses the ticket up and answers with the new session's cookie (the previous session, if
/// any, ended: signing in again never leaves two live sessions behind one browser).
async fn sign_in(req: &HttpRequest, st: &AppState, ticket: &str) -> Result<HttpResponse> {
    let lane = stranger_lane(st).await?;
    let (secret, _) = st
        .store
        .redeem_console_ticket(ticket)
        .await?
        .ok_or(ConsoleError::SignedOut)?;
    if let Some(old) = session_cookie(req) {
        st.store.end_console_session(old.value()).await?;
    }
    drop(lane);
    let mut r = HttpResponse::SeeOther();
    // A cookie of the other name (the listener moved between http and https) goes too.
    if let Some(stale) = req.cookie(COOKIE).filter(|_| st.console_secure_cookie()) {
        let mut gone = Cookie::build(stale.name().to_owned(), "")
            .path("/console")
            .finish();
        gone.make_removal();
        r.cookie(gone);
    }
    Ok(r.cookie(cookie_for(st.console_secure_cookie(), secret))
        .insert_header((header::LOCATION, "/console"))
        .finish())
}

/// Exchanges a ticket for a session cookie, then sends the browser to the console. Signed in
/// to another org already, the browser is asked first (contract section 11): a link to another
/// org, sent by mistake or on purpose, must not silently swap the org an administrator works in.
async fn login(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let q = web::Query::<LoginQuery>::from_query(req.query_string())
        .map_err(|_| ConsoleError::SignedOut)?;
    let ticket = ticket_of(q.ticket.as_deref())?;
    if let Ok(current) = ConsoleSession::of(&req).await {
        let target = {
            let _lane = stranger_lane(&st).await?;
            st.store
                .peek_console_ticket(ticket)
                .await?
                .ok_or(ConsoleError::SignedOut)?
        };
        if target.org_id != current.org_id {
            return Ok(ok(pages::switch_page(
                &current.who(),
                &target.org_name,
                ticket,
            )));
        }
    }
    sign_in(&req, &st, ticket).await
}

/// `Switch organisation`, from the page [`login`] showed: only now is the session replaced.
async fn login_switch(f: CsrfForm, req: HttpRequest, st: web::Data<AppState>) -> Result<Posted> {
    let ticket = ticket_of(f.form.get("ticket"))?;
    let r = sign_in(&req, &st, ticket).await?;
    Ok(f.answer(r))
}

async fn logout(f: CsrfForm, req: HttpRequest, st: web::Data<AppState>) -> Result<Posted> {
    if let Some(c) = session_cookie(&req) {
        st.store.end_console_session(c.value()).await?;
    }
    let mut gone = cookie_for(st.console_secure_cookie(), String::new());
    gone.make_removal();
    Ok(f.answer(
        HttpResponse::Ok()
            .cookie(gone)
            .content_type("text/html; charset=utf-8")
            .body(
                pages::plain(
                    "Signed out",
                    "You are signed out. Open the settings from the product to sign in again.",
                )
                .into_string(),
            ),
    ))
}

// --- Webhook -------------------------------------------------------------------------------

async fn webhook_view(
    st: &AppState,
    s: &ConsoleSession,
    form: Option<WebhookForm>,
    notice: Option<&str>,
    secret: Option<(&str, &str)>,
) -> Result<HttpResponse> {
    let saved = st.store.webhook_status(s.org_id).await?;
    let form = form.unwrap_or_else(|| {
        saved
            .as_ref()
            .map(|w| WebhookForm::of(&w.webhook))
            .unwrap_or(WebhookForm {
                enabled: true,
                event_types: EventType::VARIANTS.to_vec(),
                ..Default::default()
            })
    });
    Ok(ok(pages::webhook_page(
        &s.who(),
        saved.as_ref(),
        &form,
        notice,
        secret,
    )))
}

#[derive(serde::Deserialize)]
struct Notice {
    done: Option<String>,
}

fn notice_text(q: &str) -> Option<&'static str> {
    let n = web::Query::<Notice>::from_query(q).ok()?;
    match n.done.as_deref()? {
        "saved" => Some("Saved."),
        "checking" => Some("Checking your endpoint now. Reload in a moment to see the result."),
        "revoked" => Some("Token revoked. Requests with it now get 401."),
        "replayed" => Some("Queued again: 5 fresh attempts under the same delivery id."),
        "replayed-all" => {
            Some("Dead deliveries queued again, paced so your endpoint is not flooded.")
        }
        _ => None,
    }
}

async fn webhook_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    webhook_view(&st, &s, None, notice_text(req.query_string()), None).await
}

async fn webhook_save(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let url = f.form.get("url").unwrap_or("").trim();
    let types = f.form.all("event_types");
    let enabled = f.form.get("enabled").is_some();
    let settings = match WebhookSettings::from_form(url, &types, enabled, &st.egress).await {
        Ok(s) => s,
        Err(errors) => {
            // The form again, as sent, each problem beside its field.
            let shown = WebhookForm {
                url: url.to_owned(),
                event_types: types.iter().filter_map(|t| t.parse().ok()).collect(),
                enabled,
                url_error: errors.url,
                types_error: errors.event_types,
                ..Default::default()
            };
            let mut r = webhook_view(&st, &f.session, Some(shown), None, None).await?;
            *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            return Ok(f.answer(r));
        }
    };
    let (_, secret) = st.put_webhook(f.session.org_id, settings).await?;
    let r = match secret {
        // Created: the signing secret exists from now on and is shown this once.
        Some(secret) => {
            webhook_view(
                &st,
                &f.session,
                None,
                Some("Saved. Your endpoint now receives the selected events."),
                Some(("Signing secret", &secret)),
            )
            .await?
        }
        None => see_other("/console?done=saved"),
    };
    Ok(f.answer(r))
}

async fn webhook_rotate(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let GraceWindow(grace) = GraceWindow::from_form(f.form.get("grace_seconds"))
        .map_err(|e| ConsoleError::BadRequest(e.to_string()))?;
    let (secret, previous) = st
        .store
        .rotate_webhook_secret(f.session.org_id, grace)
        .await?;
    let notice = match previous {
        Some(t) => format!(
            "Rotated. The previous secret keeps signing too until {}.",
            qualifier_domain::timefmt::format(t)
        ),
        None => "Rotated. The previous secret no longer signs anything.".to_owned(),
    };
    let r = webhook_view(
        &st,
        &f.session,
        None,
        Some(&notice),
        Some(("New signing secret", &secret)),
    )
    .await?;
    Ok(f.answer(r))
}

async fn webhook_test(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let id = st.store.send_test_event(f.session.org_id, None).await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

// --- Event catalogue -----------------------------------------------------------------------

async fn events_get(s: ConsoleSession, st: web::Data<AppState>) -> Result<HttpResponse> {
    let subscribed = st
        .store
        .get_webhook(s.org_id)
        .await?
        .map(|w| w.event_types)
        .unwrap_or_default();
    Ok(ok(catalogue::catalogue_page(
        &s.who(),
        s.org_id,
        &st.store.app_base_url,
        &subscribed,
    )))
}

/// `Send test event` for one type: sent even if the webhook is not subscribed to it.
async fn events_test(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let t = f
        .form
        .get("event_type")
        .and_then(|t| t.parse::<EventType>().ok())
        .ok_or(ConsoleError::NotFound("Event type not found"))?;
    let id = st.store.send_test_event(f.session.org_id, Some(t)).await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

/// `Check now`: the failing endpoint's next probe is due at once (a replica sends it within a
/// second or so); the page then shows the outcome.
async fn webhook_check(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    st.store.probe_now(f.session.org_id).await?;
    Ok(f.answer(see_other("/console?done=checking")))
}

// --- Tokens --------------------------------------------------------------------------------

async fn tokens_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let tokens = st.store.list_tokens(s.org_id).await?;
    Ok(ok(pages::tokens_page(
        &s.who(),
        &tokens,
        None,
        None,
        notice_text(req.query_string()),
    )))
}

async fn tokens_create(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let s = &f.session;
    let new = match NewToken::from_form(f.form.get("name")) {
        Ok(n) => n,
        Err(e) => {
            let tokens = st.store.list_tokens(s.org_id).await?;
            let page = pages::tokens_page(&s.who(), &tokens, None, Some(&e.to_string()), None);
            return Ok(f.answer(self::page(StatusCode::UNPROCESSABLE_ENTITY, page)));
        }
    };
    let (_, secret) = st.issue_token(s.org_id, new).await?;
    let tokens = st.store.list_tokens(s.org_id).await?;
    let page = pages::tokens_page(&s.who(), &tokens, Some(&secret), None, None);
    Ok(f.answer(ok(page)))
}

async fn tokens_revoke(
    f: CsrfForm,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let id = parse_id(&path, "Token not found")?;
    st.store.revoke_token(f.session.org_id, id).await?;
    Ok(f.answer(see_other("/console/tokens?done=revoked")))
}

// --- Deliveries ----------------------------------------------------------------------------

async fn deliveries_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    // The internal API's parser; a filter it refuses is shown above the unfiltered list.
    let (q, error) = match DeliveryQuery::parse(req.query_string()) {
        Ok(q) => (q, None),
        Err(e) => (
            DeliveryQuery::parse("").map_err(ConsoleError::from)?,
            Some(e.to_string()),
        ),
    };
    let shown = DeliveryFilterForm {
        status: q
            .filter
            .statuses
            .first()
            .map_or("", |s| s.as_str())
            .to_owned(),
        event_type: q
            .filter
            .event_types
            .first()
            .map_or("", |t| t.as_str())
            .to_owned(),
    };
    let search = DeliverySearch::parse(req.query_string());
    let (rows, next, error) = match &search {
        // One page of matches: an id names one delivery, a lead a handful.
        Some(DeliverySearch { id: Ok(id), .. }) => {
            let rows = st.store.find_deliveries(s.org_id, *id, 100).await?;
            (rows, None, error)
        }
        _ => {
            let before = q.before(&st.cursors, s.org_id)?;
            let (rows, next) = st
                .store
                .list_deliveries(s.org_id, &q.filter, before, q.limit)
                .await?;
            let next = next.map(|seq| st.cursors.delivery(s.org_id, seq));
            (rows, next, error)
        }
    };
    let hours = st.store.deliveries_by_hour(s.org_id).await?;
    let health = st.store.endpoint_health(s.org_id).await.ok();
    let view = pages::DeliveriesView {
        hours: &hours,
        health: health.as_ref(),
        filter: &shown,
        search: search.as_ref(),
        rows: &rows,
        next: next.as_deref(),
        notice: notice_text(req.query_string()),
        filter_error: error.as_deref(),
    };
    Ok(ok(pages::deliveries_page(&s.who(), &view)))
}

async fn delivery_get(
    s: ConsoleSession,
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let id = parse_id(&path, "Delivery not found")?;
    let d = st.store.get_delivery(s.org_id, id).await?;
    let payload = st.store.delivery_payload(s.org_id, id).await?;
    Ok(ok(pages::delivery_page(
        &s.who(),
        &d,
        &payload,
        notice_text(req.query_string()),
    )))
}

async fn delivery_replay(
    f: CsrfForm,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let id = parse_id(&path, "Delivery not found")?;
    st.store
        .replay_delivery(f.session.org_id, id, st.replay_rate_per_second)
        .await?;
    Ok(f.answer(see_other(&format!(
        "/console/deliveries/{id}?done=replayed"
    ))))
}

/// The count first (a dry run), then the button that replays them.
async fn replay_dead_get(s: ConsoleSession, st: web::Data<AppState>) -> Result<HttpResponse> {
    let n = st
        .replay_matching(s.org_id, &ReplayFilter::all_dead(true))
        .await?;
    Ok(ok(pages::replay_dead_page(
        &s.who(),
        n,
        st.replay_rate_per_second,
    )))
}

async fn replay_dead_post(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    st.replay_matching(f.session.org_id, &ReplayFilter::all_dead(false))
        .await?;
    Ok(f.answer(see_other("/console/deliveries?done=replayed-all")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_keeps_every_value_of_a_repeated_field() {
        let f = Form::parse(b"event_types=lead.created&csrf=x&event_types=lead.qualified");
        assert_eq!(f.all("event_types"), ["lead.created", "lead.qualified"]);
        assert_eq!(f.get("csrf"), Some("x"));
        assert_eq!(f.get("nothing"), None);
    }

    #[test]
    fn a_secure_session_cookie_takes_the_host_prefix_and_the_whole_site_path() {
        let c = cookie_for(true, "s".into());
        assert_eq!(
            (c.name(), c.path(), c.secure()),
            ("__Host-qlf_console", Some("/"), Some(true))
        );
        assert_eq!(c.domain(), None, "a __Host- cookie has no Domain");
        assert_eq!(c.same_site(), Some(SameSite::Strict));
        assert_eq!(c.http_only(), Some(true));
        let c = cookie_for(false, "s".into());
        assert_eq!((c.name(), c.path()), ("qlf_console", Some("/console")));
    }

    #[test]
    fn only_known_notices_are_shown() {
        assert_eq!(notice_text("done=saved"), Some("Saved."));
        assert_eq!(notice_text("done=<script>"), None);
        assert_eq!(notice_text(""), None);
    }

    #[test]
    fn pages_escape_what_they_show() {
        let html = pages::plain("T", "<script>alert(1)</script>").into_string();
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;"));
    }
}
