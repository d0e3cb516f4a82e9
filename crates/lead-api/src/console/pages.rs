//! The console's HTML (maud escapes every interpolated value). No inline script or style: the
//! CSP is `default-src 'self'`, so the stylesheet and the copy button's script are static files.

use maud::{DOCTYPE, Markup, html};
use qualifier_domain::EventType;
use qualifier_domain::health::{EndpointHealth, EndpointState};
use qualifier_store::console::{HourOfDeliveries, TokenListing};
use qualifier_store::deliveries::{Delivery, DeliveryDetail};
use qualifier_store::webhooks::{Webhook, WebhookStatus};
use strum::VariantArray;
use time::OffsetDateTime;

/// Which navigation link is the current page.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Webhook,
    Tokens,
    Deliveries,
    Events,
}

fn ts(t: OffsetDateTime) -> String {
    qualifier_domain::timefmt::format(t)
}

/// Who a signed-in page is for: the session's CSRF token for its forms, and the org's name,
/// shown on every page (docs/reliability.md, "Strangers, quotas and pages").
pub struct Who<'a> {
    pub csrf: &'a str,
    pub org_name: &'a str,
}

/// The frame of every signed-in page: the org, navigation, sign-out, and the page's content.
pub fn layout(title: &str, nav: Nav, who: &Who, content: Markup) -> Markup {
    let link = |n: Nav, href: &str, label: &str| {
        html! {
            @if n == nav {
                a href=(href) aria-current="page" { (label) }
            } @else {
                a href=(href) { (label) }
            }
        }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Qualifier settings" }
                link rel="stylesheet" href="/console/static/console.css";
                script src="/console/static/console.js" defer {}
            }
            body {
                header {
                    p.crumb { "Settings · Integrations" }
                    p.org { "Organisation: " strong data-org { (who.org_name) } }
                    nav aria-label="Integrations" {
                        (link(Nav::Webhook, "/console", "Webhook"))
                        (link(Nav::Tokens, "/console/tokens", "API tokens"))
                        (link(Nav::Deliveries, "/console/deliveries", "Deliveries"))
                        (link(Nav::Events, "/console/events", "Event types"))
                    }
                    form method="post" action="/console/logout" {
                        input type="hidden" name="csrf" value=(who.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
                main { h1 { (title) } (content) }
            }
        }
    }
}

/// A sign-in link for another org while signed in: name both, switch only on the button.
pub fn switch_page(who: &Who, target_org: &str, ticket: &str) -> Markup {
    let content = html! {
        p role="alert" {
            "You are signed in to " strong { (who.org_name) } ". This link signs you in to "
            strong data-target-org { (target_org) } " instead."
        }
        p { "Switch only if you meant to manage that organisation: its settings, tokens and deliveries are not yours to copy into your own systems." }
        form method="post" action="/console/login" {
            input type="hidden" name="csrf" value=(who.csrf);
            input type="hidden" name="ticket" value=(ticket);
            button type="submit" { "Switch organisation" }
        }
        p { a href="/console" { "Stay in " (who.org_name) } }
    };
    layout("Switch organisation?", Nav::Webhook, who, content)
}

/// A page for someone who is not (or no longer) signed in, or a refused request.
pub fn plain(title: &str, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · Qualifier settings" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body { main { h1 { (title) } p { (message) } } }
        }
    }
}

/// A secret shown once, with a copy button (docs/console.md: `data-secret`).
pub fn secret_once(label: &str, secret: &str, note: &str) -> Markup {
    html! {
        section.secret aria-label=(label) {
            h2 { (label) }
            p { (note) }
            p.secret-row {
                code data-secret id="secret" { (secret) }
                button type="button" data-copy="secret" { "Copy" }
            }
        }
    }
}

/// What the webhook form shows: the saved settings or what was just submitted, and the message
/// of each field that was refused.
#[derive(Default)]
pub struct WebhookForm {
    pub url: String,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    pub url_error: Option<String>,
    pub types_error: Option<String>,
    pub form_error: Option<String>,
}

impl WebhookForm {
    pub fn of(w: &Webhook) -> Self {
        WebhookForm {
            url: w.url.clone(),
            event_types: w.event_types.clone(),
            enabled: w.enabled,
            ..Default::default()
        }
    }
}

