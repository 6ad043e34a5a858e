//! The Arrow schema of one metric's reports.

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use localdp::columnar::{Presence, ReportFields};
use localdp::Metric;
use std::collections::HashMap;
use std::sync::Arc;

/// Schema metadata: the report format version of every row (`"1"`).
pub const VERSION_KEY: &str = "localdp.version";
/// Schema metadata: the metric's config, as JSON text.
pub const CONFIG_KEY: &str = "localdp.config";
/// Parquet metadata written by `localdp export`: the JSON object of the
/// rejection counts of the reports the file was made from.
pub const REJECTED_KEY: &str = "localdp.rejected";

/// The column names: the report's JSON wire fields, in schema order, after
/// [`ID`].
pub const ID: &str = "id";
/// `value` (UInt64).
pub const VALUE: &str = "value";
/// `seed` (UInt32).
pub const SEED: &str = "seed";
/// `cohort` (UInt32).
pub const COHORT: &str = "cohort";
/// `bits` (FixedSizeBinary or Binary).
pub const BITS: &str = "bits";
/// `attributes` (List of UInt32).
pub const ATTRIBUTES: &str = "attributes";
/// `values` (List of UInt64).
pub const VALUES: &str = "values";

/// The type of the `id` column: the metric identity stored once per batch
/// (the dictionary), a key per row.
///
/// ```
/// use localdp::Metric;
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let schema = localdp_arrow::schema(&metric);
/// assert_eq!(schema.field(0).data_type(), &localdp_arrow::id_type());
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn id_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The item field of the list columns (`attributes`, `values`): never null.
pub(crate) fn item(data_type: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", data_type, false))
}

/// The Arrow schema of `metric`'s reports: the `id` column, then only the
/// payload columns its reports use ([`Metric::report_fields`]), each nullable
/// only when some reports lack it; the schema metadata carries
/// [`VERSION_KEY`]. (Parquet files add [`CONFIG_KEY`] and [`REJECTED_KEY`]:
/// see [`crate::ParquetWriter`].)
///
/// ```
/// use arrow_schema::DataType;
/// let metric = localdp::Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":20}"#).unwrap();
/// let schema = localdp_arrow::schema(&metric);
/// let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
/// assert_eq!(names, ["id", "bits"]);
/// assert_eq!(schema.field(1).data_type(), &DataType::FixedSizeBinary(3));
/// assert!(!schema.field(1).is_nullable());
/// assert_eq!(schema.metadata()["localdp.version"], "1");
/// ```
pub fn schema(metric: &Metric) -> SchemaRef {
    let fields = metric.report_fields();
    let mut columns = vec![Field::new(ID, id_type(), false)];
    let mut column = |name: &str, presence: Presence, data_type: DataType| {
        if presence != Presence::Never {
            columns.push(Field::new(name, data_type, presence == Presence::Sometimes));
        }
    };
    column(VALUE, fields.value, DataType::UInt64);
    column(SEED, fields.seed, DataType::UInt32);
    column(COHORT, fields.cohort, DataType::UInt32);
    column(BITS, fields.bits, bits_type(&fields));
    column(ATTRIBUTES, fields.sampled, DataType::List(item(DataType::UInt32)));
    column(VALUES, fields.sampled, DataType::List(item(DataType::UInt64)));
    let metadata = HashMap::from([(VERSION_KEY.to_string(), localdp::report::REPORT_VERSION.to_string())]);
    Arc::new(Schema::new_with_metadata(columns, metadata))
}

/// `bits`: FixedSizeBinary when every report's bits have one width, else
/// Binary.
fn bits_type(fields: &ReportFields) -> DataType {
    match fields.bits_width.and_then(|w| i32::try_from(w).ok()) {
        Some(width) => DataType::FixedSizeBinary(width),
        None => DataType::Binary,
    }
}
