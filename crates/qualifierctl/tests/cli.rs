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
fn an_endpoint_takes_a_url_or_a_destination_checked_before_the_database() {
    let org = "0190a0b0-0000-7000-8000-000000000001";
    let key = qualifier_store::SecretKey::generate_base64();
    let create = |more: &[&str]| {
        let mut args = vec!["endpoints", "create", "--org", org];
        args.extend_from_slice(more);
        let out = Command::new(env!("CARGO_BIN_EXE_qualifierctl"))
            .args(&args)
            .env_remove("DATABASE_URL")
            .env("QUALIFIER_SECRET_KEY", &key)
            .output()
            .expect("qualifierctl runs");
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(create(&[]).contains("--url"));
    let plain = r#"{"type": "amqp", "url": "amqp://u:p@8.8.8.8/", "exchange": "x"}"#;
    let refused = create(&["--destination", plain]);
    assert!(refused.contains("must use TLS"), "{refused}");
    let tls = r#"{"type": "amqp", "url": "amqps://u:p@8.8.8.8/", "exchange": "x"}"#;
    let both = create(&["--url", "https://example.com/h", "--destination", tls]);
    assert!(both.contains("--url"), "{both}");
    let kafka = create(&["--destination", r#"{"type": "kafka"}"#]);
    assert!(kafka.contains("destination.type"), "{kafka}");
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

mod commit_faults {
    //! Every command that writes exits 0 only once PostgreSQL confirmed its commit
    //! (docs/reliability.md, "A 2xx is a commit"): with its commit refused, or held and the
    //! backend terminated, it exits non-zero and nothing changed; run again, it succeeds.

    use std::process::{Command, Output};
    use std::sync::atomic::{AtomicBool, Ordering};

    use qualifier_testkit::TestDb;
    use qualifier_testkit::commit_fault::{CommitFaults, Fault, changed};

    /// `qualifierctl` against `db`, run on a thread so that the test's runtime can cut its
    /// commit meanwhile.
    async fn run(db: &TestDb, key: &str, args: Vec<String>) -> Output {
        let url = db.url.clone();
        let key = key.to_owned();
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_qualifierctl"))
                .args(&args)
                .env("DATABASE_URL", url)
                .env("QUALIFIER_SECRET_KEY", key)
                .env("QUALIFIER_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8")
                .output()
                .expect("qualifierctl runs")
        })
        .await
        .unwrap()
    }

    fn json(out: &Output) -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    async fn each_command(fault: Fault) {
        let db = TestDb::new().await;
        let key = qualifier_store::SecretKey::generate_base64();
        let org = json(
            &run(
                &db,
                &key,
                vec!["create-org".into(), "--name".into(), "A".into()],
            )
            .await,
        )["org"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let hook = |url: &str| {
            vec![
                "set-webhook".to_owned(),
                "--org".into(),
                org.clone(),
                "--url".into(),
                url.into(),
            ]
        };
        json(&run(&db, &key, hook("https://127.0.0.1:9443/a")).await);
        // A lead, a dead delivery and a client certificate's files, for the commands that act
        // on them.
        let pg = db.client().await;
        let lead: String = qualifier_testkit::sql::one(
            &pg,
            "INSERT INTO leads (id, org_id, name, phone, channel, qualification_stage,
                                    created_at, updated_at)
                 VALUES (gen_random_uuid(), $1::text::uuid, 'Ada', '+447700900777', 'sms',
                         'qualifying', now(), now())
                 RETURNING id::text",
            &[&org],
        )
        .await;
        pg.execute(
            "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, status,
                                 lead_id, published_at, attempts)
             VALUES (gen_random_uuid(), $1::text::uuid, 'lead.updated', '\\x7b7d',
                     gen_random_uuid(), 'dead', gen_random_uuid(), now(), 5)",
            &[&org],
        )
        .await
        .unwrap();
        let ca = qualifier_testkit::receiver::TestCa::new("Receiver Corp client CA");
        let (cert, pem_key) = ca.issue("qualifier-client", 30);
        let files = std::env::temp_dir().join(format!("qualifierctl-cert-{}", db.name));
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(files.join("cert.pem"), cert).unwrap();
        std::fs::write(files.join("key.pem"), pem_key).unwrap();
        let path = |f: &str| files.join(f).display().to_string();
        let commands: Vec<Vec<String>> = vec![
            vec!["create-org".into(), "--name".into(), "B".into()],
            vec!["create-token".into(), "--org".into(), org.clone()],
            hook("https://127.0.0.1:9443/b"),
            vec!["rotate-secret".into(), "--org".into(), org.clone()],
            vec!["bootstrap-dev".into()],
            vec![
                "set-client-certificate".into(),
                "--org".into(),
                org.clone(),
                "--certificate".into(),
                path("cert.pem"),
                "--private-key".into(),
                path("key.pem"),
            ],
            vec![
                "set-client-certificate".into(),
                "--org".into(),
                org.clone(),
                "--remove".into(),
            ],
            vec![
                "replay".into(),
                "--org".into(),
                org.clone(),
                "--all-dead".into(),
            ],
            vec![
                "erase-lead".into(),
                "--org".into(),
                org.clone(),
                "--lead".into(),
                lead.clone(),
            ],
        ];
        let faults = CommitFaults::install(&db).await;
        for args in commands {
            let before = faults.fingerprint().await;
            faults.arm(fault).await;
            let done = AtomicBool::new(false);
            let running = async {
                let out = run(&db, &key, args.clone()).await;
                done.store(true, Ordering::SeqCst);
                out
            };
            let (out, cut) = match fault {
                Fault::Refuse => (running.await, 0),
                Fault::Cut => tokio::join!(running, faults.cut_held(&done)),
            };
            faults.disarm().await;
            assert!(fault == Fault::Refuse || cut > 0, "{args:?} held no commit");
            assert!(
                !out.status.success(),
                "{args:?} exited 0 under {fault:?}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert_eq!(
                changed(&before, &faults.fingerprint().await),
                Vec::<String>::new(),
                "{args:?} under {fault:?}"
            );
            json(&run(&db, &key, args.clone()).await);
            assert!(
                !changed(&before, &faults.fingerprint().await).is_empty(),
                "{args:?} run again changed nothing"
            );
        }
        let _ = std::fs::remove_dir_all(&files);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_writing_command_fails_when_its_commit_is_refused() {
        each_command(Fault::Refuse).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_writing_command_fails_when_its_commit_is_cut() {
        each_command(Fault::Cut).await;
    }
}
