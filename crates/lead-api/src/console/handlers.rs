//! The console's pages and actions. Each parses its input with [`crate::inputs`] and calls the
//! same state and store functions as the internal API.

use actix_web::cookie::Cookie;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use time::OffsetDateTime;
use uuid::Uuid;

use super::credentials::Kind;
use super::errors::{ConsoleError, Result};
use super::extract::{COOKIE, ConsoleSession, CsrfForm, Posted, cookie_for, session_cookie};
use super::pages::{self, DeliveryFilterForm, WebhookForm};
use super::place::Place;
use super::{CSS, JS, catalogue, ok, see_other};
use crate::inputs::{
    DeliveryQuery, DeliverySearch, GraceWindow, NewToken, ReplayFilter, WebhookSettings,
};
use crate::state::AppState;

fn parse_id(raw: &str, what: &'static str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ConsoleError::NotFound(what))
}

pub(super) async fn css() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .body(CSS)
}

pub(super) async fn js() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .body(JS)
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    ticket: Option<String>,
}

/// The ticket's random part, when this deployment issued it and it has not expired: anything
/// else is refused without a query ([`super::credentials`]).
fn ticket_of<'a>(st: &AppState, raw: Option<&'a str>) -> Result<&'a str> {
    crate::inputs::ticket(raw)
        .and_then(|t| {
            st.credentials
                .open(Kind::Ticket, t, OffsetDateTime::now_utc())
        })
        .ok_or(ConsoleError::SignedOut)
}

/// The session id behind this request's cookie, when it is one this deployment issued.
fn session_id<'a>(st: &AppState, c: &'a Cookie<'static>) -> Option<&'a str> {
    st.credentials
        .open(Kind::Session, c.value(), OffsetDateTime::now_utc())
}

/// Uses the ticket up and answers with the new session's cookie (the previous session, if
/// any, ended: signing in again never leaves two live sessions behind one browser).
pub(super) async fn sign_in(
    req: &HttpRequest,
    st: &AppState,
    ticket: &str,
) -> Result<HttpResponse> {
    let (secret, _) = st
        .store
        .redeem_console_ticket(ticket)
        .await?
        .ok_or(ConsoleError::SignedOut)?;
    if let Some(old) = session_cookie(req)
        && let Some(id) = session_id(st, &old)
    {
        st.store.end_console_session(id).await?;
    }
    let cookie = st.credentials.issue(
        Kind::Session,
        &secret,
        OffsetDateTime::now_utc() + qualifier_store::console::SESSION_TTL,
    );
    let mut r = HttpResponse::SeeOther();
    // A cookie of the other name (the listener moved between http and https) goes too.
    if let Some(stale) = req.cookie(COOKIE).filter(|_| st.console_secure_cookie()) {
        let mut gone = Cookie::build(stale.name().to_owned(), "")
            .path("/console")
            .finish();
        gone.make_removal();
        r.cookie(gone);
    }
    Ok(r.cookie(cookie_for(st.console_secure_cookie(), cookie))
        .insert_header((header::LOCATION, "/console"))
        .finish())
}

/// Where a used or expired sign-in link leads a browser still signed in.
const LINK_USED: &str = "/console?done=link-used";

/// Exchanges a ticket for a session cookie, then sends the browser to the console. Signed in
/// to another org already, the browser is asked first (docs/reliability.md, "Strangers, quotas and pages"): a link to another
/// org, sent by mistake or on purpose, must not silently swap the org an administrator works in.
pub(super) async fn login(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let q = web::Query::<LoginQuery>::from_query(req.query_string())
        .map_err(|_| ConsoleError::SignedOut)?;
    // A link used already (or expired) in a browser still signed in leads back to the
    // console, saying so, rather than to the page of a session that ended: the session is
    // the browser's own, and the link adds nothing to it. Without a session it is refused.
    let link = ticket_of(&st, q.ticket.as_deref());
    let current = match link {
        // A stranger's made-up link is refused before any session is read.
        Err(ConsoleError::SignedOut) if session_cookie(&req).is_none() => None,
        _ => current_session(ConsoleSession::of(&req).await)?,
    };
    let ticket = match (link, &current) {
        (Ok(t), _) => t,
        (Err(ConsoleError::SignedOut), Some(_)) => return Ok(see_other(LINK_USED)),
        (Err(e), _) => return Err(e),
    };
    if let Some(current) = current {
        let Some(target) = st.store.peek_console_ticket(ticket).await? else {
            return Ok(see_other(LINK_USED));
        };
        if target.org_id != current.org_id {
            // The page's form carries the ticket as issued (signed), as the link did.
            let signed = q.ticket.as_deref().unwrap_or_default();
            return Ok(ok(pages::switch_page(
                &current.who(),
                &target.org_name,
                signed,
            )));
        }
    }
    sign_in(&req, &st, ticket).await
}

