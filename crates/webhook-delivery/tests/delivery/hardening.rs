//! Hardening of the delivery side (contract section 8) against a hostile environment.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::crash::spawn_delivery_with;
use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn proxy_variables_in_the_environment_are_ignored() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    // A "proxy" that only counts who connects to it.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = proxy.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    let vars: Vec<(&str, String)> = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .into_iter()
    .map(|k| (k, proxy_url.clone()))
    .chain([("NO_PROXY", String::new()), ("no_proxy", String::new())])
    .collect();
    let _worker = spawn_delivery_with(&s, &vars);

    s.inbound("+447700900781").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1, "delivered straight to the receiver");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the proxy saw no connection"
    );
}