/// The banner of a failing or disabled endpoint (docs/delivery.md, "Endpoint health"): since when, the last
/// error, the next probe, and `Check now` while it fails.
fn health_banner(csrf: &str, h: &EndpointHealth) -> Markup {
    let opt = |t: Option<OffsetDateTime>| t.map(ts).unwrap_or_else(|| "—".to_owned());
    html! {
        @match h.state {
            EndpointState::Healthy => {}
            EndpointState::Failing => {
                section.banner.failing role="alert" aria-labelledby="health-h" {
                    h2 id="health-h" { "Your endpoint is failing" }
                    p { "Deliveries are waiting, none is lost and none uses up its attempts. We check your endpoint on our own and send everything that waited, oldest first, as soon as it answers 2xx." }
                    dl {
                        dt { "Failing since" } dd { (opt(h.failing_since)) }
                        dt { "Last error" } dd { (h.last_error.as_deref().unwrap_or("—")) }
                        dt { "Next check" } dd { (opt(h.next_probe_at)) }
                    }
                    form method="post" action="/console/webhook/check" {
                        input type="hidden" name="csrf" value=(csrf);
                        button type="submit" { "Check now" }
                    }
                }
            }
            EndpointState::Disabled => {
                section.banner.disabled role="alert" aria-labelledby="health-h" {
                    h2 id="health-h" { "Your endpoint is disabled" }
                    p { (h.disabled_reason.as_deref().unwrap_or("Disabled.")) }
                    dl {
                        dt { "Last error" } dd { (h.last_error.as_deref().unwrap_or("—")) }
                    }
                    p { "Deliveries end skipped while it is disabled. Tick Enabled and save to turn it back on; then replay the skipped deliveries from the Deliveries page or the API." }
                }
            }
        }
    }
}

pub fn webhook_page(
    who: &Who,
    saved: Option<&WebhookStatus>,
    form: &WebhookForm,
    notice: Option<&str>,
    secret: Option<(&str, &str)>,
) -> Markup {
    let content = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        @if let Some(w) = saved { (health_banner(who.csrf, &w.health)) }
        @if let Some((label, s)) = secret {
            (secret_once(label, s, "Shown once: copy it into your receiver's configuration now. It verifies the webhook-signature header (Standard Webhooks) and X-Qualifier-Signature."))
        }
        @if let Some(e) = &form.form_error { p.error role="alert" { (e) } }
        form method="post" action="/console/webhook" novalidate {
            input type="hidden" name="csrf" value=(who.csrf);
            div.field {
                label for="url" { "Endpoint URL" }
                input type="url" id="url" name="url" value=(form.url) placeholder="https://crm.example.com/hooks/qualifier"
                    aria-describedby=[form.url_error.as_ref().map(|_| "url-error")]
                    aria-invalid=[form.url_error.as_ref().map(|_| "true")];
                @if let Some(e) = &form.url_error { p.error id="url-error" { (e) } }
            }
            fieldset aria-describedby=[form.types_error.as_ref().map(|_| "types-error")] {
                legend { "Event types" }
                @for t in EventType::VARIANTS {
                    div.check {
                        input type="checkbox" id=(format!("type-{}", t.as_str())) name="event_types"
                            value=(t.as_str()) checked[form.event_types.contains(t)];
                        label for=(format!("type-{}", t.as_str())) { (t.as_str()) }
                    }
                }
                @if let Some(e) = &form.types_error { p.error id="types-error" { (e) } }
            }
            div.check {
                input type="checkbox" id="enabled" name="enabled" value="true" checked[form.enabled];
                label for="enabled" { "Enabled" }
            }
            button type="submit" { "Save" }
        }
        @if let Some(w) = saved {
            section aria-labelledby="secret-h" {
                h2 id="secret-h" { "Signing secret" }
                p { "Rotating makes a new secret at once. During the grace window deliveries carry a signature with the previous secret too, so receivers keep verifying while you deploy the new one." }
                form method="post" action="/console/webhook/rotate" {
                    input type="hidden" name="csrf" value=(who.csrf);
                    div.field {
                        label for="grace" { "Grace window" }
                        select id="grace" name="grace_seconds" {
                            option value="86400" selected { "1 day (default)" }
                            option value="3600" { "1 hour" }
                            option value="604800" { "7 days" }
                            option value="0" { "None: stop the old secret now (leaked secret)" }
                        }
                    }
                    button type="submit" { "Rotate secret" }
                }
            }
            section aria-labelledby="test-h" {
                h2 id="test-h" { "Test" }
                p { "Sends an example event, signed like any other, marked X-Qualifier-Test: true." }
                form method="post" action="/console/webhook/test" {
                    input type="hidden" name="csrf" value=(who.csrf);
                    button type="submit" { "Send test event" }
                }
                p.meta { "Last saved " (ts(w.webhook.updated_at)) }
            }
        }
    };
    layout("Webhook", Nav::Webhook, who, content)
}

