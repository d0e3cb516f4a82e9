//! An endpoint as a delivery attempt sees it: its settings with every secret opened (the
//! signing secret, the previous one while its window lasts, the client certificate's key, the
//! receiver's own headers and credentials), never printed.

use qualifier_domain::destination::OpenDestination;
use qualifier_domain::receiver::ReceiverAuth;
use time::OffsetDateTime;

use super::{EndpointRef, Webhook, WebhookRow};
use crate::StoreError;
use crate::secrets::OpenError;

/// What a delivery attempt needs: the settings plus the opened secret, and the previous secret
/// while a rotation's overlap window lasts.
#[derive(Clone, PartialEq)]
pub struct WebhookForDelivery {
    pub webhook: Webhook,
    pub signing_secret: String,
    pub previous_secret: Option<String>,
    /// The client certificate and its opened key, when the endpoint has one.
    pub client_identity: Option<ClientIdentity>,
    /// The receiver's own headers, secret values opened, in their order.
    pub receiver_headers: Vec<(String, String)>,
    /// The receiver's credentials, opened.
    pub receiver_auth: Option<ReceiverAuth>,
    /// Where the deliveries go when not to the url, its secret opened.
    pub destination: Option<OpenDestination>,
}

/// A client certificate with its opened key, as one PEM (certificate chain, then key), and a
/// fingerprint of the stored pair: the sender keeps one TLS client per fingerprint, so a
/// replaced certificate is used from the next request on without parsing a key per delivery.
#[derive(Clone, PartialEq)]
pub struct ClientIdentity {
    pub pem: String,
    pub fingerprint: [u8; 32],
}

/// Never prints the key.
impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientIdentity(..)")
    }
}

/// Never prints the secret (logs and panics show the settings only).
impl std::fmt::Debug for WebhookForDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookForDelivery")
            .field("webhook", &self.webhook)
            .field("signing_secret", &"..")
            .field(
                "previous_secret",
                &self.previous_secret.as_ref().map(|_| ".."),
            )
            .field("client_identity", &self.client_identity)
            .field(
                "receiver_headers",
                &self
                    .receiver_headers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("receiver_auth", &self.receiver_auth)
            .field("destination", &self.destination)
            .finish()
    }
}

impl crate::facets::Endpoints<'_> {
    /// The settings with the opened secret, for a probe (`None` without such an endpoint).
    pub async fn webhook_for_delivery(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<Option<Result<WebhookForDelivery, OpenError>>, StoreError> {
        Ok(self
            .webhook_row(at.into())
            .await?
            .map(|r| self.open_for_delivery(r)))
    }

    /// The settings with the opened secret, for a delivery attempt.
    pub(crate) fn open_for_delivery(&self, r: WebhookRow) -> Result<WebhookForDelivery, OpenError> {
        let open = |sealed: &[u8]| {
            if r.unbound_allowed == Some(true) {
                self.secret_key.open(sealed, r.id)
            } else {
                self.secret_key.open_bound(sealed, r.id)
            }
        };
        let signing_secret = open(&r.secret_sealed)?;
        // The previous secret only while its window lasts; an expired one is never used, even
        // before housekeeping removes it.
        let now = OffsetDateTime::now_utc();
        let previous_secret = match (&r.previous_secret_sealed, r.previous_expires_at) {
            (Some(sealed), Some(until)) if until > now => Some(open(sealed)?),
            _ => None,
        };
        let client_identity = match (&r.client_cert_pem, &r.client_key_sealed) {
            (Some(cert), Some(sealed)) => {
                let key = open(sealed)?;
                let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
                digest.update(cert.as_bytes());
                digest.update(sealed);
                let mut fingerprint = [0u8; 32];
                fingerprint.copy_from_slice(digest.finish().as_ref());
                let mut pem = cert.trim_end().to_owned();
                pem.push('\n');
                pem.push_str(&key);
                Some(ClientIdentity { pem, fingerprint })
            }
            _ => None,
        };
        let receiver = crate::receivers::Receiver::read(r.receiver_columns(), |b| {
            self.secret_key.open_bound(b, r.id)
        })?
        .for_request();
        Ok(WebhookForDelivery {
            webhook: r.public(),
            signing_secret,
            previous_secret,
            client_identity,
            receiver_headers: receiver.headers,
            receiver_auth: receiver.auth,
            destination: receiver.destination,
        })
    }
}
