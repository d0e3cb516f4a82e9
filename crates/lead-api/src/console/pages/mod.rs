//! The console's HTML (maud escapes every interpolated value). No inline script or style: the
//! CSP is `default-src 'self'`, so the stylesheet and the copy button's script are static files.

use maud::{DOCTYPE, Markup, html};
use qualifier_domain::EventType;
use qualifier_domain::health::{EndpointHealth, EndpointState};
use qualifier_store::console::TokenListing;
use qualifier_store::webhooks::{Webhook, WebhookStatus};
use strum::VariantArray;
use time::OffsetDateTime;

use super::place::Place;

mod deliveries;
mod destination;
mod receiver;

pub use deliveries::{
    DeliveriesView, DeliveryFilterForm, deliveries_page, delivery_page, replay_dead_page,
};
pub use destination::DestinationFields;
pub use receiver::TestedEvent;

/// Which navigation link is the current page.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Webhook,
    Endpoints,
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
                        (link(Nav::Endpoints, "/console/endpoints", "Endpoints"))
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

/// A sign-in link used already or expired, opened in a browser still signed in (answered 401,
/// as every used link is): the session goes on, and the way back to it.
pub fn link_used_page(who: &Who) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "Link already used · Qualifier settings" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body {
                main {
                    h1 { "Link already used" }
                    p role="status" {
                        "That sign-in link was used already or has expired. You are still signed in to "
                        strong data-org { (who.org_name) } "."
                    }
                    p { a href="/console" { "Back to the settings" } }
                }
            }
        }
    }
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
    /// Where it sends: `https` (to the url) or another type, with that type's fields.
    pub destination: DestinationFields,
    pub destination_error: Option<String>,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    /// An endpoint's description (shown on the pages of endpoints other than the first).
    pub description: String,
    pub url_error: Option<String>,
    pub types_error: Option<String>,
    pub description_error: Option<String>,
    /// The throttle as typed (empty: none) and the ordering's name.
    pub max_per_second: String,
    pub ordering: String,
    pub rate_error: Option<String>,
    pub ordering_error: Option<String>,
    pub form_error: Option<String>,
    /// Why the client certificate form was refused (the API's 422 message).
    pub cert_error: Option<String>,
    /// Why the headers and credentials form was refused (the API's 422 message).
    pub receiver_error: Option<String>,
    /// The filter as typed (shown instead of the saved one), why it was refused, and what
    /// its test against recent events found.
    pub filter_draft: Option<String>,
    pub filter_error: Option<String>,
    pub filter_tested: Option<Vec<TestedEvent>>,
}

impl WebhookForm {
    pub fn of(w: &Webhook) -> Self {
        WebhookForm {
            url: w.url.clone(),
            destination: DestinationFields::of_shown(&w.destination),
            event_types: w.event_types.clone(),
            enabled: w.enabled,
            description: w.description.clone(),
            max_per_second: w
                .max_per_second
                .map(|r| r.get().to_string())
                .unwrap_or_default(),
            ordering: w.ordering.as_str().to_owned(),
            ..Default::default()
        }
    }

    /// A new endpoint's form: enabled, every event type.
    pub fn blank() -> Self {
        WebhookForm {
            enabled: true,
            event_types: EventType::VARIANTS.to_vec(),
            ..Default::default()
        }
    }

    /// Settings that were valid but not saved (the endpoint limit), shown as sent.
    pub fn of_settings(s: &crate::inputs::WebhookSettings) -> Self {
        WebhookForm {
            url: s.url.as_ref().map(|u| u.as_str()).unwrap_or("").to_owned(),
            event_types: s.event_types.clone(),
            enabled: s.enabled,
            description: s.description.clone().unwrap_or_default(),
            max_per_second: s
                .pace
                .max_per_second
                .map(|r| r.get().to_string())
                .unwrap_or_default(),
            ordering: s.pace.ordering.as_str().to_owned(),
            ..Default::default()
        }
    }
}

