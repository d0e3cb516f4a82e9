//! What a console handler can ask for in its signature: a signed-in administrator
//! ([`ConsoleSession`]), or a form sent from the console's own page ([`CsrfForm`]), and the
//! session cookie they read.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder, web};

use super::errors::{ConsoleError, Result};
use super::pages;
use super::place::Place;

/// The session cookie: `HttpOnly`, `SameSite=Lax`, eight hours; path `/console` where the
/// console is served over plain http (a developer's machine).
pub const COOKIE: &str = "qlf_console";
/// Its name where `Secure` applies (docs/reliability.md, "Strangers, quotas and pages"): the `__Host-` prefix makes a browser
/// refuse it unless it is `Secure`, has no `Domain` and has path `/`, so no sibling subdomain
/// or plain-http page can plant or shadow it.
pub const HOST_COOKIE: &str = "__Host-qlf_console";

/// The session cookie this request carries, under either name.
pub(super) fn session_cookie(req: &HttpRequest) -> Option<Cookie<'static>> {
    req.cookie(HOST_COOKIE).or_else(|| req.cookie(COOKIE))
}

/// A session cookie holding `value` (empty, with `make_removal`, to clear it); `secure` unless
/// the console is served over plain http. `Lax`, not `Strict`: a sign-in link followed from an
/// e-mail or another site must arrive with the session it would replace, so the console can ask
/// before switching organisation (a `Strict` cookie stayed behind and the link signed in
/// silently). Every state-changing request is a POST with the session's CSRF token, and a
/// cross-site POST carries no `Lax` cookie.
pub(super) fn cookie_for(secure: bool, value: String) -> Cookie<'static> {
    let (name, path) = if secure {
        (HOST_COOKIE, "/")
    } else {
        (COOKIE, "/console")
    };
    Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(actix_web::cookie::time::Duration::seconds(
            qualifier_store::console::SESSION_TTL.whole_seconds(),
        ))
        .finish()
}

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

    pub(super) async fn of(req: &HttpRequest) -> Result<ConsoleSession> {
        let st = crate::extract::state(req).map_err(|_| ConsoleError::Unavailable)?;
        let cookie = session_cookie(req).ok_or(ConsoleError::SignedOut)?;
        // Only a cookie this deployment issued, unexpired, is worth a query; a forged one is
        // refused here, however slow the database is.
        let id = st
            .credentials
            .open(
                super::credentials::Kind::Session,
                cookie.value(),
                time::OffsetDateTime::now_utc(),
            )
            .ok_or(ConsoleError::SignedOut)?;
        st.store
            .console()
            .console_session(id)
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
/// rules of every request (413, 408; docs/reliability.md, "Hostile input") as pages.
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

/// A page's endpoint from its path (`{endpoint}`, absent on the first endpoint's pages).
impl FromRequest for Place {
    type Error = ConsoleError;
    type Future = std::future::Ready<Result<Place>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(match req.match_info().get("endpoint") {
            None => Ok(Place { id: None }),
            Some(raw) => uuid::Uuid::parse_str(raw)
                .map(|id| Place { id: Some(id) })
                .map_err(|_| ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND)),
        })
    }
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
        assert_eq!(c.same_site(), Some(SameSite::Lax));
        assert_eq!(c.http_only(), Some(true));
        let c = cookie_for(false, "s".into());
        assert_eq!((c.name(), c.path()), ("qlf_console", Some("/console")));
    }
}
