DROP TABLE outbox;
DROP TABLE webhooks;
DROP TABLE handoffs;
DROP TABLE leads;
DROP TABLE api_tokens;
DROP TABLE orgs;
