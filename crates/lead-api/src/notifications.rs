//! The one LISTEN connection of a `lead-api` process, and what each notification drives:
//! `qualifier_outbox` (sent at the commit of an outbox row) wakes the relay;
//! `qualifier_tokens` (sent at the commit of a new token) adds its fingerprint to
//! the token filter. The filter is reloaded whenever the connection comes up, and marked stale
//! while it is down (notifications may be missed meanwhile); the relay is woken on every
//! reconnect, so a row committed while nobody listened is not left waiting for the poll.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use qualifier_store::Store;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::token_filter::TokenFilter;

async fn sleep_or_cancel(d: Duration, shutdown: &CancellationToken) {
    tokio::select! { _ = tokio::time::sleep(d) => {}, _ = shutdown.cancelled() => {} }
}

/// Keeps a LISTEN connection open: an outbox notification wakes the relay, a token notification
/// adds the new token's fingerprint to the filter. The filter is reloaded whenever the connection
/// comes up, and marked stale while it is down (notifications may be missed).
pub async fn listen(
    database: qualifier_store::Database,
    store: Store,
    tokens: Arc<TokenFilter>,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
) {
    let mut backoff = qualifier_bus::reconnect_backoff();
    while !shutdown.is_cancelled() {
        match database.connect_raw().await {
            Ok((client, mut connection)) => {
                let (wake2, tokens2) = (wake.clone(), tokens.clone());
                let pump = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(Ok(msg)) = messages.next().await {
                        if let tokio_postgres::AsyncMessage::Notification(n) = msg {
                            match n.channel() {
                                "qualifier_tokens" => tokens2.add_hex(n.payload()),
                                _ => wake2.notify_one(),
                            }
                        }
                    }
                });
                let listening = client
                    .batch_execute("LISTEN qualifier_outbox; LISTEN qualifier_tokens")
                    .await
                    .is_ok();
                // Listening first, then reading: a token created in between is in one or both.
                let loaded = match store.token_fingerprints().await {
                    Ok(all) if listening => {
                        tokens.replace(all);
                        true
                    }
                    _ => false,
                };
                if listening && loaded {
                    // Anything committed while we were not listening is picked up now.
                    wake.notify_one();
                    backoff = qualifier_bus::reconnect_backoff();
                    tokio::select! { _ = pump => {}, _ = shutdown.cancelled() => return }
                    tokens.mark_stale();
                } else {
                    pump.abort();
                }
                tracing::warn!("outbox LISTEN connection lost; reconnecting");
            }
            Err(e) => {
                let error = qualifier_store::pgconn::describe(&e);
                tracing::warn!(%error, "outbox LISTEN connection failed")
            }
        }
        let wait = backoff.next().unwrap_or(Duration::from_secs(10));
        sleep_or_cancel(wait, &shutdown).await;
    }
}
