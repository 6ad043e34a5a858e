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

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Expr, GroupsAccumulator, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use accumulator::{EstimateAccumulator, EstimateGroupsAccumulator};
use binding::Binding;

/// The function's name in SQL.
pub const NAME: &str = "ldp_estimate";

/// `ldp_estimate` as a DataFusion aggregate function.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::from(LdpEstimate { signature: Signature::variadic_any(Volatility::Immutable) })
}

/// Registers `ldp_estimate` in a session.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(udaf());
}

/// The implementation behind [`udaf`].
#[derive(Debug, PartialEq, Eq, Hash)]
struct LdpEstimate {
    signature: Signature,
}

impl AggregateUDFImpl for LdpEstimate {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// The arguments are checked where the logical plan is simplified (every
    /// query is, before it is planned physically): the config must be a
    /// literal that parses and the columns must be the metric's, so a wrong
    /// call fails at planning, not in the middle of a scan.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        Some(Box::new(|function: AggregateFunction, info| {
            Binding::from_logical(&function.params.args, info)?;
            Ok(Expr::AggregateFunction(function))
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "state"), DataType::Binary, true))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(EstimateAccumulator::new(Arc::new(Binding::from_physical(&args)?))))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(EstimateGroupsAccumulator::new(Arc::new(Binding::from_physical(&args)?))))
    }

    /// Reports are counted, not ordered.
    fn order_sensitivity(&self) -> datafusion::logical_expr::utils::AggregateOrderSensitivity {
        datafusion::logical_expr::utils::AggregateOrderSensitivity::Insensitive
    }
}