/// The session a sign-in link finds in the browser: `None` when there is none (no cookie, or
/// one that opens nothing); an error when it could not be read (the database is unavailable),
/// so the link answers that error rather than signing the browser in to the link's org without
/// the prompt, which a failed read must not skip.
fn current_session(read: Result<ConsoleSession>) -> Result<Option<ConsoleSession>> {
    match read {
        Ok(session) => Ok(Some(session)),
        Err(ConsoleError::SignedOut) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `Switch organisation`, from the page [`login`] showed: only now is the session replaced.
pub(super) async fn login_switch(
    f: CsrfForm,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let ticket = ticket_of(&st, f.form.get("ticket"))?;
    let r = sign_in(&req, &st, ticket).await?;
    Ok(f.answer(r))
}

pub(super) async fn logout(
    f: CsrfForm,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<Posted> {
    if let Some(c) = session_cookie(&req)
        && let Some(id) = session_id(&st, &c)
    {
        st.store.end_console_session(id).await?;
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

// --- Webhook and endpoints ---------------------------------------------------------------

/// An endpoint's settings page ([`Place`]): the org's first at `/console`, with the others
/// listed below it; any other at `/console/endpoints/{id}`.
pub(super) async fn webhook_view(
    st: &AppState,
    s: &ConsoleSession,
    place: Place,
    form: Option<WebhookForm>,
    notice: Option<&str>,
    secret: Option<(&str, &str)>,
) -> Result<HttpResponse> {
    let saved = st.store.webhook_status(place.at(s.org_id)).await?;
    if place.id.is_some() && saved.is_none() {
        return Err(ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND));
    }
    let form = form.unwrap_or_else(|| {
        saved
            .as_ref()
            .map(|w| WebhookForm::of(&w.webhook))
            .unwrap_or_else(WebhookForm::blank)
    });
    Ok(ok(pages::webhook_page(
        &s.who(),
        &pages::EndpointView {
            place: Some(place),
            saved: saved.as_ref(),
            form: &form,
            notice,
            secret,
        },
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
        "link-used" => Some(
            "That sign-in link was used already or has expired. You are still signed in: carry on here.",
        ),
        "endpoint-deleted" => Some(
            "Endpoint deleted. Its pending deliveries ended skipped (Endpoint deleted); it gets nothing more.",
        ),
        _ => None,
    }
}

/// The console's first page: the org's endpoints, the primary first.
pub(super) async fn endpoints_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let endpoints = st.store.list_endpoints(s.org_id).await?;
    Ok(ok(pages::endpoints_page(
        &s.who(),
        &endpoints,
        notice_text(req.query_string()),
    )))
}

pub(super) async fn webhook_get(
    s: ConsoleSession,
    place: Place,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    webhook_view(&st, &s, place, None, notice_text(req.query_string()), None).await
}

/// The settings form's fields, parsed as the API parses its body; refused, the form again as
/// sent, each problem beside its field. `description` is read on the pages that show it.
async fn settings_of(
    f: &CsrfForm,
    st: &AppState,
    description: bool,
) -> std::result::Result<WebhookSettings, WebhookForm> {
    let url = f.form.get("url").unwrap_or("").trim();
    let types = f.form.all("event_types");
    let enabled = f.form.get("enabled").is_some();
    let rate = f.form.get("max_per_second");
    let ordering = f.form.get("ordering");
    let text = description.then(|| f.form.get("description").unwrap_or(""));
    let pace = (rate, ordering);
    WebhookSettings::from_form(url, &types, enabled, pace, text, &st.egress)
        .await
        .map_err(|errors| WebhookForm {
            url: url.to_owned(),
            event_types: types.iter().filter_map(|t| t.parse().ok()).collect(),
            enabled,
            description: text.unwrap_or("").to_owned(),
            url_error: errors.url,
            types_error: errors.event_types,
            description_error: errors.description,
            max_per_second: rate.unwrap_or("").trim().to_owned(),
            ordering: ordering.unwrap_or("none").to_owned(),
            rate_error: errors.max_per_second,
            ordering_error: errors.ordering,
            ..Default::default()
        })
}

/// The endpoint's page after an action: its notice, and a secret to show once.
async fn shown(
    f: CsrfForm,
    st: &AppState,
    place: Place,
    notice: &str,
    secret: Option<(&str, &str)>,
) -> Result<Posted> {
    let r = webhook_view(st, &f.session, place, None, Some(notice), secret).await?;
    Ok(f.answer(r))
}

/// A page answered 422: what was sent could not be saved.
fn refused(mut r: HttpResponse) -> HttpResponse {
    *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    r
}

pub(super) async fn webhook_save(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let settings = match settings_of(&f, &st, place.id.is_some()).await {
        Ok(s) => s,
        Err(shown) => {
            let r = webhook_view(&st, &f.session, place, Some(shown), None, None).await?;
            return Ok(f.answer(refused(r)));
        }
    };
    let secret = match place.id {
        None => st.put_webhook(f.session.org_id, settings).await?.1,
        Some(_) => {
            let at = place.at(f.session.org_id);
            st.store
                .update_endpoint(at, settings.into_endpoint())
                .await?;
            None
        }
    };
    match secret {
        // Created: the signing secret exists from now on and is shown this once.
        Some(secret) => {
            let notice = "Saved. Your endpoint now receives the selected events.";
            shown(f, &st, place, notice, Some(("Signing secret", &secret))).await
        }
        None => Ok(f.answer(see_other(&format!("{}?done=saved", place.page())))),
    }
}

/// `Add endpoint`: the settings form, empty.
pub(super) async fn endpoint_new(s: ConsoleSession) -> Result<HttpResponse> {
    Ok(new_endpoint_page(&s, &WebhookForm::blank()))
}

fn new_endpoint_page(s: &ConsoleSession, form: &WebhookForm) -> HttpResponse {
    ok(pages::webhook_page(
        &s.who(),
        &pages::EndpointView {
            place: None,
            saved: None,
            form,
            notice: None,
            secret: None,
        },
    ))
}

/// A new endpoint of the org; its page then shows its signing secret, once.
pub(super) async fn endpoint_create(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let settings = match settings_of(&f, &st, true).await {
        Ok(s) => s,
        Err(shown) => return Ok(f.answer(refused(new_endpoint_page(&f.session, &shown)))),
    };
    let created = st
        .store
        .create_endpoint(f.session.org_id, settings.clone().into_endpoint())
        .await;
    let (endpoint, secret) = match created {
        Ok(c) => c,
        Err(qualifier_store::StoreError::LimitReached(m)) => {
            let shown = WebhookForm {
                form_error: Some(format!(
                    "{m}: an organisation has at most {} endpoints. Delete one to add another.",
                    st.store.max_endpoints
                )),
                ..WebhookForm::of_settings(&settings)
            };
            return Ok(f.answer(refused(new_endpoint_page(&f.session, &shown))));
        }
        Err(e) => return Err(e.into()),
    };
    let place = Place {
        id: Some(endpoint.id),
    };
    let notice = "Endpoint added. It receives the selected events from now on.";
    shown(f, &st, place, notice, Some(("Signing secret", &secret))).await
}

/// The question before `Delete endpoint`, as the console asks before every action that cannot
/// be undone: which endpoint, and what becomes of its waiting deliveries.
pub(super) async fn endpoint_delete_get(
    s: ConsoleSession,
    place: Place,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let endpoint = st
        .store
        .get_webhook(place.at(s.org_id))
        .await?
        .ok_or(ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND))?;
    Ok(ok(pages::delete_endpoint_page(&s.who(), &endpoint)))
}

/// `Delete endpoint`, confirmed: its pending deliveries end skipped in the same transaction.
pub(super) async fn endpoint_delete(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    st.store.delete_endpoint(place.at(f.session.org_id)).await?;
    Ok(f.answer(see_other("/console?done=endpoint-deleted")))
}

pub(super) async fn webhook_rotate(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let GraceWindow(grace) = GraceWindow::from_form(f.form.get("grace_seconds"))
        .map_err(|e| ConsoleError::BadRequest(e.to_string()))?;
    let (secret, previous) = st
        .store
        .rotate_webhook_secret(place.at(f.session.org_id), grace)
        .await?;
    let notice = match previous {
        Some(t) => format!(
            "Rotated. The previous secret keeps signing too until {}.",
            qualifier_domain::timefmt::format(t)
        ),
        None => "Rotated. The previous secret no longer signs anything.".to_owned(),
    };
    shown(
        f,
        &st,
        place,
        &notice,
        Some(("New signing secret", &secret)),
    )
    .await
}

pub(super) async fn webhook_certificate(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    let cert = f.form.get("certificate").unwrap_or("");
    let key = f.form.get("private_key").unwrap_or("");
    match crate::inputs::ClientCertificateInput::from_form(cert, key) {
        Ok(input) => {
            st.store
                .set_client_certificate(at, &input.certificate, &input.private_key, &input.info)
                .await?;
            let notice = "Client certificate saved. Every request from now on presents it.";
            shown(f, &st, place, notice, None).await
        }
        Err(e) => {
            let saved = st.store.get_webhook(at).await?;
            let shown = WebhookForm {
                cert_error: Some(e.to_string()),
                ..saved.as_ref().map(WebhookForm::of).unwrap_or_default()
            };
            let r = webhook_view(&st, &f.session, place, Some(shown), None, None).await?;
            Ok(f.answer(refused(r)))
        }
    }
}

pub(super) async fn webhook_certificate_remove(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    st.store
        .remove_client_certificate(place.at(f.session.org_id))
        .await?;
    let notice = "Client certificate removed. Requests present none from now on.";
    shown(f, &st, place, notice, None).await
}

pub(super) async fn webhook_test(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    let id = st.store.send_test_event(at, None).await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

/// `Check now`: the failing endpoint's next probe is due at once (a replica sends it within a
/// second or so); the page then shows the outcome.
pub(super) async fn webhook_check(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    // Nothing to probe is no error for the org's first endpoint (the page says so), but an id
    // that names no endpoint of the org is not found, as everywhere else.
    if place.id.is_some() && st.store.endpoint_key(at).await?.is_none() {
        return Err(ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND));
    }
    st.store.probe_now(at).await?;
    Ok(f.answer(see_other(&format!("{}?done=checking", place.page()))))
}

// --- Event catalogue -----------------------------------------------------------------------

pub(super) async fn events_get(s: ConsoleSession, st: web::Data<AppState>) -> Result<HttpResponse> {
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
pub(super) async fn events_test(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let t = crate::inputs::console_test_event_type(f.form.get("event_type"))?;
    let id = st.store.send_test_event(f.session.org_id, Some(t)).await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

// --- Tokens --------------------------------------------------------------------------------

pub(super) async fn tokens_get(
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

pub(super) async fn tokens_create(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    let s = &f.session;
    let new = match NewToken::from_form(f.form.get("name")) {
        Ok(n) => n,
        Err(e) => {
            let tokens = st.store.list_tokens(s.org_id).await?;
            let page = pages::tokens_page(&s.who(), &tokens, None, Some(&e.to_string()), None);
            return Ok(f.answer(super::page(StatusCode::UNPROCESSABLE_ENTITY, page)));
        }
    };
    let (_, secret) = st.issue_token(s.org_id, new).await?;
    let tokens = st.store.list_tokens(s.org_id).await?;
    let page = pages::tokens_page(&s.who(), &tokens, Some(&secret), None, None);
    Ok(f.answer(ok(page)))
}

pub(super) async fn tokens_revoke(
    f: CsrfForm,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let id = parse_id(&path, "Token not found")?;
    st.store.revoke_token(f.session.org_id, id).await?;
    Ok(f.answer(see_other("/console/tokens?done=revoked")))
}

// --- Deliveries ----------------------------------------------------------------------------

pub(super) async fn deliveries_get(
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
        endpoint_id: q
            .filter
            .endpoint_id
            .map(|e| e.to_string())
            .unwrap_or_default(),
    };
    let search = DeliverySearch::parse(req.query_string());
    let (rows, next, error) = match &search {
        // One page of matches: an id names one delivery, a lead a handful.
        Some(DeliverySearch { id: Ok(id), .. }) => {
            let rows = st.store.find_deliveries(s.org_id, *id, 100).await?;
            (rows, None, error)
        }
        _ => {
            let before = st.deliveries_cursor(&q, s.org_id).await?;
            let (rows, next) = st
                .store
                .list_deliveries(s.org_id, &q.filter, before, q.limit)
                .await?;
            let next = next.map(|seq| st.cursors.delivery(s.org_id, seq));
            (rows, next, error)
        }
    };
    // The chart counts the list's endpoint: the one asked for, else the primary (as the list).
    let hours = st
        .store
        .deliveries_by_hour(s.org_id, q.filter.endpoint_id)
        .await?;
    let endpoints = st.store.list_endpoints(s.org_id).await?;
    let view = pages::DeliveriesView {
        hours: &hours,
        endpoints: &endpoints,
        filter: &shown,
        search: search.as_ref(),
        rows: &rows,
        next: next.as_deref(),
        notice: notice_text(req.query_string()),
        filter_error: error.as_deref(),
    };
    Ok(ok(pages::deliveries_page(&s.who(), &view)))
}

pub(super) async fn delivery_get(
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

pub(super) async fn delivery_replay(
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
pub(super) async fn replay_dead_get(
    s: ConsoleSession,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let n = st
        .replay_matching(s.org_id, &ReplayFilter::all_dead(true))
        .await?
        .replayable();
    Ok(ok(pages::replay_dead_page(
        &s.who(),
        n,
        st.replay_rate_per_second,
    )))
}

pub(super) async fn replay_dead_post(f: CsrfForm, st: web::Data<AppState>) -> Result<Posted> {
    st.replay_matching(f.session.org_id, &ReplayFilter::all_dead(false))
        .await?;
    Ok(f.answer(see_other("/console/deliveries?done=replayed-all")))
}

#[cfg(test)]
mod tests;
