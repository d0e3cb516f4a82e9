//! An endpoint's page section for its receiver's own headers and credentials
//! (docs/receivers.md, "Your own headers and credentials"): the saved ones with every secret
//! masked, and the form that replaces them. A masked value sent back keeps the stored one, so
//! the form is shown filled and saved as it is.

use maud::{Markup, html};
use qualifier_domain::receiver::MASK;
use qualifier_store::webhooks::Webhook;
use serde_json::Value;

/// Empty header rows the form offers beyond the saved ones.
const BLANK_ROWS: usize = 2;

pub fn receiver_section(csrf: &str, actions: &str, w: &Webhook, error: Option<&str>) -> Markup {
    let auth = w.auth.as_ref();
    let kind = auth
        .and_then(|a| a.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("none");
    let field = |k: &str| {
        auth.and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    // A secret field shows the mask only when the saved auth is of its kind.
    let secret_of = |of: &str, k: &str| if kind == of { field(k) } else { String::new() };
    let rows = w.headers.len() + BLANK_ROWS;
    html! {
        section aria-labelledby="receiver-h" {
            h2 id="receiver-h" { "Headers and credentials" }
            p { "Your receiver's own headers and login, sent with every request to this endpoint: deliveries, retries, replays, test events and checks. Secret values are sealed and shown as " code { (MASK) } "; leave the mask to keep a value." }
            @if let Some(e) = error { p.error id="receiver-error" role="alert" { (e) } }
            form method="post" action=(format!("{actions}/receiver")) {
                input type="hidden" name="csrf" value=(csrf);
                table {
                    caption { "Headers" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Value" } th scope="col" { "Secret" } } }
                    tbody {
                        @for i in 0..rows {
                            @let h = w.headers.get(i);
                            tr {
                                td { input type="text" name=(format!("header_name_{i}")) aria-label=(format!("Header {} name", i + 1)) value=(h.map_or("", |h| h.name.as_str())) autocomplete="off"; }
                                td { input type=(if h.is_some_and(|h| h.secret) { "password" } else { "text" }) name=(format!("header_value_{i}")) aria-label=(format!("Header {} value", i + 1)) value=(h.map_or("", |h| h.value.as_str())) autocomplete="off"; }
                                td { input type="checkbox" name=(format!("header_secret_{i}")) aria-label=(format!("Header {} is secret", i + 1)) checked[h.is_some_and(|h| h.secret)]; }
                            }
                        }
                    }
                }
                input type="hidden" name="header_rows" value=(rows);
                div.field {
                    label for="auth_type" { "Authentication" }
                    select id="auth_type" name="auth_type" aria-describedby=[error.map(|_| "receiver-error")] {
                        option value="none" selected[kind == "none"] { "None" }
                        option value="basic" selected[kind == "basic"] { "Basic (username and password)" }
                        option value="bearer" selected[kind == "bearer"] { "Bearer token" }
                        option value="oauth2_client_credentials" selected[kind == "oauth2_client_credentials"] { "OAuth 2 client credentials" }
                    }
                }
                fieldset data-auth="basic" {
                    legend { "Basic" }
                    div.field { label for="auth_username" { "Username" } input id="auth_username" type="text" name="auth_username" value=(field("username")) autocomplete="off"; }
                    div.field { label for="auth_password" { "Password" } input id="auth_password" type="password" name="auth_password" value=(secret_of("basic", "password")) autocomplete="off"; }
                }
                fieldset data-auth="bearer" {
                    legend { "Bearer" }
                    div.field { label for="auth_token" { "Token" } input id="auth_token" type="password" name="auth_token" value=(secret_of("bearer", "token")) autocomplete="off"; }
                }
                fieldset data-auth="oauth2_client_credentials" {
                    legend { "OAuth 2 client credentials" }
                    div.field { label for="auth_token_url" { "Token URL" } input id="auth_token_url" type="url" name="auth_token_url" value=(field("token_url")) autocomplete="off"; }
                    div.field { label for="auth_client_id" { "Client ID" } input id="auth_client_id" type="text" name="auth_client_id" value=(field("client_id")) autocomplete="off"; }
                    div.field { label for="auth_client_secret" { "Client secret" } input id="auth_client_secret" type="password" name="auth_client_secret" value=(secret_of("oauth2_client_credentials", "client_secret")) autocomplete="off"; }
                    div.field { label for="auth_scope" { "Scope (optional)" } input id="auth_scope" type="text" name="auth_scope" value=(field("scope")) autocomplete="off"; }
                    div.field { label for="auth_audience" { "Audience (optional)" } input id="auth_audience" type="text" name="auth_audience" value=(field("audience")) autocomplete="off"; }
                    div.field {
                        label for="auth_client_auth" { "Send the client's credentials" }
                        select id="auth_client_auth" name="auth_client_auth" {
                            option value="body" selected[field("client_auth") != "basic"] { "In the form body" }
                            option value="basic" selected[field("client_auth") == "basic"] { "As basic authentication" }
                        }
                    }
                }
                button type="submit" { "Save headers and credentials" }
            }
        }
    }
}

/// One of the org's recent events as the filter test shows it.
#[derive(Debug, Clone)]
pub struct TestedEvent {
    pub event_type: String,
    pub occurred_at: String,
    pub summary: String,
    pub matches: bool,
}

/// The filter form: the saved filter (or the draft being tried), its refusal, and what a test
/// against the org's recent events found.
pub struct FilterView<'a> {
    pub saved: Option<&'a Value>,
    pub filtered_last_24h: i64,
    pub draft: Option<&'a str>,
    pub error: Option<&'a str>,
    pub tested: Option<&'a [TestedEvent]>,
}

pub fn filter_section(csrf: &str, actions: &str, v: &FilterView<'_>) -> Markup {
    let shown = match (v.draft, v.saved) {
        (Some(d), _) => d.to_owned(),
        (None, Some(f)) => serde_json::to_string_pretty(f).unwrap_or_default(),
        (None, None) => String::new(),
    };
    html! {
        section aria-labelledby="filter-h" {
            h2 id="filter-h" { "Filter" }
            p { "Among the event types above, only the events this filter matches are sent. Dotted paths into the event and operators such as " code { "$in" } ", " code { "$gte" } " and " code { "$startsWith" } "; empty for every event. Erasure notices always go." }
            @if v.saved.is_some() {
                p data-filtered { "Left out in the last 24 hours: " (v.filtered_last_24h) }
            }
            @if let Some(e) = v.error { p.error id="filter-error" role="alert" { (e) } }
            form method="post" action=(format!("{actions}/filter")) {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="filter" { "Filter (JSON)" }
                    textarea id="filter" name="filter" rows="6" spellcheck="false"
                        placeholder="{\"data.lead.channel\": \"whatsapp\"}"
                        aria-describedby=[v.error.map(|_| "filter-error")] { (shown) }
                }
                button type="submit" name="action" value="test" { "Test against recent events" }
                " "
                button type="submit" name="action" value="save" { "Save filter" }
            }
            @if let Some(tested) = v.tested {
                @if tested.is_empty() {
                    p { "No recent events to test against." }
                } @else {
                    table data-tested {
                        caption { "The org's recent events against this filter (not saved yet)" }
                        thead { tr { th scope="col" { "Event" } th scope="col" { "Occurred" } th scope="col" { "Lead" } th scope="col" { "Result" } } }
                        tbody {
                            @for t in tested {
                                tr data-matches=(t.matches) {
                                    td { (t.event_type) } td { (t.occurred_at) } td { (t.summary) }
                                    td { @if t.matches { "Sent" } @else { "Left out" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
