//! Reports into a record batch.

use crate::schema::{self, item, ATTRIBUTES, BITS, COHORT, SEED, VALUE, VALUES};
use crate::error::{Error, Result};
use arrow_array::builder::{BinaryBuilder, FixedSizeBinaryBuilder, ListBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, SchemaRef};
use localdp::{Metric, Payload, Report};
use std::sync::Arc;

/// One payload column being built.
enum Builder {
    U64(UInt64Builder),
    U32(UInt32Builder),
    /// And the width of every row.
    FixedBits(FixedSizeBinaryBuilder, usize),
    Bits(BinaryBuilder),
    U32List(ListBuilder<UInt32Builder>),
    U64List(ListBuilder<UInt64Builder>),
}

/// A report's payload as its wire fields (`None`: the report has no such
/// field).
#[derive(Default)]
struct Fields<'r> {
    value: Option<u64>,
    seed: Option<u32>,
    cohort: Option<u32>,
    bits: Option<&'r [u8]>,
    attributes: Option<&'r [u32]>,
    values: Option<&'r [u64]>,
}

impl<'r> Fields<'r> {
    fn of(payload: &'r Payload) -> Result<Fields<'r>> {
        Ok(match payload {
            Payload::Index(v) => Fields { value: Some(*v), ..Fields::default() },
            Payload::Hashed { seed, value } => Fields { seed: Some(*seed), value: Some(*value), ..Fields::default() },
            Payload::Bits(bits) => Fields { bits: Some(bits.as_bytes()), ..Fields::default() },
            Payload::Cohort { cohort, bits } => {
                Fields { cohort: Some(*cohort), bits: Some(bits.as_bytes()), ..Fields::default() }
            }
            Payload::Grouped { group, seed, value } => {
                Fields { cohort: Some(*group), seed: Some(*seed), value: Some(*value), ..Fields::default() }
            }
            Payload::Sampled { attributes, values } => {
                Fields { attributes: Some(attributes), values: Some(values), ..Fields::default() }
            }
            _ => return Err(Error::PayloadShape),
        })
    }

    /// Whether the field of column `name` is present.
    fn has(&self, name: &str) -> bool {
        match name {
            VALUE => self.value.is_some(),
            SEED => self.seed.is_some(),
            COHORT => self.cohort.is_some(),
            BITS => self.bits.is_some(),
            ATTRIBUTES => self.attributes.is_some(),
            VALUES => self.values.is_some(),
            _ => false,
        }
    }

    /// The number of fields present.
    fn count(&self) -> usize {
        [VALUE, SEED, COHORT, BITS, ATTRIBUTES, VALUES].iter().filter(|n| self.has(n)).count()
    }
}

/// Builds a [`RecordBatch`] of one metric's reports, in [`crate::schema`].
///
/// ```
/// use localdp::{Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"olh","epsilon":1,"domain":8}"#).unwrap();
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let mut builder = localdp_arrow::ReportBuilder::new(&metric);
/// for value in ["1", "5", "5"] {
///     builder.push(&metric.randomize_text(value, &mut rng).unwrap()).unwrap();
/// }
/// let batch = builder.finish();
/// assert_eq!((batch.num_rows(), batch.num_columns()), (3, 3)); // id, value, seed
/// ```
pub struct ReportBuilder {
    schema: SchemaRef,
    id: String,
    /// The metric's envelope, which every pushed report must carry.
    protocol: localdp::Protocol,
    epsilon: f64,
    fingerprint: String,
    /// One per payload column, in schema order (the `id` column is made at
    /// [`ReportBuilder::finish`]).
    columns: Vec<(String, bool, Builder)>,
    rows: usize,
}

impl ReportBuilder {
    /// An empty batch of `metric`'s reports.
    ///
    /// With [`ReportBuilder::len`], [`ReportBuilder::is_empty`] and the
    /// refusals of [`ReportBuilder::push`]:
    ///
    /// ```
    /// use localdp::{Metric, SimulationRng};
    /// use localdp_arrow::{Error, ReportBuilder};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":12}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(3); // simulation only
    /// let mut builder = ReportBuilder::new(&metric);
    /// assert!(builder.is_empty());
    /// builder.push(&metric.randomize_text("7", &mut rng)?)?;
    /// let other = Metric::from_json(r#"{"protocol":"oue","epsilon":2,"domain":12}"#)?;
    /// let refused = builder.push(&other.randomize_text("7", &mut rng)?);
    /// assert!(matches!(refused, Err(Error::OtherMetric))); // and nothing appended
    /// assert_eq!(builder.len(), 1);
    /// let batch = builder.finish();
    /// assert_eq!((batch.num_rows(), builder.len()), (1, 0)); // the builder is empty again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(metric: &Metric) -> ReportBuilder {
        let schema = schema::schema(metric);
        let columns = schema
            .fields()
            .iter()
            .skip(1)
            .map(|field| {
                let builder = match field.data_type() {
                    DataType::UInt64 => Builder::U64(UInt64Builder::new()),
                    DataType::UInt32 => Builder::U32(UInt32Builder::new()),
                    DataType::FixedSizeBinary(width) => {
                        Builder::FixedBits(FixedSizeBinaryBuilder::new(*width), *width as usize)
                    }
                    DataType::Binary => Builder::Bits(BinaryBuilder::new()),
                    DataType::List(f) if f.data_type() == &DataType::UInt32 => {
                        Builder::U32List(ListBuilder::new(UInt32Builder::new()).with_field(item(DataType::UInt32)))
                    }
                    _ => Builder::U64List(ListBuilder::new(UInt64Builder::new()).with_field(item(DataType::UInt64))),
                };
                (field.name().clone(), field.is_nullable(), builder)
            })
            .collect();
        let id = metric.id();
        let fingerprint = id.rsplit(':').next().unwrap_or_default().to_string();
        ReportBuilder {
            schema,
            id,
            protocol: metric.protocol(),
            epsilon: metric.epsilon(),
            fingerprint,
            columns,
            rows: 0,
        }
    }

