#![doc = include_str!("../README.md")]

pub mod app;
pub mod body;
pub mod config;
pub mod console;
pub mod cursor;
pub mod error;
pub mod extract;
pub mod housekeeping;
pub mod idempotency;
pub mod inputs;
pub mod internal;
pub mod notifications;
pub mod page;
pub mod public;
pub mod relay;
pub mod state;
pub mod token_filter;

pub use app::{RunningApi, start};
pub use config::ApiConfig;
