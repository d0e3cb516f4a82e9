//! End-to-end delivery tests: lead-api (with its relay), RabbitMQ, webhook-delivery and a real
//! HTTPS receiver, each test with its own database and topology prefix.

mod catching_up;
mod commit_faults;
mod console_browser;
mod crash;
mod delivery;
mod destinations;
mod egress;
mod endpoints;
mod erasure;
mod fair_share;
mod filters;
mod hardening;
mod health;
mod help;
mod pace;
mod receivers;
mod stack;
mod standard;
mod storage;
mod telemetry;