pub fn tokens_page(
    who: &Who,
    tokens: &[TokenListing],
    created: Option<&str>,
    name_error: Option<&str>,
    notice: Option<&str>,
) -> Markup {
    let content = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        @if let Some(s) = created {
            (secret_once("New API token", s, "Shown once: store it in your integration's secret store now. Use it as a Bearer token."))
        }
        form method="post" action="/console/tokens" {
            input type="hidden" name="csrf" value=(who.csrf);
            div.field {
                label for="token-name" { "Token name" }
                input type="text" id="token-name" name="name" maxlength="200"
                    aria-describedby=[name_error.map(|_| "name-error")];
                @if let Some(e) = name_error { p.error id="name-error" { (e) } }
            }
            button type="submit" { "Create token" }
        }
        @if tokens.is_empty() {
            p { "No API tokens yet." }
        } @else {
            table {
                caption { "Active tokens" }
                thead { tr { th scope="col" { "Name" } th scope="col" { "Created" } th scope="col" { "Last used" } th scope="col" { span.visually-hidden { "Actions" } } } }
                tbody {
                    @for t in tokens {
                        tr {
                            td { (t.name.as_deref().unwrap_or("(unnamed)")) }
                            td { (ts(t.created_at)) }
                            td { (t.last_used_at.map(ts).unwrap_or_else(|| "never".into())) }
                            td {
                                form method="post" action=(format!("/console/tokens/{}/revoke", t.id)) {
                                    input type="hidden" name="csrf" value=(who.csrf);
                                    button type="submit" aria-label=(format!("Revoke {}", t.name.as_deref().unwrap_or("unnamed token"))) { "Revoke" }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout("API tokens", Nav::Tokens, who, content)
}

/// The deliveries list's filter values as given (already validated).
#[derive(Default, Clone)]
pub struct DeliveryFilterForm {
    pub status: String,
    pub event_type: String,
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
    /// The last 24 hours, oldest first (`Store::deliveries_by_hour`).
    pub hours: &'a [HourOfDeliveries],
    pub health: Option<&'a EndpointHealth>,
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
    let DeliveriesView {
        filter,
        search,
        rows,
        next,
        notice,
        filter_error,
        hours,
        health,
    } = *v;
    let totals = DayTotals::of(hours);
    let search_error = search.and_then(|s| s.id.err());
    const STATUSES: [&str; 5] = ["pending", "succeeded", "failed", "dead", "skipped"];
    let next_href = next.map(|c| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if !filter.status.is_empty() {
            q.append_pair("status", &filter.status);
        }
        if !filter.event_type.is_empty() {
            q.append_pair("event_type", &filter.event_type);
        }
        q.append_pair("cursor", c);
        format!("/console/deliveries?{}", q.finish())
    });
    let content = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        figure.chart {
            figcaption { "Last 24 hours (UTC)" }
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
            @if let Some(h) = health {
                p data-endpoint-state=(h.state.as_str()) {
                    "Endpoint: "
                    @match h.state {
                        EndpointState::Healthy => span.status.status-succeeded { "healthy" },
                        EndpointState::Failing => span.status.status-failed { "failing" },
                        EndpointState::Disabled => span.status.status-dead { "disabled" },
                    }
                    @if let Some(t) = h.failing_since { " since " (ts(t)) }
                    " · " a href="/console" { "Webhook settings" }
                }
            }
        }
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
            button type="submit" { "Filter" }
            @if let Some(e) = filter_error { p.error role="alert" { (e) } }
        }
        p { a href="/console/deliveries/replay-dead" { "Replay all dead" } " — shows how many first." }
        @if rows.is_empty() {
            @if search.is_some_and(|s| s.id.is_ok()) {
                p { "No delivery of this organisation has that delivery, event or lead id." }
            } @else {
                p { "No deliveries." }
            }
        } @else {
            table {
                @if search.is_some_and(|s| s.id.is_ok()) {
                    caption { "Deliveries matching " code { (search.map_or("", |s| s.text.as_str())) } }
                } @else {
                    caption { "Deliveries, newest first" }
                }
                thead { tr { th scope="col" { "Created" } th scope="col" { "Event" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "Last response" } } }
                tbody {
                    @for d in rows {
                        tr {
                            td { a href=(format!("/console/deliveries/{}", d.id)) { (ts(d.created_at)) } }
                            td { (d.event_type.as_str()) }
                            td { span class=(format!("status status-{}", d.status.as_str())) { (d.status.as_str()) } }
                            td { (d.attempts) }
                            td { (d.last_status_code.map(|c| c.to_string()).or_else(|| d.last_error.clone()).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
        @if let Some(h) = next_href { p { a href=(h) rel="next" { "Next page" } } }
    };
    layout("Deliveries", Nav::Deliveries, who, content)
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
    let replayable = s.status.replayable();
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

pub fn replay_dead_page(who: &Who, count: usize, rate: u32) -> Markup {
    let content = html! {
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
                button type="submit" { "Replay all dead" }
            }
        }
        p { a href="/console/deliveries" { "Back to deliveries" } }
    };
    layout("Replay all dead", Nav::Deliveries, who, content)
}

#[cfg(test)]
mod tests {
    use super::*;

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
