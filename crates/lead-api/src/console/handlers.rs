//! The console's pages and actions. Each parses its input with [`crate::inputs`] and calls the
//! same state and store functions as the internal API.

use actix_web::cookie::Cookie;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use time::OffsetDateTime;

use super::credentials::Kind;
use super::errors::{ConsoleError, Result};
use super::extract::{COOKIE, ConsoleSession, CsrfForm, Posted, cookie_for, session_cookie};
use super::pages::{self};
use super::{CSS, JS, catalogue, ok, see_other};
use crate::inputs::NewToken;
use crate::state::AppState;

mod deliveries;
mod endpoints;
mod receiver;
mod shared;
pub(super) use deliveries::{
    deliveries_get, delivery_get, delivery_replay, replay_dead_get, replay_dead_post,
};
pub(super) use endpoints::{
    endpoint_create, endpoint_delete, endpoint_delete_get, endpoint_new, endpoints_get,
    webhook_certificate, webhook_certificate_remove, webhook_check, webhook_get, webhook_rotate,
    webhook_save, webhook_test,
};
pub(super) use receiver::{webhook_filter, webhook_receiver};
use shared::{notice_text, parse_id};

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
        .console()
        .redeem_console_ticket(ticket)
        .await?
        .ok_or(ConsoleError::SignedOut)?;
    if let Some(old) = session_cookie(req)
        && let Some(id) = session_id(st, &old)
    {
        st.store.console().end_console_session(id).await?;
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

/// A used or expired sign-in link in a browser still signed in: the contract's 401 page, but
/// saying that the session goes on, with the way back to it (not "…or your session ended").
fn link_used(who: &pages::Who) -> HttpResponse {
    super::page(StatusCode::UNAUTHORIZED, pages::link_used_page(who))
}

/// Exchanges a ticket for a session cookie, then sends the browser to the console. Signed in
/// to another org already, the browser is asked first (docs/reliability.md, "Strangers, quotas and pages"): a link to another
/// org, sent by mistake or on purpose, must not silently swap the org an administrator works in.
pub(super) async fn login(req: HttpRequest, st: web::Data<AppState>) -> Result<HttpResponse> {
    let q = web::Query::<LoginQuery>::from_query(req.query_string())
        .map_err(|_| ConsoleError::SignedOut)?;
    // A link used already (or expired) is refused with 401 whoever opens it; in a browser
    // still signed in the page says the session goes on and links back to it, rather than
    // suggesting it ended. Without a session it is the usual signed-out page.
    let link = ticket_of(&st, q.ticket.as_deref());
    let current = match link {
        // A stranger's made-up link is refused before any session is read.
        Err(ConsoleError::SignedOut) if session_cookie(&req).is_none() => None,
        _ => current_session(ConsoleSession::of(&req).await)?,
    };
    let ticket = match (link, &current) {
        (Ok(t), _) => t,
        (Err(ConsoleError::SignedOut), Some(s)) => return Ok(link_used(&s.who())),
        (Err(e), _) => return Err(e),
    };
    if let Some(current) = current {
        let Some(target) = st.store.console().peek_console_ticket(ticket).await? else {
            return Ok(link_used(&current.who()));
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
        st.store.console().end_console_session(id).await?;
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

// --- Event catalogue -----------------------------------------------------------------------

pub(super) async fn events_get(s: ConsoleSession, st: web::Data<AppState>) -> Result<HttpResponse> {
    let subscribed = st
        .store
        .endpoints()
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
    let id = st
        .store
        .endpoints()
        .send_test_event(f.session.org_id, Some(t))
        .await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

// --- Tokens --------------------------------------------------------------------------------

pub(super) async fn tokens_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let tokens = st.store.console().list_tokens(s.org_id).await?;
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
            let tokens = st.store.console().list_tokens(s.org_id).await?;
            let page = pages::tokens_page(&s.who(), &tokens, None, Some(&e.to_string()), None);
            return Ok(f.answer(super::page(StatusCode::UNPROCESSABLE_ENTITY, page)));
        }
    };
    let (_, secret) = st.issue_token(s.org_id, new).await?;
    let tokens = st.store.console().list_tokens(s.org_id).await?;
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

#[cfg(test)]
mod tests;
