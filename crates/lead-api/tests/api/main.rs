//! Integration tests of `lead-api` against the real PostgreSQL: one database per test.

mod attempt_logs;
mod catching_up;
mod chart;
mod cli;
mod clients;
mod commit_faults;
mod console;
mod delivery_rows;
mod erasure;
mod extractors;
mod forgeries;
mod hardening;
mod help;
mod helpers;
mod hostile;
mod idempotency;
mod internal_api;
mod lists;
mod migrations;
mod outbox_events;
mod plans;
mod public_api;
mod rate_limit;
mod revisions;
mod webhook_settings;
