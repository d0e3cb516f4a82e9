//! The console's Deliveries pages: the list with its chart, one delivery, replays.

use actix_web::{HttpRequest, HttpResponse, web};

use super::shared::{notice_text, parse_id};
use crate::console::errors::{ConsoleError, Result};
use crate::console::extract::{ConsoleSession, CsrfForm, Posted};
use crate::console::pages::{self, DeliveryFilterForm};
use crate::console::{ok, see_other};
use crate::inputs::{DeliveryQuery, DeliverySearch, ReplayFilter};
use crate::state::AppState;

pub(in crate::console) async fn deliveries_get(
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
            let rows = st
                .store
                .deliveries()
                .find_deliveries(s.org_id, *id, 100)
                .await?;
            (rows, None, error)
        }
        _ => {
            let before = st.deliveries_cursor(&q, s.org_id).await?;
            let (rows, next) = st
                .store
                .deliveries()
                .list_deliveries(s.org_id, &q.filter, before, q.limit)
                .await?;
            let next = next.map(|seq| st.cursors.delivery(s.org_id, seq));
            (rows, next, error)
        }
    };
    // The chart counts the list's endpoint: the one asked for, else the primary (as the list).
    let hours = st
        .store
        .console()
        .deliveries_by_hour(s.org_id, q.filter.endpoint_id)
        .await?;
    let endpoints = st.store.endpoints().list_endpoints(s.org_id).await?;
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

pub(in crate::console) async fn delivery_get(
    s: ConsoleSession,
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let id = parse_id(&path, "Delivery not found")?;
    let d = st.store.deliveries().get_delivery(s.org_id, id).await?;
    let payload = st.store.deliveries().delivery_payload(s.org_id, id).await?;
    Ok(ok(pages::delivery_page(
        &s.who(),
        &d,
        &payload,
        notice_text(req.query_string()),
    )))
}

pub(in crate::console) async fn delivery_replay(
    f: CsrfForm,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let id = parse_id(&path, "Delivery not found")?;
    st.store
        .deliveries()
        .replay_delivery(f.session.org_id, id, st.replay_rate_per_second)
        .await?;
    Ok(f.answer(see_other(&format!(
        "/console/deliveries/{id}?done=replayed"
    ))))
}

/// The count first (a dry run), then the button that replays them.
/// The endpoint a "Replay all dead" acts on: the one the list it came from shows (its
/// `endpoint_id`, parsed as the list parses it), else the primary. Another org's id matches
/// no delivery: the replay's statements read the session's org only.
fn replayed_endpoint(raw: Option<&str>) -> Result<Option<uuid::Uuid>> {
    raw.map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| parse_id(r, crate::console::place::Place::ENDPOINT_NOT_FOUND))
        .transpose()
}

#[derive(serde::Deserialize)]
struct OfEndpoint {
    endpoint_id: Option<String>,
}

pub(in crate::console) async fn replay_dead_get(
    s: ConsoleSession,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse> {
    let asked = web::Query::<OfEndpoint>::from_query(req.query_string())
        .map(|q| q.into_inner().endpoint_id)
        .unwrap_or(None);
    let endpoint = replayed_endpoint(asked.as_deref())?;
    let n = st
        .replay_matching(s.org_id, &ReplayFilter::all_dead_of(endpoint, true))
        .await?
        .replayable();
    let endpoints = st.store.endpoints().list_endpoints(s.org_id).await?;
    let named = match endpoint {
        None => endpoints.first(),
        Some(id) => endpoints.iter().find(|e| e.webhook.id == id),
    };
    let name = named.map(|e| pages::endpoint_name(&e.webhook));
    Ok(ok(pages::replay_dead_page(
        &s.who(),
        n,
        st.replay_rate_per_second,
        endpoint.zip(name.as_deref()),
    )))
}

pub(in crate::console) async fn replay_dead_post(
    f: CsrfForm,
    st: web::Data<AppState>,
) -> Result<Posted> {
    let endpoint = replayed_endpoint(f.form.get("endpoint_id"))?;
    st.replay_matching(
        f.session.org_id,
        &ReplayFilter::all_dead_of(endpoint, false),
    )
    .await?;
    let back = match endpoint {
        None => "/console/deliveries?done=replayed-all".to_owned(),
        Some(id) => format!("/console/deliveries?endpoint_id={id}&done=replayed-all"),
    };
    Ok(f.answer(see_other(&back)))
}