/// The banner of a failing or disabled endpoint (docs/delivery.md, "Endpoint health"): since when, the last
/// error, the next probe, and `Check now` while it fails.
fn health_banner(csrf: &str, actions: &str, h: &EndpointHealth) -> Markup {
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
                    form method="post" action=(format!("{actions}/check")) {
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

/// What an endpoint's settings page shows.
pub struct EndpointView<'a> {
    /// The saved endpoint the page is about; `None`: the form that adds one.
    pub place: Option<Place>,
    pub saved: Option<&'a WebhookStatus>,
    pub form: &'a WebhookForm,
    pub notice: Option<&'a str>,
    pub secret: Option<(&'a str, &'a str)>,
}

/// An endpoint's settings (docs/console.md): the URL, event types, pace and order, the signing
/// secret, the client certificate, a test event and a link to its deliveries. The org's first
/// endpoint, its webhook, has no description and cannot be deleted (the v1.0 `webhook` routes
/// name it); every other endpoint's page also has its description and `Delete endpoint…`.
pub fn webhook_page(who: &Who, v: &EndpointView) -> Markup {
    let form = v.form;
    let first = matches!(v.place, Some(Place { id: None }));
    let (save_to, actions) = match &v.place {
        Some(p) => (p.actions(), p.actions()),
        None => ("/console/endpoints".to_owned(), String::new()),
    };
    let title = match (&v.place, v.saved) {
        (None, _) => "Add endpoint".to_owned(),
        (Some(Place { id: None }), _) => "Webhook".to_owned(),
        (Some(_), Some(w)) if !w.webhook.description.is_empty() => {
            format!("Endpoint: {}", w.webhook.description)
        }
        (Some(_), _) => "Endpoint".to_owned(),
    };
    let content = html! {
        @if let Some(n) = v.notice { p.notice role="status" { (n) } }
        @if let Some(w) = v.saved { (health_banner(who.csrf, &actions, &w.health)) }
        @if let Some((label, s)) = v.secret {
            (secret_once(label, s, "Shown once: copy it into your receiver's configuration now. It verifies the webhook-signature header (Standard Webhooks) and X-Qualifier-Signature."))
        }
        @if let Some(e) = &form.form_error { p.error role="alert" { (e) } }
        p { a href="/console/endpoints" { "All endpoints" } }
        // The address of the page shown, when it answers a form posted elsewhere (a new
        // endpoint's page answers `POST /console/endpoints`): console.js puts it in the
        // address bar, so a reload shows the page and never posts again.
        @if let Some(p) = &v.place { span hidden data-page-url=(p.page()) {} }
        form method="post" action=(save_to) novalidate {
            input type="hidden" name="csrf" value=(who.csrf);
            div.field {
                label for="url" { "Endpoint URL" }
                input type="url" id="url" name="url" value=(form.url) placeholder="https://crm.example.com/hooks/qualifier"
                    aria-describedby=[form.url_error.as_ref().map(|_| "url-error")]
                    aria-invalid=[form.url_error.as_ref().map(|_| "true")];
                @if let Some(e) = &form.url_error { p.error id="url-error" { (e) } }
            }
            (destination::destination_fields(form))
            @if !first {
                div.field {
                    label for="description" { "Description" }
                    input type="text" id="description" name="description" maxlength="255" value=(form.description)
                        placeholder="Data warehouse"
                        aria-describedby=[form.description_error.as_ref().map(|_| "description-error")]
                        aria-invalid=[form.description_error.as_ref().map(|_| "true")];
                    @if let Some(e) = &form.description_error { p.error id="description-error" { (e) } }
                }
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
            div.field {
                label for="max_per_second" { "Requests per second at most" }
                input type="number" id="max_per_second" name="max_per_second" min="1" max="1000"
                    value=(form.max_per_second) placeholder="No limit"
                    aria-describedby=(if form.rate_error.is_some() { "rate-help rate-error" } else { "rate-help" })
                    aria-invalid=[form.rate_error.as_ref().map(|_| "true")];
                p.hint id="rate-help" { "A throttle for your endpoint: deliveries, replays, test events and checks together never exceed this many requests in a second. Those waiting keep their attempts and arrive in event order. Leave empty for no limit." }
                @if let Some(e) = &form.rate_error { p.error id="rate-error" { (e) } }
            }
            div.field {
                label for="ordering" { "Order" }
                select id="ordering" name="ordering"
                    aria-describedby=(if form.ordering_error.is_some() { "ordering-help ordering-error" } else { "ordering-help" }) {
                    option value="none" selected[form.ordering != "per_lead"] { "None: each delivery as soon as it can go" }
                    option value="per_lead" selected[form.ordering == "per_lead"] { "Per lead: one lead's deliveries one at a time, in event order" }
                }
                p.hint id="ordering-help" { "Per lead: a delivery waits while an earlier delivery of the same lead is pending or retrying, so your CRM applies each lead's changes in sequence. Other leads never wait for it. Replays and test events are sent outside the order." }
                @if let Some(e) = &form.ordering_error { p.error id="ordering-error" { (e) } }
            }
            button type="submit" { @if v.place.is_none() { "Add endpoint" } @else { "Save" } }
        }
        @if let Some(w) = v.saved {
            section aria-labelledby="secret-h" {
                h2 id="secret-h" { "Signing secret" }
                p { "Rotating makes a new secret at once. During the grace window deliveries carry a signature with the previous secret too, so receivers keep verifying while you deploy the new one." }
                form method="post" action=(format!("{actions}/rotate")) {
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
            (client_certificate_section(who.csrf, &actions, w.webhook.client_certificate.as_ref(), form.cert_error.as_deref()))
            (receiver::receiver_section(who.csrf, &actions, &w.webhook, form.receiver_error.as_deref()))
            (receiver::filter_section(who.csrf, &actions, &receiver::FilterView {
                saved: w.webhook.filter.as_ref(),
                filtered_last_24h: w.filtered_last_24h,
                draft: form.filter_draft.as_deref(),
                error: form.filter_error.as_deref(),
                tested: form.filter_tested.as_deref(),
            }))
            section aria-labelledby="test-h" {
                h2 id="test-h" { "Test" }
                p { "Sends an example event, signed like any other, marked X-Qualifier-Test: true." }
                form method="post" action=(format!("{actions}/test")) {
                    input type="hidden" name="csrf" value=(who.csrf);
                    button type="submit" { "Send test event" }
                }
                p.meta { "Last saved " (ts(w.webhook.updated_at)) }
            }
            section aria-labelledby="deliveries-h" {
                h2 id="deliveries-h" { "Deliveries" }
                p { a href=(format!("/console/deliveries?endpoint_id={}", w.webhook.id)) { "This endpoint's deliveries" } }
            }
            @if !first {
                section aria-labelledby="delete-h" {
                    h2 id="delete-h" { "Delete endpoint" }
                    p { "Its deliveries still waiting end skipped (Endpoint deleted) and it gets nothing more. The org's other endpoints are not affected." }
                    p { a.danger href=(format!("{actions}/delete")) { "Delete endpoint…" } }
                }
            }
        }
    };
    // The primary's page is the navigation's `Webhook`; the others are under `Endpoints`.
    let nav = if first { Nav::Webhook } else { Nav::Endpoints };
    layout(&title, nav, who, content)
}

/// The question before an endpoint is deleted: it names the endpoint and what its deletion
/// does, and only its button deletes (the endpoint's page links here, so one click never does).
pub fn delete_endpoint_page(who: &Who, endpoint: &Webhook) -> Markup {
    let page = format!("/console/endpoints/{}", endpoint.id);
    let name = endpoint_name(endpoint);
    let content = html! {
        p role="status" {
            "Delete " strong { (name) } " (" code { (endpoint.target()) } ")? "
            "Its deliveries still waiting end skipped (Endpoint deleted) and it gets nothing more. "
            "This cannot be undone."
        }
        form method="post" action=(format!("{page}/delete")) {
            input type="hidden" name="csrf" value=(who.csrf);
            button.danger type="submit" { "Delete endpoint" }
        }
        p { a href=(page) { "Cancel" } }
    };
    layout("Delete endpoint", Nav::Endpoints, who, content)
}

/// An endpoint's name where the console lists or names it: its description, else where it
/// sends.
pub fn endpoint_name(w: &Webhook) -> std::borrow::Cow<'_, str> {
    if w.description.is_empty() {
        w.target()
    } else {
        w.description.as_str().into()
    }
}

/// The page an endpoint's settings are on: the first endpoint's at `/console`.
pub fn endpoint_page(w: &Webhook, primary: bool) -> String {
    if primary {
        Place { id: None }.page()
    } else {
        Place { id: Some(w.id) }.page()
    }
}

/// Endpoints: every endpoint of the org, the first (the primary, the v1.0
/// `webhook`) first and marked, each with its name, URL, event types, state and a link to its
/// deliveries, and `Add endpoint`.
pub fn endpoints_page(who: &Who, endpoints: &[WebhookStatus], notice: Option<&str>) -> Markup {
    let content = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        p { "Each endpoint gets the events it is subscribed to, signed with its own secret, with its own retries, health and pace." }
        @if endpoints.is_empty() {
            p { "No endpoint yet: " a href="/console" { "set up your webhook" } " to receive events." }
        } @else {
            table data-endpoints {
                thead { tr { th scope="col" { "Endpoint" } th scope="col" { "URL" } th scope="col" { "Event types" } th scope="col" { "State" } th scope="col" { "Deliveries" } } }
                tbody {
                    @for (i, e) in endpoints.iter().enumerate() {
                        @let name = endpoint_name(&e.webhook);
                        tr data-endpoint=(e.webhook.id) data-primary[i == 0] {
                            td {
                                a href=(endpoint_page(&e.webhook, i == 0)) { (name) }
                                @if i == 0 { " " span.badge { "primary" } }
                            }
                            td { code { (e.webhook.target()) } }
                            td { (e.webhook.event_types.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")) }
                            td data-state=(if e.webhook.enabled { e.health.state.as_str() } else { "disabled" }) {
                                @if !e.webhook.enabled { span.status.status-dead { "disabled" } }
                                @else {
                                    @match e.health.state {
                                        EndpointState::Healthy => span.status.status-succeeded { "healthy" },
                                        EndpointState::Failing => span.status.status-failed { "failing" },
                                        EndpointState::Disabled => span.status.status-dead { "disabled" },
                                    }
                                }
                            }
                            td { a href=(format!("/console/deliveries?endpoint_id={}", e.webhook.id)) aria-label=(format!("Deliveries to {name}")) { "Deliveries" } }
                        }
                    }
                }
            }
        }
        p { a href="/console/endpoints/new" { "Add endpoint" } }
    };
    layout("Endpoints", Nav::Endpoints, who, content)
}

/// The endpoint's client certificate: what is shown of it (never the key), a warning in its
/// last fourteen days, and the forms to replace or remove it.
fn client_certificate_section(
    csrf: &str,
    actions: &str,
    cert: Option<&qualifier_domain::client_cert::ClientCertInfo>,
    error: Option<&str>,
) -> Markup {
    let now = time::OffsetDateTime::now_utc();
    html! {
        section aria-labelledby="cert-h" {
            h2 id="cert-h" { "Client certificate" }
            p { "For receivers that require mutual TLS: every request to your endpoint presents this certificate. The private key is sealed and never shown again." }
            @if let Some(c) = cert {
                @if c.expiring(now) {
                    p.error role="alert" { "This certificate expires on " (ts(c.not_after)) ". Upload its replacement before then: deliveries already queued use the new one at once." }
                }
                dl {
                    dt { "Subject" } dd { (c.subject) }
                    dt { "Issuer" } dd { (c.issuer) }
                    dt { "Expires" } dd { (ts(c.not_after)) }
                }
                form method="post" action=(format!("{actions}/client-certificate/remove")) {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" { "Remove client certificate" }
                }
            } @else {
                p { "None: requests present no client certificate." }
            }
            @if let Some(e) = error { p.error id="cert-error" role="alert" { (e) } }
            form method="post" action=(format!("{actions}/client-certificate")) {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="certificate" { "Certificate (PEM, the chain may follow it)" }
                    textarea id="certificate" name="certificate" rows="6" spellcheck="false"
                        aria-describedby=[error.map(|_| "cert-error")] {}
                }
                div.field {
                    label for="private_key" { "Private key (PEM)" }
                    textarea id="private_key" name="private_key" rows="6" spellcheck="false" autocomplete="off" {}
                }
                button type="submit" { @if cert.is_some() { "Replace client certificate" } @else { "Upload client certificate" } }
            }
        }
    }
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
