//! The form of an endpoint's receiver headers and credentials (`pages::receiver`): read into
//! the JSON the API takes, checked by the same rules (`crate::inputs::receiver_of`), and saved
//! with the endpoint's other settings as they are.

use actix_web::web;
use serde_json::{Map, Value, json};

use super::endpoints::{refuse, saved_at, webhook_view};
use crate::console::errors::Result;
use crate::console::extract::Form;
use crate::console::extract::{CsrfForm, Posted};
use crate::console::pages::WebhookForm;
use crate::console::place::Place;
use crate::console::see_other;
use crate::state::AppState;

/// At most this many header rows are read (the API's limit, and the blank rows beside it).
const MAX_ROWS: usize = qualifier_domain::receiver::MAX_HEADERS + 2;

/// The form as the API's JSON: every row with a name is a header; the auth of the chosen type
/// with its fields, optional ones left out when empty.
fn as_json(form: &Form) -> Map<String, Value> {
    let text = |k: &str| form.get(k).map(str::trim).unwrap_or("").to_owned();
    let rows: usize = text("header_rows").parse().unwrap_or(0).min(MAX_ROWS);
    let headers: Vec<Value> = (0..rows)
        .filter_map(|i| {
            let name = text(&format!("header_name_{i}"));
            // A value is kept as typed (its spaces may matter to the receiver).
            let value = form.get(&format!("header_value_{i}")).unwrap_or("");
            let secret = form.get(&format!("header_secret_{i}")).is_some();
            (!name.is_empty()).then(|| json!({"name": name, "value": value, "secret": secret}))
        })
        .collect();
    let kind = text("auth_type");
    let mut auth = Map::new();
    let mut put = |k: &str, optional: bool| {
        let v = text(&format!("auth_{k}"));
        if !(optional && v.is_empty()) {
            auth.insert(k.to_owned(), Value::String(v));
        }
    };
    match kind.as_str() {
        "basic" => {
            put("username", false);
            put("password", false);
        }
        "bearer" => put("token", false),
        "oauth2_client_credentials" => {
            for k in ["token_url", "client_id", "client_secret", "client_auth"] {
                put(k, false);
            }
            put("scope", true);
            put("audience", true);
        }
        _ => {}
    }
    let auth = match kind.as_str() {
        "basic" | "bearer" | "oauth2_client_credentials" => {
            auth.insert("type".into(), Value::String(kind));
            Value::Object(auth)
        }
        _ => Value::Null,
    };
    let mut obj = Map::new();
    obj.insert("headers".into(), Value::Array(headers));
    obj.insert("auth".into(), auth);
    obj
}

pub(in crate::console) async fn webhook_receiver(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    let saved = saved_at(&st, at).await?;
    let checked = crate::inputs::receiver_of(&as_json(&f.form), &st.egress).await;
    let saved_too = match checked {
        Ok(receiver) => save_receiver(&st, f.session.org_id, &place, &saved, receiver).await,
        Err(e) => Err(qualifier_store::StoreError::Invalid(
            qualifier_domain::FieldError::new(e.to_string()),
        )),
    };
    match saved_too {
        Ok(_) => Ok(f.answer(see_other(&format!("{}?done=receiver", place.page())))),
        Err(qualifier_store::StoreError::Invalid(e)) => {
            let shown = WebhookForm {
                receiver_error: Some(e.to_string()),
                ..WebhookForm::of(&saved)
            };
            refuse(f, &st, place, shown).await
        }
        Err(e) => Err(e.into()),
    }
}

/// The org's most recent events (its first endpoint's deliveries: every event has one),
/// against `filter`: what the filter form's test shows.
async fn tested(
    st: &AppState,
    org_id: uuid::Uuid,
    filter: Option<&qualifier_domain::filter::Filter>,
) -> Result<Vec<crate::console::pages::TestedEvent>> {
    const RECENT: i64 = 10;
    let (recent, _) = st
        .store
        .deliveries()
        .list_deliveries(
            org_id,
            &qualifier_store::deliveries::DeliveryFilter::default(),
            None,
            RECENT,
        )
        .await?;
    let mut out = Vec::with_capacity(recent.len());
    for d in recent {
        let body = st.store.deliveries().delivery_payload(org_id, d.id).await?;
        let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let lead = &event["data"]["lead"];
        let summary = [&lead["channel"], &lead["qualification_stage"]]
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        out.push(crate::console::pages::TestedEvent {
            event_type: d.event_type.as_str().to_owned(),
            occurred_at: event["occurred_at"].as_str().unwrap_or("").to_owned(),
            summary,
            matches: filter.is_none_or(|f| f.matches(&event)),
        });
    }
    Ok(out)
}

/// The filter form: `Test against recent events` shows what the typed filter would send
/// (nothing saved); `Save filter` saves it with the endpoint's other settings as they are.
/// Empty is no filter.
pub(in crate::console) async fn webhook_filter(
    f: CsrfForm,
    place: Place,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let at = place.at(f.session.org_id);
    let saved = saved_at(&st, at).await?;
    let draft = f.form.get("filter").unwrap_or("").trim().to_owned();
    let parsed = if draft.is_empty() {
        Ok(None)
    } else {
        serde_json::from_str::<Value>(&draft)
            .map_err(|e| format!("Invalid filter at filter: not JSON ({e})"))
            .and_then(|v| {
                qualifier_domain::filter::Filter::parse(&v)
                    .map(|c| Some((v, c)))
                    .map_err(|e| e.to_string())
            })
    };
    let mut form = WebhookForm {
        filter_draft: Some(draft.clone()),
        ..WebhookForm::of(&saved)
    };
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            form.filter_error = Some(e);
            return refuse(f, &st, place, form).await;
        }
    };
    if f.form.get("action") == Some("test") {
        form.filter_tested =
            Some(tested(&st, f.session.org_id, parsed.as_ref().map(|p| &p.1)).await?);
        let r = webhook_view(&st, &f.session, place, Some(form), None, None).await?;
        return Ok(f.answer(r));
    }
    let receiver = qualifier_store::webhooks::ReceiverSettings {
        filter: Some(parsed.map(|p| p.0)),
        ..Default::default()
    };
    let result = save_receiver(&st, f.session.org_id, &place, &saved, receiver).await;
    match result {
        Ok(()) => Ok(f.answer(see_other(&format!("{}?done=filter", place.page())))),
        Err(qualifier_store::StoreError::Conflict(m)) => {
            form.filter_error = Some(m);
            refuse(f, &st, place, form).await
        }
        Err(e) => Err(e.into()),
    }
}

/// Saves `receiver` on the endpoint at `place`, its other settings as `saved` holds them: the
/// org's webhook (its primary) when the place names no endpoint, else the endpoint named.
async fn save_receiver(
    st: &AppState,
    org: uuid::Uuid,
    place: &Place,
    saved: &qualifier_store::webhooks::Webhook,
    receiver: qualifier_store::webhooks::ReceiverSettings,
) -> std::result::Result<(), qualifier_store::StoreError> {
    let settings = qualifier_store::webhooks::EndpointSettings {
        url: saved.url.clone(),
        event_types: saved.event_types.clone(),
        enabled: saved.enabled,
        pace: saved.pace(),
        description: None,
        receiver,
    };
    let endpoints = st.store.endpoints();
    match place.id {
        None => endpoints.put_webhook(org, settings).await.map(|_| ()),
        Some(_) => endpoints
            .update_endpoint(place.at(org), settings)
            .await
            .map(|_| ()),
    }
}
