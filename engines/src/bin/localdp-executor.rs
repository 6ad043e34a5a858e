//! `localdp-executor`: Ballista's executor with `ldp_estimate` in its function
//! registry. It takes the stock `ballista-executor`'s flags (`--help`).

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::error::BallistaError;
use ballista_core::object_store::{runtime_env_with_s3_support, session_config_with_s3_support};
use ballista_executor::config::Config;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_executor::health::spawn_health_server;
use clap::Parser;

#[tokio::main]
async fn main() -> ballista_core::error::Result<()> {
    let opt = Config::parse();
    let health_addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_health_port)
        .parse()
        .map_err(|e| BallistaError::General(format!("invalid --bind-health-port address: {e}")))?;
    let mut config: ExecutorProcessConfig = opt.try_into()?;
    config.override_config_producer = Some(Arc::new(session_config_with_s3_support));
    config.override_runtime_producer = Some(Arc::new(runtime_env_with_s3_support));
    config.override_function_registry = Some(localdp_datafusion::cluster::executor_functions());
    localdp_datafusion::cluster::init_logging(
        &config.special_mod_log_level,
        config.log_dir.as_deref(),
        &config.log_file_name_prefix(),
        config.log_rotation_policy,
        config.print_thread_info,
    );
    // `/healthz` (alive) and `/readyz` (registered with the scheduler).
    let (stop_health, health_stopped) = tokio::sync::oneshot::channel();
    let health = spawn_health_server(health_addr, config.health.clone(), health_stopped);
    let result = start_executor_process(Arc::new(config)).await;
    let _ = stop_health.send(());
    if let Ok(Err(e)) = health.await {
        tracing::warn!("health server: {e}");
    }
    result
}
