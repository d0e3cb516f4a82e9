//! `AMQP_URL` as a list (docs/operations.md, "Production topology"), against the real local broker and a port where
//! nothing listens (a node that is down).

use qualifier_bus::{Brokers, Rotation};

fn live() -> String {
    std::env::var("QUALIFIER_TEST_AMQP")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A loopback port nothing listens on: bound, then released.
fn dead() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f")
}

#[tokio::test]
async fn the_first_node_that_answers_is_used_and_the_next_attempt_starts_past_it() {
    let (live, dead) = (live(), dead());
    let brokers = Brokers::parse(&format!("{dead},{live}"), None).unwrap();
    let mut at = Rotation::default();
    let conn = brokers
        .connect("qualifier test rotation", &mut at)
        .await
        .unwrap();
    assert!(conn.status().connected());
    assert_eq!(
        at.position(),
        0,
        "past node 2 is node 1 again (round the list)"
    );
    let _ = conn.close(200, "done".into()).await;

    // Live first: after it, the attempt that follows a lost connection starts at the dead one
    // and goes on round to the live one.
    let brokers = Brokers::parse(&format!("{live},{dead}"), None).unwrap();
    let mut at = Rotation::default();
    let c1 = brokers
        .connect("qualifier test rotation", &mut at)
        .await
        .unwrap();
    assert_eq!(at.position(), 1);
    let c2 = brokers
        .connect("qualifier test rotation", &mut at)
        .await
        .unwrap();
    assert_eq!(at.position(), 1, "node 2 failed, node 1 answered");
    for c in [c1, c2] {
        let _ = c.close(200, "done".into()).await;
    }

    // Every node down: an error, and the next round starts one further on.
    let brokers = Brokers::parse(&format!("{},{}", dead, self::dead()), None).unwrap();
    let mut at = Rotation::default();
    assert!(
        brokers
            .connect("qualifier test rotation", &mut at)
            .await
            .is_err()
    );
    assert_eq!(at.position(), 1);
}

#[test]
fn a_bad_list_or_ca_file_names_its_variable_and_never_the_password() {
    let e =
        Brokers::parse("amqp://u:hunter2@h:5672/%2f,,amqp://u:hunter2@h2/%2f", None).unwrap_err();
    assert_eq!(e.var, "AMQP_URL");
    assert!(e.problem.contains("entry (number 2)"), "{e}");
    let e = Brokers::parse("amqp://u:hunter2@h:5672/%2f,http://u:hunter2@h/", None).unwrap_err();
    assert_eq!(e.var, "AMQP_URL");
    assert!(e.problem.contains("entry 2"), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = Brokers::parse(&live(), Some(std::path::Path::new("/nonexistent/ca.pem"))).unwrap_err();
    assert_eq!(e.var, "QUALIFIER_AMQP_CA_FILE");
    let not_pem = std::env::temp_dir().join(format!("qlf-not-pem-{}", std::process::id()));
    std::fs::write(&not_pem, "hello").unwrap();
    let e = Brokers::parse(&live(), Some(&not_pem)).unwrap_err();
    let _ = std::fs::remove_file(&not_pem);
    assert!(e.problem.contains("no PEM certificate"), "{e}");
    let ok = Brokers::parse(&format!("{}, {}", live(), dead()), None).unwrap();
    assert!(
        ok.nodes().contains("amqp://127.0.0.1:5672"),
        "{}",
        ok.nodes()
    );
    assert!(
        !format!("{ok:?}").contains("guest"),
        "Debug shows no credentials"
    );
}