    /// The rows pushed so far.
    ///
    /// See the example on [`ReportBuilder::new`].
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when no row was pushed.
    ///
    /// See the example on [`ReportBuilder::new`].
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Appends one report as a row. A report of another metric or format
    /// version ([`Error::OtherMetric`]), or whose payload the metric's reports
    /// never have ([`Error::PayloadShape`]), is refused and nothing is
    /// appended. The payload is not validated against the configuration
    /// (that is the aggregator's job): a builder stores what it is given.
    ///
    /// See the example on [`ReportBuilder::new`].
    pub fn push(&mut self, report: &Report) -> Result<()> {
        if report.version != localdp::report::REPORT_VERSION
            || report.protocol != self.protocol
            || report.epsilon.to_bits() != self.epsilon.to_bits()
            || report.domain != self.fingerprint
        {
            return Err(Error::OtherMetric);
        }
        let fields = Fields::of(&report.payload)?;
        // Every field the report has must have a column, and every column
        // the report lacks must be nullable; a fixed-width bits column takes
        // only that width.
        let mut covered = 0;
        for (name, nullable, builder) in &self.columns {
            if fields.has(name) {
                covered += 1;
                if let (Builder::FixedBits(_, width), Some(bits)) = (builder, fields.bits) {
                    if bits.len() != *width {
                        return Err(Error::PayloadShape);
                    }
                }
            } else if !nullable {
                return Err(Error::PayloadShape);
            }
        }
        if covered != fields.count() {
            return Err(Error::PayloadShape);
        }
        for (name, _, builder) in &mut self.columns {
            match builder {
                Builder::U64(b) => b.append_option(fields.value),
                Builder::U32(b) => b.append_option(if name == SEED { fields.seed } else { fields.cohort }),
                Builder::FixedBits(b, _) => match fields.bits {
                    Some(bits) => b.append_value(bits).expect("the width was checked"),
                    None => b.append_null(),
                },
                Builder::Bits(b) => b.append_option(fields.bits),
                Builder::U32List(b) => match fields.attributes {
                    Some(items) => b.append_value(items.iter().map(|&a| Some(a))),
                    None => b.append_null(),
                },
                Builder::U64List(b) => match fields.values {
                    Some(items) => b.append_value(items.iter().map(|&v| Some(v))),
                    None => b.append_null(),
                },
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// The rows pushed so far as a record batch; the builder is empty again.
    ///
    /// See the example on [`ReportBuilder::new`].
    pub fn finish(&mut self) -> RecordBatch {
        let keys = Int32Array::from(vec![0; self.rows]);
        let ids: ArrayRef = Arc::new(StringArray::from(vec![self.id.as_str()]));
        let id = DictionaryArray::<Int32Type>::try_new(keys, ids).expect("every key is 0, the one value");
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(id)];
        for (_, _, builder) in &mut self.columns {
            arrays.push(match builder {
                Builder::U64(b) => Arc::new(b.finish()),
                Builder::U32(b) => Arc::new(b.finish()),
                Builder::FixedBits(b, _) => Arc::new(b.finish()),
                Builder::Bits(b) => Arc::new(b.finish()),
                Builder::U32List(b) => Arc::new(b.finish()),
                Builder::U64List(b) => Arc::new(b.finish()),
            });
        }
        self.rows = 0;
        RecordBatch::try_new(Arc::clone(&self.schema), arrays).expect("the columns are built from the schema")
    }
}
