//! The operator's command line as an operator meets it: what it prints and how it refuses.
//! (Having an integration test also makes `cargo test --workspace` build the `qualifierctl`
//! binary, which the delivery tests drive for `replay --all-dead`.)

use std::process::{Command, Output};

fn ctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qualifierctl"))
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("QUALIFIER_SECRET_KEY")
        .output()
        .expect("qualifierctl runs")
}

#[test]
fn gen_secret_key_prints_a_32_byte_key_as_json() {
    let out = ctl(&["gen-secret-key"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = v["secret_key"].as_str().unwrap();
    assert!(
        qualifier_store::SecretKey::from_base64(key).is_ok(),
        "{key}"
    );
    assert_ne!(
        ctl(&["gen-secret-key"]).stdout,
        out.stdout,
        "a new key each time"
    );
}

#[test]
fn replay_needs_exactly_one_of_a_delivery_or_all_dead() {
    let org = "0190a0b0-0000-7000-8000-000000000001";
    let neither = ctl(&["replay", "--org", org]);
    assert!(!neither.status.success());
    assert!(String::from_utf8_lossy(&neither.stderr).contains("--delivery"));
    let both = ctl(&["replay", "--org", org, "--delivery", org, "--all-dead"]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
    let bad_time = ctl(&["replay", "--org", org, "--all-dead", "--since", "yesterday"]);
    assert!(!bad_time.status.success());
    assert!(String::from_utf8_lossy(&bad_time.stderr).contains("--since"));
}

#[test]
fn a_command_needing_the_database_says_so_without_it() {
    let org = "0190a0b0-0000-7000-8000-000000000001";
    let out = ctl(&["replay", "--org", org, "--all-dead", "--dry-run"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("DATABASE_URL is required"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
