//! How a call of `ldp_estimate` binds to a metric: the config literal, and
//! which argument holds which column of the metric's report schema.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::{plan_datafusion_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::{Column, Literal};
use localdp::{Aggregator, Metric};

use crate::name::NAME;

/// A call's metric and where its report columns are among the arguments.
#[derive(Debug)]
pub(crate) struct Binding {
    metric: Metric,
    /// The metric's report schema (`localdp_arrow::schema`), every column
    /// nullable: a null where a report must have a value makes that row
    /// malformed (rejected and counted), never the query fail.
    schema: SchemaRef,
    /// For each column of `schema`, the index of the argument holding it.
    arguments: Vec<usize>,
    /// The size of an empty aggregator's state bytes (what a group costs).
    state_size: usize,
}

impl Binding {
    /// Binds a logical call (`ldp_estimate(config, column, ...)`).
    pub(crate) fn from_logical(args: &[Expr], info: &SimplifyContext) -> Result<Binding> {
        let config = match args.first() {
            Some(Expr::Literal(value, _)) => string_literal(value),
            _ => None,
        };
        let columns = args
            .iter()
            .skip(1)
            .map(|arg| match arg {
                Expr::Column(column) => Ok((column.name.clone(), info.get_data_type(arg)?)),
                other => plan_err!("{NAME}: the arguments after the config must be plain columns named as report fields, not {other}"),
            })
            .collect::<Result<Vec<_>>>()?;
        Binding::new(config, columns)
    }

    /// Binds a physical call (what an accumulator is made from).
    pub(crate) fn from_physical(args: &AccumulatorArgs) -> Result<Binding> {
        let config = args.exprs.first().and_then(|e| e.downcast_ref::<Literal>()).and_then(|l| string_literal(l.value()));
        let columns = args
            .exprs
            .iter()
            .zip(args.expr_fields)
            .skip(1)
            .map(|(expr, field)| match expr.downcast_ref::<Column>() {
                Some(column) => Ok((column.name().to_string(), field.data_type().clone())),
                None => plan_err!("{NAME}: the arguments after the config must be plain columns named as report fields, not {expr}"),
            })
            .collect::<Result<Vec<_>>>()?;
        Binding::new(config, columns)
    }

    /// Binds the config text to the columns `(name, type)` given after it.
    fn new(config: Option<&str>, columns: Vec<(String, DataType)>) -> Result<Binding> {
        let Some(config) = config else {
            return plan_err!("{NAME}: the first argument must be the metric's config, a string literal");
        };
        let metric = Metric::from_json(config).map_err(|e| plan_datafusion_err!("{NAME}: the config: {e}"))?;
        let reports = localdp_arrow::schema(&metric);
        let expected = || reports.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
        for (i, (name, _)) in columns.iter().enumerate() {
            if reports.field_with_name(name).is_err() {
                return plan_err!("{NAME}: {name} is not a column of this metric's reports (expected {})", expected());
            }
            if columns[..i].iter().any(|(other, _)| other == name) {
                return plan_err!("{NAME}: the column {name} is given twice");
            }
        }
        let mut arguments = Vec::with_capacity(reports.fields().len());
        for field in reports.fields() {
            let Some(i) = columns.iter().position(|(name, _)| name == field.name()) else {
                return plan_err!("{NAME}: the column {} is missing (expected {})", field.name(), expected());
            };
            let from = &columns[i].1;
            if !readable_as(from, field.data_type()) {
                return plan_err!("{NAME}: the column {} is {from}, which does not read as {}", field.name(), field.data_type());
            }
            arguments.push(i + 1);
        }
        let fields = reports.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>();
        let schema = Arc::new(Schema::new_with_metadata(fields, reports.metadata().clone()));
        let state_size = Aggregator::new(metric.clone()).to_bytes().len();
        Ok(Binding { metric, schema, arguments, state_size })
    }

    /// An empty aggregator of the metric.
    pub(crate) fn aggregator(&self) -> Aggregator {
        Aggregator::new(self.metric.clone())
    }

    /// About the memory one group's aggregator takes, in bytes.
    pub(crate) fn state_size(&self) -> usize {
        self.state_size
    }

    /// The aggregator whose state bytes these are.
    pub(crate) fn aggregator_from_bytes(&self, bytes: &[u8]) -> Result<Aggregator> {
        Aggregator::from_bytes(self.metric.clone(), bytes)
            .map_err(|e| datafusion::common::DataFusionError::Execution(format!("{NAME}: a partial state: {e}")))
    }

    /// The call's arguments as a batch of the metric's report schema (columns
    /// cast where the engine read them as another type, e.g. `Utf8View`).
    pub(crate) fn batch(&self, args: &[ArrayRef]) -> Result<RecordBatch> {
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(&self.arguments)
            .map(|(field, &i)| {
                let array = &args[i];
                // localdp-arrow reads an `id` of plain strings as well.
                let id_as_is = field.name() == localdp_arrow::ID && string(array.data_type());
                if array.data_type() == field.data_type() || id_as_is {
                    Ok(Arc::clone(array))
                } else {
                    Ok(cast(array, field.data_type())?)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// The text of a string literal.
fn string_literal(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// Whether values of this type are strings.
fn string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Whether a column of type `from` holds what the report column `to` does
/// (the same kind of value, as engines read it back: strings or their
/// dictionaries for `id`, any integers, any binary, any lists of integers),
/// so casting it loses nothing a valid report has.
fn readable_as(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let binary = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView | FixedSizeBinary(_));
    let same_kind = match (from, to) {
        (_, Dictionary(_, _)) => string(from) || matches!(from, Dictionary(_, v) if string(v)),
        (_, t) if t.is_integer() => from.is_integer(),
        (_, t) if binary(t) => binary(from),
        (List(f) | LargeList(f) | FixedSizeList(f, _), List(_)) => f.data_type().is_integer(),
        _ => false,
    };
    same_kind && can_cast_types(from, to)
}
