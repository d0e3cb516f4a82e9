//! The Deliveries pages: the list with its 24-hour chart, search and filters, one delivery with
//! its attempts, and the bulk replay's confirmation.

use maud::{Markup, html};
use qualifier_domain::EventType;
use qualifier_domain::health::EndpointState;
use qualifier_domain::pace::WaitingFor;
use qualifier_store::console::HourOfDeliveries;
use qualifier_store::deliveries::{Delivery, DeliveryDetail};
use qualifier_store::webhooks::WebhookStatus;
use strum::VariantArray;

use super::{Nav, Who, endpoint_name, endpoint_page, layout, ts};
use crate::inputs::DeliverySearch;

/// The deliveries list's filter values as given (already validated).
#[derive(Default, Clone)]
pub struct DeliveryFilterForm {
    pub status: String,
    pub event_type: String,
    /// Whose deliveries (empty: the org's first endpoint's, its webhook).
    pub endpoint_id: String,
}

/// What the Deliveries page shows.
pub struct DeliveriesView<'a> {
    pub filter: &'a DeliveryFilterForm,
    /// The search field's content, when a search was made (its rows are the matches).
    pub search: Option<&'a crate::inputs::DeliverySearch>,
    pub rows: &'a [Delivery],
    pub next: Option<&'a str>,
    pub notice: Option<&'a str>,
    pub filter_error: Option<&'a str>,
    /// The last 24 hours of the listed endpoint, oldest first (`Console::deliveries_by_hour`).
    pub hours: &'a [HourOfDeliveries],
    /// The org's endpoints, the primary first: the filter's choices, and the listed one's
    /// name and health.
    pub endpoints: &'a [WebhookStatus],
}

impl DeliveriesView<'_> {
    /// The endpoint whose deliveries are listed, and whether it is the primary: the one the
    /// filter names, else the primary (`None`: the named one is not the org's).
    fn listed(&self) -> Option<(&WebhookStatus, bool)> {
        if self.filter.endpoint_id.is_empty() {
            return self.endpoints.first().map(|e| (e, true));
        }
        self.endpoints
            .iter()
            .enumerate()
            .find(|(_, e)| e.webhook.id.to_string() == self.filter.endpoint_id)
            .map(|(i, e)| (e, i == 0))
    }
}

/// Totals of the chart's 24 hours.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DayTotals {
    pub succeeded: i64,
    pub failed_attempts: i64,
    pub dead: i64,
    pub skipped: i64,
    pub in_progress: i64,
}

impl DayTotals {
    pub fn of(hours: &[HourOfDeliveries]) -> DayTotals {
        let mut t = DayTotals::default();
        for h in hours {
            t.succeeded += h.succeeded;
            t.failed_attempts += h.failed_attempts;
            t.dead += h.dead;
            t.skipped += h.skipped;
            t.in_progress += h.in_progress;
        }
        t
    }

    /// Of the deliveries that finished (succeeded or dead), the share that succeeded, in whole
    /// percent; `None` before any finished. Skipped ones were never attempted, so they count
    /// for neither side.
    pub fn success_rate(&self) -> Option<i64> {
        let finished = self.succeeded + self.dead;
        (finished > 0).then(|| (self.succeeded * 100 + finished / 2) / finished)
    }
}

const CHART_SLOT: i64 = 26;
const CHART_BARS: i64 = 110;

/// One hour's stacked bar, bottom up: `(y, height, count, colour, what)` of each non-empty part.
fn stacked(
    h: &HourOfDeliveries,
    scale: &dyn Fn(i64) -> i64,
) -> Vec<(i64, i64, i64, &'static str, &'static str)> {
    let parts = [
        (h.succeeded, "#137333", "succeeded"),
        (h.dead, "#b3261e", "dead"),
        (h.skipped, "#9aa0a6", "skipped"),
        (h.in_progress, "#a8c7fa", "in progress"),
    ];
    let mut y = CHART_BARS;
    parts
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, colour, what)| {
            let height = scale(n).max(1);
            y -= height;
            (y, height, n, colour, what)
        })
        .collect()
}

