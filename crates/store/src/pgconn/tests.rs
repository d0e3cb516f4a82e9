use super::*;

#[test]
fn only_a_database_on_this_machine_is_reached_over_no_network() {
    let here = |url: &str| Database::from_url(url, "t").unwrap().on_this_machine();
    assert!(here("postgres://postgres@127.0.0.1:5432/db"));
    assert!(here("postgres://postgres@localhost/db?sslmode=prefer"));
    assert!(here("postgres://postgres@[::1]:5432/db"));
    assert!(!here("postgres://postgres@db.internal:5432/db"));
    assert!(!here("postgres://u@127.0.0.1:5432,10.0.0.9:5432/db"));
}

fn ask(url: &str) -> (String, TlsAsk) {
    split_tls_options(url).unwrap()
}

#[test]
fn libpq_tls_options_leave_the_url_and_the_rest_stays() {
    let (rest, a) = ask(
        "postgres://u:p@h1:5432,h2:5433/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&target_session_attrs=read-write",
    );
    assert_eq!(
        rest,
        "postgres://u:p@h1:5432,h2:5433/db?target_session_attrs=read-write"
    );
    assert_eq!(a.mode, SslMode::VerifyFull);
    assert_eq!(a.roots, Some(Roots::File("/tmp/ca.pem".into())));
    let (rest, a) = ask("postgresql://u@h/db");
    assert_eq!(rest, "postgresql://u@h/db");
    assert_eq!(a.effective_mode(), SslMode::Prefer, "libpq's default");
    let (_, a) = ask("postgres://u@h/db?sslmode=require&sslrootcert=system");
    assert_eq!(
        a.effective_mode(),
        SslMode::VerifyCa,
        "require with a root certificate checks the chain, as libpq"
    );
}

#[test]
fn what_libpq_would_refuse_is_refused_without_echoing_the_url() {
    for (url, says) in [
        ("postgres://u:hunter2@h/db?sslmode=allow", "sslmode=allow"),
        (
            "postgres://u:hunter2@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            "/nonexistent/ca.pem",
        ),
        ("mysql://u:hunter2@h/db", "postgres://"),
        ("postgres://u:hunter2@h/db?nonsense=1", "nonsense"),
    ] {
        let e = Database::from_url(url, "test").unwrap_err().to_string();
        assert!(e.contains(says), "{url}: {e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}

#[test]
fn verify_modes_need_a_root_certificate() {
    for mode in [SslMode::VerifyCa, SslMode::VerifyFull] {
        let a = TlsAsk { mode, roots: None };
        let e = client_config_with(&a, None).unwrap_err().to_string();
        assert!(e.contains("sslrootcert"), "{e}");
    }
    let a = TlsAsk {
        mode: SslMode::Require,
        roots: None,
    };
    assert!(
        client_config_with(&a, None).is_ok(),
        "require alone checks nothing"
    );
}

#[test]
fn several_hosts_and_session_attrs_reach_tokio_postgres() {
    let db = Database::from_url(
        "postgres://u@127.0.0.1:55432,localhost:55433/db?target_session_attrs=read-write&sslmode=disable",
        "lead-api",
    )
    .unwrap();
    assert_eq!(db.hosts(), "127.0.0.1:55432, localhost:55433");
    assert_eq!(db.ssl_mode(), SslMode::Disable);
    assert_eq!(
        db.inner.config.get_target_session_attrs(),
        tokio_postgres::config::TargetSessionAttrs::ReadWrite
    );
    assert_eq!(db.inner.config.get_application_name(), Some("lead-api"));
    let named = Database::from_url("postgres://u@h/db?application_name=mine", "lead-api").unwrap();
    assert_eq!(named.inner.config.get_application_name(), Some("mine"));
}
