//! The settings console, Integrations → Webhook (docs/console.md), on the public listener
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
pub mod credentials;
mod errors;
mod extract;
mod handlers;
mod pages;
mod place;

use actix_web::http::{StatusCode, header};
use actix_web::middleware::DefaultHeaders;
use actix_web::{HttpResponse, web};
use maud::Markup;

pub use errors::ConsoleError;
pub use extract::{COOKIE, ConsoleSession, CsrfForm, Form, HOST_COOKIE, Posted, post};
use handlers::*;

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
            // The console opens on the webhook, the org's first endpoint (docs/console.md,
            // "Pages");
            // `Endpoints` lists them all, each with a page of its own.
            .route("", web::get().to(webhook_get))
            .route("/webhook", web::get().to(webhook_get))
            .route("/login", web::get().to(login))
            .route("/login", post(login_switch))
            .route("/logout", post(logout))
            .configure(|c| endpoint_forms(c, "/webhook"))
            // Every other endpoint of the org: the same page and forms, by id ([`place::Place`]),
            // and `new` before `{endpoint}`, which would match it.
            .route("/endpoints/new", web::get().to(endpoint_new))
            .route("/endpoints", web::get().to(endpoints_get))
            .route("/endpoints", post(endpoint_create))
            .route("/endpoints/{endpoint}", web::get().to(webhook_get))
            .configure(|c| endpoint_forms(c, "/endpoints/{endpoint}"))
            .route(
                "/endpoints/{endpoint}/delete",
                web::get().to(endpoint_delete_get),
            )
            .route("/endpoints/{endpoint}/delete", post(endpoint_delete))
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

/// The forms of an endpoint's page, posted below `base`: the org's first endpoint's at
/// `/webhook`, any other's at `/endpoints/{endpoint}` ([`place::Place`] tells them apart).
fn endpoint_forms(cfg: &mut web::ServiceConfig, base: &str) {
    let at = |rest: &str| format!("{base}{rest}");
    cfg.route(base, post(webhook_save))
        .route(&at("/rotate"), post(webhook_rotate))
        .route(&at("/test"), post(webhook_test))
        .route(&at("/client-certificate"), post(webhook_certificate))
        .route(
            &at("/client-certificate/remove"),
            post(webhook_certificate_remove),
        )
        .route(&at("/check"), post(webhook_check))
        .route(&at("/receiver"), post(webhook_receiver))
        .route(&at("/filter"), post(webhook_filter));
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
