DROP INDEX CONCURRENTLY IF EXISTS webhooks_client_cert_unwarned;
