//! The typed clients under clients/, installed as their READMEs say, run their README's example
//! against a live lead-api: get, a stale `If-Match` (a typed error carrying `Lead has changed`),
//! the right one, the lead list and the feed paged to the end, and an erasure.

use std::process::Command;
use std::time::Duration;

use reqwest::Method;

use crate::helpers::TestApp;

/// (the venv's python, the Node project) with both clients installed.
fn client_envs() -> (String, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/client-envs.sh");
    let out = qualifier_testkit::output_of(Command::new("bash").arg(script), "client-envs.sh");
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    (
        lines.next().unwrap().to_owned(),
        lines.next().unwrap().to_owned(),
    )
}

/// An org with two leads whose lead.created events are both in the feed; (token, the lead the
/// example works on).
async fn org_with_two_leads(app: &TestApp) -> (String, String) {
    let (org, token, lead) = app.org_with_lead("+447700900301").await;
    app.inbound_lead(&org, "+447700900302").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = app
            .public(Method::GET, "/api/v1/events?limit=10", &token, None)
            .await;
        let v: serde_json::Value = r.json().await.unwrap();
        if v["events"].as_array().unwrap().len() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "events never in the feed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (token, lead["id"].as_str().unwrap().to_owned())
}

fn run_example(app: &TestApp, token: &str, lead: &str, mut cmd: Command) -> String {
    let out = cmd
        .env("QUALIFIER_API_URL", &app.public)
        .env("QUALIFIER_TOKEN", token)
        .env("QUALIFIER_LEAD", lead)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// What both examples print, checked against what the API holds afterwards.
async fn assert_example_did_its_work(app: &TestApp, token: &str, lead: &str, out: &str) {
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{out}"))
            .to_owned()
    };
    assert!(line("got ").ends_with("revision 1"), "{out}");
    assert_eq!(line("stale: "), "stale: Lead has changed current \"1\"");
    assert_eq!(
        line("closed "),
        format!("closed {lead} stage closed revision 2")
    );
    assert_eq!(line("leads "), "leads 2");
    // The two lead.created first, in commit order; the stage change follows once the relay
    // has placed it (the example reads the feed right after the change).
    let events = line("events ");
    assert!(
        events.contains(" lead.created,lead.created"),
        "the feed paged from its start: {events}"
    );
    assert!(line("resume the feed after ").len() > "resume the feed after ".len());
    assert_eq!(line("erased "), format!("erased {lead}"));
    let r = app
        .public(Method::GET, &format!("/api/v1/leads/{lead}"), token, None)
        .await;
    assert_eq!(r.status(), 404, "the example erased the lead");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_clients_readme_example_runs_against_a_live_api() {
    let (python, _) = client_envs();
    let app = TestApp::spawn().await;
    let (token, lead) = org_with_two_leads(&app).await;
    let mut cmd = Command::new(python);
    // -P: the installed package, not the one beside the example in the clone.
    cmd.arg("-P").arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../clients/python/example.py"
    ));
    let out = run_example(&app, &token, &lead, cmd);
    assert_example_did_its_work(&app, &token, &lead, &out).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_clients_readme_example_runs_against_a_live_api() {
    let (_, node_project) = client_envs();
    let app = TestApp::spawn().await;
    let (token, lead) = org_with_two_leads(&app).await;
    let mut cmd = Command::new("node");
    // Run from the project the package is installed in, as an integrator's code would be.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../clients/typescript/example.js"
    );
    cmd.arg(example)
        .current_dir(&node_project)
        .env("NODE_PATH", format!("{node_project}/node_modules"));
    let out = run_example(&app, &token, &lead, cmd);
    assert_example_did_its_work(&app, &token, &lead, &out).await;
}

/// A token an integrator's log must never show: the clients' printed forms leave it out.
const SECRET_TOKEN: &str = "qlf_org_never-printed-7f3a9c";

/// What `cmd` printed, once it succeeded.
fn printed(mut cmd: Command) -> String {
    let out = cmd.output().expect("the client's runtime starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_python_clients_printed_form_never_shows_the_token() {
    let (python, _) = client_envs();
    let mut cmd = Command::new(python);
    // After a first use too, when the Authorization header is in the client's httpx clients.
    cmd.arg("-P").arg("-c").arg(format!(
        "from qualifier_client.helpers import connect\n\
         c = connect('http://127.0.0.1:9', '{SECRET_TOKEN}')\n\
         c.get_httpx_client(); c.get_async_httpx_client()\n\
         print(repr(c)); print(str(c)); print(c.with_headers({{'x-a': 'b'}}))"
    ));
    let out = printed(cmd);
    assert!(out.contains("AuthenticatedClient"), "{out}");
    assert!(!out.contains("never-printed"), "{out}");
}

#[test]
fn the_typescript_clients_configuration_never_shows_the_token() {
    let (_, node_project) = client_envs();
    let mut cmd = Command::new("node");
    cmd.arg("-e")
        .arg(format!(
            "const q = require('qualifier-client');\n\
             q.configure({{ baseUrl: 'http://127.0.0.1:9', token: '{SECRET_TOKEN}' }});\n\
             const {{ client }} = require('qualifier-client/dist/gen/client.gen');\n\
             console.log(require('util').inspect(client.getConfig(), {{ depth: 6 }}));\n\
             console.log(JSON.stringify(client.getConfig()));"
        ))
        .current_dir(&node_project)
        .env("NODE_PATH", format!("{node_project}/node_modules"));
    let out = printed(cmd);
    assert!(out.contains("127.0.0.1:9"), "{out}");
    assert!(!out.contains("never-printed"), "{out}");
}
