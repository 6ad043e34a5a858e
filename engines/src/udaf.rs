//! `ldp_estimate` as a DataFusion aggregate function ([`udaf`]): its
//! signature, its state and its accumulators, and its arguments checked
//! when the query is planned.

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

use crate::accumulator::{EstimateAccumulator, EstimateGroupsAccumulator};
use crate::binding::Binding;
use crate::name::NAME;

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
