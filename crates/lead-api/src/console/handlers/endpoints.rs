//! The console's endpoint pages and forms: the list, each endpoint's settings, its secret,
//! client certificate, test event and check, adding and deleting one ([`Place`] says which).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use super::shared::notice_text;
use crate::console::errors::{ConsoleError, Result};
use crate::console::extract::{ConsoleSession, CsrfForm, Posted};
use crate::console::pages::{self, WebhookForm};
use crate::console::place::Place;
use crate::console::{ok, see_other};
use crate::inputs::{FormTarget, GraceWindow, WebhookSettings};
use crate::state::AppState;

/// An endpoint's settings page ([`Place`]): the org's first at `/console`, any other
/// at `/console/endpoints/{id}`.
pub(in crate::console) async fn webhook_view(
    st: &AppState,
    s: &ConsoleSession,
    place: Place,
    form: Option<WebhookForm>,
    notice: Option<&str>,
    secret: Option<(&str, &str)>,
) -> Result<HttpResponse> {
    let saved = st
        .store
        .endpoints()
        .webhook_status(place.at(s.org_id))
        .await?;
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

/// The console's first page: the org's endpoints, the primary first.
pub(in crate::console) async fn endpoints_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let endpoints = st.store.endpoints().list_endpoints(s.org_id).await?;
    Ok(ok(pages::endpoints_page(
        &s.who(),
        &endpoints,
        notice_text(req.query_string()),
    )))
}

pub(in crate::console) async fn webhook_get(
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
    let fields = pages::DestinationFields::of_form(|k| f.form.get(k));
    let elsewhere = (fields.kind != "https").then(|| fields.as_json(&fields.kind));
    let to = match &elsewhere {
        Some(d) => FormTarget::Elsewhere(d),
        None => FormTarget::Url(url),
    };
    WebhookSettings::from_form(to, &types, enabled, pace, text, &st.egress)
        .await
        .map_err(|errors| WebhookForm {
            url: url.to_owned(),
            destination: fields,
            destination_error: errors.destination,
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
/// The endpoint at `at` as saved; not found when the org has none there.
pub(super) async fn saved_at(
    st: &AppState,
    at: qualifier_store::endpoints::EndpointRef,
) -> Result<qualifier_store::webhooks::Webhook> {
    let saved = st.store.endpoints().get_webhook(at).await?;
    saved.ok_or(ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND))
}

pub(super) fn refused(mut r: HttpResponse) -> HttpResponse {
    *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    r
}

/// The endpoint's page again with `form` (what was submitted, with the message of what was
/// refused), answered 422.
pub(super) async fn refuse(
    f: CsrfForm,
    st: &AppState,
    place: Place,
    form: WebhookForm,
) -> Result<Posted> {
    let r = webhook_view(st, &f.session, place, Some(form), None, None).await?;
    Ok(f.answer(refused(r)))
}

pub(in crate::console) async fn webhook_save(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let settings = match settings_of(&f, &st, place.id.is_some()).await {
        Ok(s) => s,
        Err(shown) => {
            return refuse(f, &st, place, shown).await;
        }
    };
    let secret = match place.id {
        None => st.put_webhook(f.session.org_id, settings).await?.1,
        Some(_) => {
            let at = place.at(f.session.org_id);
            st.store
                .endpoints()
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
pub(in crate::console) async fn endpoint_new(s: ConsoleSession) -> Result<HttpResponse> {
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
pub(in crate::console) async fn endpoint_create(
    f: CsrfForm,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let settings = match settings_of(&f, &st, true).await {
        Ok(s) => s,
        Err(shown) => return Ok(f.answer(refused(new_endpoint_page(&f.session, &shown)))),
    };
    let created = st
        .store
        .endpoints()
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
pub(in crate::console) async fn endpoint_delete_get(
    s: ConsoleSession,
    place: Place,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let endpoint = saved_at(&st, place.at(s.org_id)).await?;
    Ok(ok(pages::delete_endpoint_page(&s.who(), &endpoint)))
}

/// `Delete endpoint`, confirmed: its pending deliveries end skipped in the same transaction.
pub(in crate::console) async fn endpoint_delete(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    st.store
        .endpoints()
        .delete_endpoint(place.at(f.session.org_id))
        .await?;
    Ok(f.answer(see_other("/console/endpoints?done=endpoint-deleted")))
}

pub(in crate::console) async fn webhook_rotate(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let GraceWindow(grace) = GraceWindow::from_form(f.form.get("grace_seconds"))
        .map_err(|e| ConsoleError::BadRequest(e.to_string()))?;
    let (secret, previous) = st
        .store
        .endpoints()
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

pub(in crate::console) async fn webhook_certificate(
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
                .endpoints()
                .set_client_certificate(at, &input.certificate, &input.private_key, &input.info)
                .await?;
            let notice = "Client certificate saved. Every request from now on presents it.";
            shown(f, &st, place, notice, None).await
        }
        Err(e) => {
            let saved = st.store.endpoints().get_webhook(at).await?;
            let shown = WebhookForm {
                cert_error: Some(e.to_string()),
                ..saved.as_ref().map(WebhookForm::of).unwrap_or_default()
            };
            refuse(f, &st, place, shown).await
        }
    }
}

pub(in crate::console) async fn webhook_certificate_remove(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    st.store
        .endpoints()
        .remove_client_certificate(place.at(f.session.org_id))
        .await?;
    let notice = "Client certificate removed. Requests present none from now on.";
    shown(f, &st, place, notice, None).await
}

pub(in crate::console) async fn webhook_test(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    let id = st.store.endpoints().send_test_event(at, None).await?;
    Ok(f.answer(see_other(&format!("/console/deliveries/{id}"))))
}

/// `Check now`: the failing endpoint's next probe is due at once (a replica sends it within a
/// second or so); the page then shows the outcome.
pub(in crate::console) async fn webhook_check(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    // Nothing to probe is no error for the org's first endpoint (the page says so), but an id
    // that names no endpoint of the org is not found, as everywhere else.
    if place.id.is_some() && st.store.endpoints().endpoint_key(at).await?.is_none() {
        return Err(ConsoleError::NotFound(Place::ENDPOINT_NOT_FOUND));
    }
    st.store.endpoints().probe_now(at).await?;
    Ok(f.answer(see_other(&format!("{}?done=checking", place.page()))))
}
