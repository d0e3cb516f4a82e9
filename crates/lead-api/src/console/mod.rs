//! The settings console, Integrations → Webhook (contract section 7), on the public listener
//! under `/console`: server-rendered HTML that works without JavaScript.
//!
//! Sign-in is a one-time ticket minted through the internal API; it becomes a session cookie
//! scoped to one org. Every POST carries the session's CSRF token. Every action calls the same
//! parsers and store functions as the internal API, so a rule lives in one place.

mod pages;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::{StatusCode, header};
use actix_web::middleware::DefaultHeaders;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::Markup;
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::{DeliveryStatus, EventType};
use qualifier_store::console::ConsoleSession;
use qualifier_store::deliveries::DeliveryFilter;
use qualifier_store::{Store, StoreError};
use serde_json::{Map, Value};
use strum::VariantArray;
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::AppState;
use pages::{DeliveryFilterForm, WebhookForm};

/// The session cookie: `HttpOnly`, `SameSite=Strict`, path `/console`, eight hours.
pub const COOKIE: &str = "qlf_console";

const CSS: &str = include_str!("static/console.css");
const JS: &str = include_str!("static/console.js");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/console")
            .wrap(
                DefaultHeaders::new()
                    .add((header::CONTENT_SECURITY_POLICY, "default-src 'self'"))
                    .add((header::X_FRAME_OPTIONS, "DENY"))
                    .add((header::REFERRER_POLICY, "no-referrer"))
                    .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                    .add((header::CACHE_CONTROL, "no-store")),
            )
            .route("", web::get().to(webhook_get))
            .route("/login", web::get().to(login))
            .route("/logout", web::post().to(logout))
            .route("/webhook", web::post().to(webhook_save))
            .route("/webhook/rotate", web::post().to(webhook_rotate))
            .route("/webhook/test", web::post().to(webhook_test))
            .route("/tokens", web::get().to(tokens_get))
            .route("/tokens", web::post().to(tokens_create))
            .route("/tokens/{id}/revoke", web::post().to(tokens_revoke))
            .route("/deliveries", web::get().to(deliveries_get))
            .route("/deliveries/replay-dead", web::get().to(replay_dead_get))
            .route("/deliveries/replay-dead", web::post().to(replay_dead_post))
            .route("/deliveries/{id}", web::get().to(delivery_get))
            .route("/deliveries/{id}/replay", web::post().to(delivery_replay))
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
            ConsoleError::Unavailable => pages::plain(
                "Temporarily unavailable",
                "The settings could not be reached just now. Try again in a moment.",
            ),
        };
        page(self.status_code(), m)
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
            _ => ConsoleError::Unavailable,
        }
    }
}

type Result<T> = std::result::Result<T, ConsoleError>;

/// The signed-in session of this request, or 401.
async fn session(req: &HttpRequest, store: &Store) -> Result<ConsoleSession> {
    let secret = req.cookie(COOKIE).ok_or(ConsoleError::SignedOut)?;
    let secret = secret.value();
    // A session secret is 43 base62 characters; anything else is not worth a query.
    if secret.len() != 43 || !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(ConsoleError::SignedOut);
    }
    store
        .console_session(secret)
        .await?
        .ok_or(ConsoleError::SignedOut)
}

/// A form body: every value of every field, in order (checkbox groups repeat a name).
struct Form(Vec<(String, String)>);

