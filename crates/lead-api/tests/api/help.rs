//! `lead-api --help` is generated from the configuration's declarations; this checks it lists
//! every variable the service reads, including any read by hand outside them.

use clap::CommandFactory;
use lead_api::config::ApiArgs;

#[test]
fn help_lists_every_variable_the_configuration_reads() {
    let help = qualifier_testkit::assert_help_covers(
        env!("CARGO_BIN_EXE_lead-api"),
        qualifier_config::env_names(&ApiArgs::command()),
        "crates/lead-api/src",
    );
    for v in [
        "QUALIFIER_TOPOLOGY_PREFIX",
        "QUALIFIER_RETRY_DELAYS_MS",
        "QUALIFIER_EVENT_RETENTION_DAYS",
        "QUALIFIER_REPLAY_RATE_PER_SECOND",
        "QUALIFIER_CONSOLE_BASE_URL",
        "DATABASE_URL",
        "RUST_LOG",
    ] {
        assert!(help.contains(v), "{v} in --help");
    }
}

#[test]
fn help_never_prints_a_secret_from_the_environment() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lead-api"))
        .arg("--help")
        .env("QUALIFIER_INTERNAL_TOKEN", "help-must-not-show-this-token")
        .env("DATABASE_URL", "postgres://u:help-must-not-show-this@h/db")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("QUALIFIER_INTERNAL_TOKEN"));
    assert!(!text.contains("help-must-not-show-this"));
}

/// `--version` and `/metrics` name the same version: the workspace's (CHANGELOG.md).
#[tokio::test(flavor = "multi_thread")]
async fn the_version_is_the_workspaces_on_the_command_line_and_in_the_metrics() {
    let version = qualifier_telemetry::metrics::VERSION;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lead-api"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("lead-api {version}")
    );
    let changelog = include_str!("../../../../CHANGELOG.md");
    assert!(
        changelog.contains(&format!("## {version} - ")),
        "CHANGELOG.md has a section for {version}"
    );
    let app = crate::helpers::TestApp::spawn().await;
    let page = app.metrics().await;
    assert!(
        page.contains(&format!("qualifier_build_info{{version=\"{version}\"}} 1")),
        "{page}"
    );
}
