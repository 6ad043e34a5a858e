//! Apache Ballista: what the scheduler and the executors need to run
//! `ldp_estimate` (the binaries `localdp-scheduler` and `localdp-executor`
//! are Ballista's own, with these in place).
//!
//! The function travels by name: a client's logical plan names it and the
//! scheduler resolves it in its session state ([`scheduler_session_state`]);
//! the physical plan the scheduler sends an executor names it too, and the
//! executor resolves it in its function registry ([`executor_functions`]).
//! Its arguments (the config literal and the report columns) are ordinary
//! expressions, so Ballista's default logical and physical codecs carry the
//! whole call; no codec of our own is needed.

use std::sync::Arc;

use ballista_core::config::LogRotationPolicy;
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::common::Result;
use datafusion::execution::{FunctionRegistry, SessionState};
use datafusion::prelude::SessionConfig;

/// The scheduler's session state for a client's session: Ballista's own
/// (with S3 object stores, as the stock scheduler has) and `ldp_estimate`.
pub fn scheduler_session_state(config: SessionConfig) -> Result<SessionState> {
    let mut state = ballista_core::object_store::session_state_with_s3_support(config)?;
    state.register_udaf(Arc::new(crate::udaf()))?;
    Ok(state)
}

/// The executor's function registry: DataFusion's functions and
/// `ldp_estimate`.
pub fn executor_functions() -> Arc<BallistaFunctionRegistry> {
    let mut registry = BallistaFunctionRegistry::default();
    let udaf = Arc::new(crate::udaf());
    registry.aggregate_functions.insert(udaf.name().to_string(), udaf);
    Arc::new(registry)
}

/// Logs to stdout, or to rotated files in `dir` (named from `prefix`), at
/// `RUST_LOG` or else `level`, as the stock Ballista binaries do.
pub fn init_logging(level: &str, dir: Option<&str>, prefix: &str, rotation: LogRotationPolicy, thread_info: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_thread_names(thread_info)
        .with_thread_ids(thread_info)
        .with_env_filter(filter);
    match dir {
        Some(dir) => {
            let writer = match rotation {
                LogRotationPolicy::Minutely => tracing_appender::rolling::minutely(dir, prefix),
                LogRotationPolicy::Hourly => tracing_appender::rolling::hourly(dir, prefix),
                LogRotationPolicy::Daily => tracing_appender::rolling::daily(dir, prefix),
                LogRotationPolicy::Never => tracing_appender::rolling::never(dir, prefix),
            };
            subscriber.with_writer(writer).init()
        }
        None => subscriber.init(),
    }
}