/// The last 24 hours drawn on the server as SVG (no script, nothing the CSP has to allow):
/// per hour a stacked bar of the deliveries created in it by outcome, and beside it a thin bar
/// of their failed attempts. Every bar has a `title` (the numbers on hover); the sentence
/// under the chart gives the totals as text.
pub fn day_chart(hours: &[HourOfDeliveries]) -> Markup {
    let top = hours
        .iter()
        .map(|h| (h.succeeded + h.dead + h.skipped + h.in_progress).max(h.failed_attempts))
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |n: i64| n * CHART_BARS / top;
    let width = CHART_SLOT * hours.len() as i64;
    html! {
        svg.day xmlns="http://www.w3.org/2000/svg" width=(width) height=(CHART_BARS + 22)
            viewBox=(format!("0 0 {width} {}", CHART_BARS + 22)) role="img"
            aria-label="Deliveries per hour over the last 24 hours, by outcome" {
            line x1="0" y1=(CHART_BARS) x2=(width) y2=(CHART_BARS) stroke="#c4c7c5" {}
            @for (i, h) in hours.iter().enumerate() {
                @let x = i as i64 * CHART_SLOT + 2;
                @let hour = format!("{:02}:00", h.hour.hour());
                @for (y, height, n, colour, what) in stacked(h, &scale) {
                    rect x=(x) y=(y) width="16" height=(height) fill=(colour) {
                        title { (hour) " UTC: " (n) " " (what) }
                    }
                }
                @if h.failed_attempts > 0 {
                    @let height = scale(h.failed_attempts).max(1);
                    rect x=(x + 17) y=(CHART_BARS - height) width="6" height=(height) fill="#f9ab00" {
                        title { (hour) " UTC: " (h.failed_attempts) " failed attempts" }
                    }
                }
                @if i % 6 == 0 {
                    text x=(x) y=(CHART_BARS + 16) font-size="11" fill="#444746" { (hour) }
                }
            }
        }
    }
}

pub fn deliveries_page(who: &Who, v: &DeliveriesView) -> Markup {
    let content = html! {
        @if let Some(n) = v.notice { p.notice role="status" { (n) } }
        (day_summary(v.hours, v.listed()))
        (search_form(v.search))
        (filter_form(v.filter, v.endpoints, v.filter_error))
        p { a href=(replay_dead_href(v.filter)) { "Replay all dead" } " — shows how many first." }
        (deliveries_table(v.rows, v.search))
        @if let Some(h) = next_href(v.filter, v.next) { p { a href=(h) rel="next" { "Next page" } } }
    };
    layout("Deliveries", Nav::Deliveries, who, content)
}

/// "Replay all dead" of the endpoint whose list this is.
fn replay_dead_href(filter: &DeliveryFilterForm) -> String {
    if filter.endpoint_id.is_empty() {
        "/console/deliveries/replay-dead".to_owned()
    } else {
        format!(
            "/console/deliveries/replay-dead?endpoint_id={}",
            filter.endpoint_id
        )
    }
}

/// The next page's link: the filter as it is, and the cursor.
fn next_href(filter: &DeliveryFilterForm, next: Option<&str>) -> Option<String> {
    next.map(|c| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if !filter.status.is_empty() {
            q.append_pair("status", &filter.status);
        }
        if !filter.event_type.is_empty() {
            q.append_pair("event_type", &filter.event_type);
        }
        if !filter.endpoint_id.is_empty() {
            q.append_pair("endpoint_id", &filter.endpoint_id);
        }
        q.append_pair("cursor", c);
        format!("/console/deliveries?{}", q.finish())
    })
}

