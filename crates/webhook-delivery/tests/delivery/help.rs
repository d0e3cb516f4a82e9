//! `webhook-delivery --help` is generated from the configuration's declarations; this checks it
//! lists every variable the service reads, including any read by hand outside them.

use clap::CommandFactory;
use webhook_delivery::config::DeliveryArgs;

#[test]
fn help_lists_every_variable_the_configuration_reads() {
    let help = qualifier_testkit::assert_help_covers(
        env!("CARGO_BIN_EXE_webhook-delivery"),
        qualifier_config::env_names(&DeliveryArgs::command()),
        "crates/webhook-delivery/src",
    );
    assert!(help.contains("QUALIFIER_DB_POOL_SIZE"));
    assert!(help.contains("QUALIFIER_DELIVERY_ORG_CONCURRENCY"));
}
