//! localdp estimates in SQL: the `ldp_estimate` aggregate function for
//! [Apache DataFusion](https://datafusion.apache.org) and, through its
//! function registry, for [Apache Ballista](https://datafusion.apache.org/ballista)
//! (the binaries `localdp-scheduler` and `localdp-executor`).
//!
//! ```sql
//! SELECT metric, day,
//!        ldp_estimate('{"protocol":"olh","epsilon":1,"domain":1024}', id, seed, value)
//! FROM reports
//! GROUP BY metric, day
//! ```
//!
//! - The first argument is the metric's config as a string literal (the JSON
//!   `localdp aggregate --config` reads).
//! - The others are the columns of the metric's reports, as the Arrow schema
//!   of `localdp-arrow` names them: `id` and every payload column the metric's
//!   reports carry (`value`, `seed`, `cohort`, `bits`, `attributes`,
//!   `values`), each once, in any order. They are matched by name, so they
//!   must be plain columns; anything else (a missing or an extra column, an
//!   expression, a non-literal config) is refused when the query is planned.
//! - The result is the estimate as JSON text, the JSON `localdp aggregate`
//!   prints (compact), or NULL for a group without one accepted report.
//!   Reports of another configuration (their `id` differs) are rejected and
//!   counted as `config_mismatch`, malformed ones by their reason, as the CLI
//!   counts them.
//! - The intermediate state is the engine-neutral state bytes
//!   ([`localdp::Aggregator::to_bytes`]): partial aggregates merge exactly
//!   (integer counts), so the estimate never depends on how the engine splits
//!   the reports (threads, partitions, executors).
//!
//! ```no_run
//! # async fn run() -> datafusion::error::Result<()> {
//! use datafusion::prelude::*;
//! let ctx = SessionContext::new();
//! localdp_datafusion::register(&ctx);
//! ctx.register_parquet("reports", "reports/", ParquetReadOptions::default()).await?;
//! let estimates = ctx
//!     .sql(r#"SELECT day, ldp_estimate('{"protocol":"grr","epsilon":1,"domain":8}', id, value)
//!             FROM reports GROUP BY day"#)
//!     .await?
//!     .collect()
//!     .await?;
//! # Ok(()) }
//! ```

mod accumulator;
mod binding;
pub mod cluster;
mod name;
mod udaf;

pub use name::NAME;
pub use udaf::{register, udaf};