/// The last 24 hours of the listed endpoint: the chart, its totals and the endpoint's state.
fn day_summary(hours: &[HourOfDeliveries], listed: Option<(&WebhookStatus, bool)>) -> Markup {
    let totals = DayTotals::of(hours);
    html! {
        figure.chart {
            figcaption {
                "Last 24 hours (UTC)"
                @if let Some((e, _)) = listed { " · " span data-chart-endpoint=(e.webhook.id) { (endpoint_name(&e.webhook)) } }
            }
            (day_chart(hours))
            p.legend aria-hidden="true" {
                span.l-succeeded { "succeeded" } span.l-dead { "dead" } span.l-skipped { "skipped" }
                span.l-failed { "failed attempts" }
            }
            p data-day-totals data-succeeded=(totals.succeeded) data-failed-attempts=(totals.failed_attempts)
                data-dead=(totals.dead) data-skipped=(totals.skipped) data-in-progress=(totals.in_progress) {
                strong { (totals.succeeded) } " succeeded, "
                strong { (totals.failed_attempts) } " failed attempts, "
                strong { (totals.dead) } " dead, "
                strong { (totals.skipped) } " skipped"
                @if totals.in_progress > 0 { ", " strong { (totals.in_progress) } " in progress" }
                " · success rate "
                @match totals.success_rate() {
                    Some(r) => strong data-success-rate=(r) { (r) "%" },
                    None => "n/a (nothing finished)",
                }
            }
            @if let Some((e, primary)) = listed {
                @let h = &e.health;
                p data-endpoint-state=(h.state.as_str()) {
                    "Endpoint " strong { (endpoint_name(&e.webhook)) } @if primary { " (primary)" } ": "
                    @match h.state {
                        EndpointState::Healthy => span.status.status-succeeded { "healthy" },
                        EndpointState::Failing => span.status.status-failed { "failing" },
                        EndpointState::Disabled => span.status.status-dead { "disabled" },
                    }
                    @if let Some(t) = h.failing_since { " since " (ts(t)) }
                    " · " a href=(endpoint_page(&e.webhook, primary)) { "Endpoint settings" }
                }
            }
        }
    }
}

fn search_form(search: Option<&DeliverySearch>) -> Markup {
    let search_error = search.and_then(|s| s.id.err());
    html! {
        form.search method="get" action="/console/deliveries" role="search" {
            label for="q" { "Search" }
            input id="q" name="q" type="search" value=(search.map_or("", |s| s.text.as_str()))
                placeholder="delivery id (webhook-id), event id or lead id"
                aria-invalid=[search_error.map(|_| "true")]
                aria-describedby=[search_error.map(|_| "q-error")];
            button type="submit" { "Search" }
            @if search.is_some() { a href="/console/deliveries" { "Clear" } }
            @if let Some(e) = search_error { p.error id="q-error" role="alert" { (e) } }
        }
    }
}

fn filter_form(
    filter: &DeliveryFilterForm,
    endpoints: &[WebhookStatus],
    filter_error: Option<&str>,
) -> Markup {
    const STATUSES: [&str; 5] = ["pending", "succeeded", "failed", "dead", "skipped"];
    html! {
        form method="get" action="/console/deliveries" {
            div.field {
                label for="status" { "Status" }
                select id="status" name="status" {
                    option value="" selected[filter.status.is_empty()] { "Any" }
                    @for s in STATUSES { option value=(s) selected[filter.status == s] { (s) } }
                }
            }
            div.field {
                label for="event_type" { "Event type" }
                select id="event_type" name="event_type" {
                    option value="" selected[filter.event_type.is_empty()] { "Any" }
                    @for t in EventType::VARIANTS {
                        option value=(t.as_str()) selected[filter.event_type == t.as_str()] { (t.as_str()) }
                    }
                }
            }
            @if endpoints.len() > 1 {
                div.field {
                    label for="endpoint_id" { "Endpoint" }
                    select id="endpoint_id" name="endpoint_id" {
                        @for (i, e) in endpoints.iter().enumerate() {
                            @let id = e.webhook.id.to_string();
                            @let chosen = filter.endpoint_id == id || (i == 0 && filter.endpoint_id.is_empty());
                            option value=(id) selected[chosen] {
                                (endpoint_name(&e.webhook)) @if i == 0 { " (primary)" }
                            }
                        }
                    }
                }
            } @else if !filter.endpoint_id.is_empty() {
                input type="hidden" name="endpoint_id" value=(filter.endpoint_id);
            }
            button type="submit" { "Filter" }
            @if let Some(e) = filter_error { p.error role="alert" { (e) } }
        }
    }
}