impl Form {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Reads a form post and checks its CSRF token against the session's (constant time).
async fn form(req: &HttpRequest, payload: web::Payload, s: &ConsoleSession) -> Result<Form> {
    let bytes = crate::body::read_limited(req, payload).await?;
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(&bytes)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let f = Form(fields);
    // Digest against digest, as for the internal token: the comparison's time says nothing
    // about the session's token.
    let digest = |v: &str| ring::digest::digest(&ring::digest::SHA256, v.as_bytes());
    let sent = f.get("csrf").unwrap_or("");
    if digest(sent).as_ref() != digest(&s.csrf_token).as_ref() {
        return Err(ConsoleError::Csrf);
    }
    Ok(f)
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

/// Exchanges a ticket for a session cookie, then sends the browser to the console.
async fn login(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let q = web::Query::<LoginQuery>::from_query(req.query_string())
        .map_err(|_| ConsoleError::SignedOut)?;
    let ticket = q.ticket.as_deref().unwrap_or("");
    if !ticket.starts_with("qlf_ct_") || ticket.len() > 100 {
        return Err(ConsoleError::SignedOut);
    }
    let (secret, _) = st
        .store
        .redeem_console_ticket(ticket)
        .await?
        .ok_or(ConsoleError::SignedOut)?;
    let cookie = Cookie::build(COOKIE, secret)
        .path("/console")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(st.console_secure_cookie())
        .max_age(actix_web::cookie::time::Duration::seconds(
            qualifier_store::console::SESSION_TTL.whole_seconds(),
        ))
        .finish();
    Ok(HttpResponse::SeeOther()
        .cookie(cookie)
        .insert_header((header::LOCATION, "/console"))
        .finish())
}

async fn logout(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    form(&req, payload, &s).await?;
    if let Some(c) = req.cookie(COOKIE) {
        st.store.end_console_session(c.value()).await?;
    }
    let mut gone = Cookie::build(COOKIE, "").path("/console").finish();
    gone.make_removal();
    Ok(HttpResponse::Ok()
        .cookie(gone)
        .content_type("text/html; charset=utf-8")
        .body(
            pages::plain(
                "Signed out",
                "You are signed out. Open the settings from the product to sign in again.",
            )
            .into_string(),
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
    let saved = st.store.get_webhook(s.org_id).await?;
    let form = form.unwrap_or_else(|| {
        saved.as_ref().map(WebhookForm::of).unwrap_or(WebhookForm {
            enabled: true,
            event_types: EventType::VARIANTS.to_vec(),
            ..Default::default()
        })
    });
    Ok(ok(pages::webhook_page(
        &s.csrf_token,
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
        "revoked" => Some("Token revoked. Requests with it now get 401."),
        "replayed" => Some("Queued again: 5 fresh attempts under the same delivery id."),
        "replayed-all" => {
            Some("Dead deliveries queued again, paced so your endpoint is not flooded.")
        }
        _ => None,
    }
}

async fn webhook_get(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    webhook_view(&st, &s, None, notice_text(req.query_string()), None).await
}

async fn webhook_save(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let f = form(&req, payload, &s).await?;
    // The same object the internal API's PUT takes, through the same parsers.
    let mut obj = Map::new();
    let url = f.get("url").unwrap_or("").trim().to_owned();
    obj.insert("url".into(), Value::String(url.clone()));
    obj.insert(
        "event_types".into(),
        Value::Array(
            f.all("event_types")
                .into_iter()
                .map(|t| Value::String(t.to_owned()))
                .collect(),
        ),
    );
    let enabled = f.get("enabled").is_some();
    let mut shown = WebhookForm {
        url: url.clone(),
        event_types: f
            .all("event_types")
            .iter()
            .filter_map(|t| t.parse().ok())
            .collect(),
        enabled,
        ..Default::default()
    };
    let types = crate::internal::parse_event_types(&obj);
    let parsed = match WebhookUrl::parse(&url) {
        Ok(u) => match st.egress.resolve(&u).await {
            Ok(_) => Ok(u),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = &parsed {
        shown.url_error = Some(e.clone());
    }
    if let Err(e) = &types {
        shown.types_error = Some(e.to_string());
    }
    let (Ok(url), Ok(types)) = (parsed, types) else {
        return webhook_view(&st, &s, Some(shown), None, None)
            .await
            .map(|mut r| {
                *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
                r
            });
    };
    let (_, secret) = st
        .store
        .put_webhook(s.org_id, url.as_str().to_owned(), types, enabled)
        .await?;
    match secret {
        // Created: the signing secret exists from now on and is shown this once.
        Some(secret) => {
            webhook_view(
                &st,
                &s,
                None,
                Some("Saved. Your endpoint now receives the selected events."),
                Some(("Signing secret", &secret)),
            )
            .await
        }
        None => Ok(see_other("/console?done=saved")),
    }
}

async fn webhook_rotate(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let f = form(&req, payload, &s).await?;
    let mut obj = Map::new();
    if let Some(g) = f.get("grace_seconds") {
        let n: u64 = g.parse().map_err(|_| {
            ConsoleError::BadRequest("grace_seconds must be an integer from 0 to 604800".into())
        })?;
        obj.insert("grace_seconds".into(), Value::from(n));
    }
    let grace = crate::internal::parse_grace(&obj)?;
    let (secret, previous) = st.store.rotate_webhook_secret(s.org_id, grace).await?;
    let notice = match previous {
        Some(t) => format!(
            "Rotated. The previous secret keeps signing too until {}.",
            qualifier_domain::timefmt::format(t)
        ),
        None => "Rotated. The previous secret no longer signs anything.".to_owned(),
    };
    webhook_view(
        &st,
        &s,
        None,
        Some(&notice),
        Some(("New signing secret", &secret)),
    )
    .await
}

async fn webhook_test(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    form(&req, payload, &s).await?;
    let id = st.store.send_test_event(s.org_id, None).await?;
    Ok(see_other(&format!("/console/deliveries/{id}")))
}

// --- Tokens --------------------------------------------------------------------------------

async fn tokens_get(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let tokens = st.store.list_tokens(s.org_id).await?;
    Ok(ok(pages::tokens_page(
        &s.csrf_token,
        &tokens,
        None,
        None,
        notice_text(req.query_string()),
    )))
}

async fn tokens_create(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let f = form(&req, payload, &s).await?;
    let name = f.get("name").unwrap_or("").trim();
    let name = if name.is_empty() {
        None
    } else {
        match qualifier_domain::validate::Name::parse("name", name) {
            Ok(n) => Some(n.into_inner()),
            Err(e) => {
                let tokens = st.store.list_tokens(s.org_id).await?;
                let msg = ApiError::from(e).to_string();
                return Ok(page(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    pages::tokens_page(&s.csrf_token, &tokens, None, Some(&msg), None),
                ));
            }
        }
    };
    let secret = crate::internal::create_token_for(&st, s.org_id, name).await?;
    let tokens = st.store.list_tokens(s.org_id).await?;
    Ok(ok(pages::tokens_page(
        &s.csrf_token,
        &tokens,
        Some(&secret),
        None,
        None,
    )))
}

async fn tokens_revoke(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    form(&req, payload, &s).await?;
    let id = parse_id(&path, "Token not found")?;
    st.store.revoke_token(s.org_id, id).await?;
    Ok(see_other("/console/tokens?done=revoked"))
}

// --- Deliveries ----------------------------------------------------------------------------

#[derive(serde::Deserialize)]
struct DeliveriesQuery {
    status: Option<String>,
    event_type: Option<String>,
    cursor: Option<String>,
    done: Option<String>,
}

async fn deliveries_get(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let q = web::Query::<DeliveriesQuery>::from_query(req.query_string())
        .map_err(|_| ConsoleError::BadRequest("Invalid query string".into()))?;
    let mut f = DeliveryFilter::default();
    let mut shown = DeliveryFilterForm::default();
    let mut error = None;
    if let Some(v) = q.status.as_deref().filter(|v| !v.is_empty()) {
        match v.parse::<DeliveryStatus>() {
            Ok(st) => {
                f.statuses = vec![st];
                shown.status = v.to_owned();
            }
            Err(_) => error = Some("Unknown status."),
        }
    }
    if let Some(v) = q.event_type.as_deref().filter(|v| !v.is_empty()) {
        match v.parse::<EventType>() {
            Ok(t) => {
                f.event_types = vec![t];
                shown.event_type = v.to_owned();
            }
            Err(_) => error = Some("Unknown event type."),
        }
    }
    let before = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => Some(
            crate::cursor::parse_delivery(c)
                .ok_or_else(|| ConsoleError::BadRequest("Invalid cursor".into()))?,
        ),
        None => None,
    };
    let (rows, next) = st.store.list_deliveries(s.org_id, &f, before, 50).await?;
    let next = next.map(crate::cursor::delivery);
    let notice = q
        .done
        .as_deref()
        .and_then(|d| notice_text(&format!("done={d}")));
    Ok(ok(pages::deliveries_page(
        &s.csrf_token,
        &shown,
        &rows,
        next.as_deref(),
        notice,
        error,
    )))
}

async fn delivery_get(
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let id = parse_id(&path, "Delivery not found")?;
    let d = st.store.get_delivery(s.org_id, id).await?;
    Ok(ok(pages::delivery_page(
        &s.csrf_token,
        &d,
        notice_text(req.query_string()),
    )))
}

async fn delivery_replay(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    form(&req, payload, &s).await?;
    let id = parse_id(&path, "Delivery not found")?;
    st.store
        .replay_delivery(s.org_id, id, st.replay_rate_per_second)
        .await?;
    Ok(see_other(&format!(
        "/console/deliveries/{id}?done=replayed"
    )))
}

fn all_dead() -> DeliveryFilter {
    DeliveryFilter {
        statuses: vec![DeliveryStatus::Dead],
        ..Default::default()
    }
}

/// The count first (a dry run), then the button that replays them.
async fn replay_dead_get(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    let n = st
        .store
        .replay_matching(s.org_id, &all_dead(), true, st.replay_rate_per_second)
        .await?;
    Ok(ok(pages::replay_dead_page(
        &s.csrf_token,
        n,
        st.replay_rate_per_second,
    )))
}

async fn replay_dead_post(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let s = session(&req, &st.store).await?;
    form(&req, payload, &s).await?;
    st.store
        .replay_matching(s.org_id, &all_dead(), false, st.replay_rate_per_second)
        .await?;
    Ok(see_other("/console/deliveries?done=replayed-all"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_keeps_every_value_of_a_repeated_field() {
        let f = Form(
            url::form_urlencoded::parse(
                b"event_types=lead.created&csrf=x&event_types=lead.qualified",
            )
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        );
        assert_eq!(f.all("event_types"), ["lead.created", "lead.qualified"]);
        assert_eq!(f.get("csrf"), Some("x"));
        assert_eq!(f.get("nothing"), None);
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
