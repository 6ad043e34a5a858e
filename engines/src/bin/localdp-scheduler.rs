//! `localdp-scheduler`: Ballista's scheduler with `ldp_estimate` registered.
//! It takes the stock `ballista-scheduler`'s flags (`--help`).

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::error::BallistaError;
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{Config, SchedulerConfig};
use ballista_scheduler::scheduler_process::start_server;
use clap::Parser;

fn main() -> ballista_core::error::Result<()> {
    // The stock scheduler's runtime: a deep stack for deep plans.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .enable_time()
        .thread_stack_size(32 * 1024 * 1024)
        .build()?;
    runtime.block_on(run())
}

async fn run() -> ballista_core::error::Result<()> {
    let opt = Config::parse();
    let prefix = format!("scheduler_{}_{}_{}", opt.namespace, opt.external_host, opt.bind_port);
    localdp_datafusion::cluster::init_logging(
        &opt.log_level_setting,
        opt.log_dir.as_deref(),
        &prefix,
        opt.log_rotation_policy,
        opt.print_thread_info,
    );
    let addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_port)
        .parse()
        .map_err(|e: std::net::AddrParseError| BallistaError::Configuration(e.to_string()))?;
    let config: SchedulerConfig = opt.try_into()?;
    let config = config
        .with_override_config_producer(Arc::new(ballista_core::object_store::session_config_with_s3_support))
        .with_override_session_builder(Arc::new(localdp_datafusion::cluster::scheduler_session_state));
    let cluster = BallistaCluster::new_from_config(&config).await?;
    start_server(cluster, addr, Arc::new(config)).await
}