fn deliveries_table(rows: &[Delivery], search: Option<&DeliverySearch>) -> Markup {
    let found_by_id = search.is_some_and(|s| s.id.is_ok());
    html! {
        @if rows.is_empty() {
            @if found_by_id {
                p { "No delivery of this organisation has that delivery, event or lead id." }
            } @else {
                p { "No deliveries." }
            }
        } @else {
            table {
                @if found_by_id {
                    caption { "Deliveries matching " code { (search.map_or("", |s| s.text.as_str())) } }
                } @else {
                    caption { "Deliveries, newest first" }
                }
                thead { tr { th scope="col" { "Created" } th scope="col" { "Event" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "Last response" } } }
                tbody {
                    @for d in rows {
                        tr data-delivery=(d.id) {
                            td { a href=(format!("/console/deliveries/{}", d.id)) { (ts(d.created_at)) } }
                            td { (d.event_type.as_str()) }
                            td {
                                span class=(format!("status status-{}", d.status.as_str())) { (d.status.as_str()) }
                                @if d.erased { " " span.status.status-erased data-erased { "erased" } }
                                @if let Some(w) = d.waiting_for {
                                    " " span.status data-waiting=(w.as_str()) {
                                        (match w {
                                            WaitingFor::Throttle => "waiting for the throttle",
                                            WaitingFor::EarlierDelivery => "waiting for an earlier delivery of its lead",
                                        })
                                    }
                                }
                            }
                            td { (d.attempts) }
                            td { (d.last_status_code.map(|c| c.to_string()).or_else(|| d.last_error.clone()).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
    }
}

/// The body as sent, indented for reading (the signature covers the exact bytes, which are
/// the compact form; the page says so).
fn pretty_json(bytes: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| String::from_utf8_lossy(bytes).into_owned())
}

/// "Attempt 2", or "Replay 1, attempt 2" once the delivery was replayed.
pub fn attempt_label(replay: u32, attempt: u32) -> String {
    if replay == 0 {
        format!("Attempt {attempt}")
    } else {
        format!("Replay {replay}, attempt {attempt}")
    }
}

pub fn delivery_page(
    who: &Who,
    d: &DeliveryDetail,
    payload: &[u8],
    notice: Option<&str>,
) -> Markup {
    let s = &d.delivery;
    // The replay call's own rule: the button is there exactly where a replay is accepted.
    let replayable = s.status.replayable() && !s.erased;
    let attempts = &d.attempt_log;
    let numbers = qualifier_domain::delivery::cycles(attempts);
    let content = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        dl {
            dt { "Delivery id (webhook-id)" } dd { code data-delivery-id { (s.id) } }
            dt { "Event" } dd { (s.event_type.as_str()) " · " code { (s.event_id) } }
            dt { "Status" } dd { span class=(format!("status status-{}", s.status.as_str())) { (s.status.as_str()) } }
            dt { "Created" } dd { (ts(s.created_at)) }
        }
        @if s.erased {
            p.notice data-erased role="status" {
                "Erased: the contact this event was about was forgotten. What is left is the event's id, type and time, and the lead's id; it is never sent again."
            }
        }
        h2 { "Payload" }
        p.hint { "Indented here; the request carries it compact, and the signatures cover those exact bytes." }
        pre.payload data-payload { (pretty_json(payload)) }
        h2 { "Attempts" }
        @if attempts.is_empty() {
            p { "No attempt yet." }
        } @else {
            // Newest first (the one being debugged is usually the last); a list without
            // numbers, since each entry is labelled with its own.
            ul.timeline {
                @for (a, (replay, n)) in attempts.iter().zip(numbers.iter().copied()).rev() {
                    li data-attempt {
                        p {
                            strong data-attempt-label { (attempt_label(replay, n)) }
                            " at " (ts(a.started_at)) ", "
                            (a.duration_ms) " ms: "
                            @let code = a.status_code.map(|c| format!("HTTP {c}"));
                            @let error = a.error.as_deref().filter(|e| Some(*e) != code.as_deref());
                            @if let Some(c) = &code { (c) }
                            @if let Some(e) = error { " " (e) }
                            @if let Some(k) = a.error_kind { " " span.kind { "(" (k.as_str()) ")" } }
                        }
                        @if let Some(body) = &a.response_body {
                            details open[a.error.is_some()] {
                                summary { "Response body" }
                                pre.response data-response-body { (body) }
                            }
                        }
                        @if !a.request_headers.is_empty() {
                            details {
                                summary { "Request headers" }
                                table.headers {
                                    @for (k, v) in &a.request_headers {
                                        tr { th scope="row" { (k) } td { code { (v) } } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if replayable {
            form method="post" action=(format!("/console/deliveries/{}/replay", s.id)) {
                input type="hidden" name="csrf" value=(who.csrf);
                button type="submit" { "Replay" }
            }
        }
        p { a href="/console/deliveries" { "All deliveries" } }
    };
    layout("Delivery", Nav::Deliveries, who, content)
}

/// The question before "Replay all dead": how many of the endpoint's dead deliveries would go
/// (`endpoint`: the endpoint the list showed, with its name; `None`: the primary's).
pub fn replay_dead_page(
    who: &Who,
    count: usize,
    rate: u32,
    endpoint: Option<(uuid::Uuid, &str)>,
) -> Markup {
    let back = match endpoint {
        Some((id, _)) => format!("/console/deliveries?endpoint_id={id}"),
        None => "/console/deliveries".to_owned(),
    };
    let content = html! {
        @if let Some((_, name)) = endpoint { p { "Endpoint " strong data-replay-endpoint { (name) } } }
        @if count == 0 {
            p { "No dead deliveries: nothing to replay." }
        } @else {
            p role="status" {
                strong { (count) }
                @if count == 1 { " dead delivery will be sent again, under its own delivery id, at most " }
                @else { " dead deliveries will be sent again, each under its own delivery id, at most " }
                (rate) " per second."
            }
            form method="post" action="/console/deliveries/replay-dead" {
                input type="hidden" name="csrf" value=(who.csrf);
                @if let Some((id, _)) = endpoint { input type="hidden" name="endpoint_id" value=(id); }
                button type="submit" { "Replay all dead" }
            }
        }
        p { a href=(back) { "Back to deliveries" } }
    };
    layout("Replay all dead", Nav::Deliveries, who, content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;

    fn hour(i: i64, succeeded: i64, dead: i64, failed_attempts: i64) -> HourOfDeliveries {
        HourOfDeliveries {
            hour: OffsetDateTime::UNIX_EPOCH + time::Duration::hours(i),
            succeeded,
            dead,
            skipped: 0,
            in_progress: 0,
            failed_attempts,
        }
    }

    #[test]
    fn the_day_chart_draws_each_hour_to_scale_with_its_numbers() {
        let mut hours: Vec<_> = (0..24).map(|i| hour(i, 0, 0, 0)).collect();
        hours[3] = hour(3, 8, 2, 10);
        hours[23] = hour(23, 4, 0, 0);
        let svg = day_chart(&hours).into_string();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            !svg.contains("<script") && !svg.contains("style="),
            "nothing the CSP blocks"
        );
        // The tallest column (10 deliveries, 10 failed attempts) fills the 110 px.
        assert!(
            svg.contains(r##"height="88" fill="#137333""##),
            "8 of 10: {svg}"
        );
        assert!(svg.contains(r##"height="22" fill="#b3261e""##), "2 of 10");
        assert!(svg.contains(r##"width="6" height="110" fill="#f9ab00""##));
        assert!(
            svg.contains("03:00 UTC: 8 succeeded") && svg.contains("03:00 UTC: 10 failed attempts")
        );
        assert_eq!(svg.matches("<rect").count(), 4);
        let t = DayTotals::of(&hours);
        assert_eq!((t.succeeded, t.dead, t.failed_attempts), (12, 2, 10));
        assert_eq!(t.success_rate(), Some(86), "12 of 14, rounded");
        assert_eq!(DayTotals::default().success_rate(), None);
        // An empty day still draws its axis and hour labels, and divides by nothing.
        let empty = day_chart(
            &hours
                .iter()
                .map(|h| hour(h.hour.hour() as i64, 0, 0, 0))
                .collect::<Vec<_>>(),
        )
        .into_string();
        assert_eq!(empty.matches("<rect").count(), 0);
        assert_eq!(empty.matches("<text").count(), 4);
    }

    #[test]
    fn replays_are_labelled_by_their_number() {
        assert_eq!(attempt_label(0, 3), "Attempt 3");
        assert_eq!(attempt_label(2, 1), "Replay 2, attempt 1");
    }
}
