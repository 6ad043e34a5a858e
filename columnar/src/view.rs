//! A record batch viewed as a [`ReportBatch`], without copying, and added to
//! an aggregator.

use crate::schema::{ATTRIBUTES, BITS, COHORT, ID, SEED, VALUE, VALUES, VERSION_KEY};
use crate::{conform, error::{type_error, Error, Result}};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use localdp::columnar::{Bitmap, Bytes, Column, List, ReportBatch};
use localdp::{Aggregator, Rejection};

/// Where an array has nulls, its validity bitmap (`None` when it has none).
fn bitmap(nulls: Option<&NullBuffer>) -> Option<Bitmap<'_>> {
    nulls.filter(|n| n.null_count() > 0).map(|n| Bitmap { bytes: n.buffer().as_slice(), offset: n.offset() })
}

/// A primitive column, if the batch has it.
fn primitive<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<Column<'a, T::Native>>> {
    let Some(array) = batch.column_by_name(name) else { return Ok(None) };
    let array = array.as_primitive_opt::<T>().ok_or_else(|| type_error(name, expected, array.data_type()))?;
    Ok(Some(Column { values: array.values(), valid: bitmap(array.nulls()) }))
}

/// A list column of non-null primitive items, if the batch has it.
fn list<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<List<'a, T::Native>>> {
    let Some(array) = batch.column_by_name(name) else { return Ok(None) };
    let wrong = || type_error(name, expected, array.data_type());
    let lists = array.as_list_opt::<i32>().ok_or_else(wrong)?;
    let items = lists.values().as_primitive_opt::<T>().ok_or_else(wrong)?;
    if items.null_count() > 0 {
        return Err(Error::NullItems { column: name });
    }
    Ok(Some(List { offsets: lists.value_offsets(), values: items.values(), valid: bitmap(lists.nulls()) }))
}

/// The `bits` column, if the batch has it.
fn bits(batch: &RecordBatch) -> Result<Option<Bytes<'_>>> {
    let Some(array) = batch.column_by_name(BITS) else { return Ok(None) };
    let valid = bitmap(array.nulls());
    if let Some(fixed) = array.as_fixed_size_binary_opt() {
        let width = usize::try_from(fixed.value_length()).map_err(|_| Error::ColumnType {
            column: BITS,
            expected: "FixedSizeBinary or Binary",
            found: array.data_type().to_string(),
        })?;
        return Ok(Some(Bytes::Fixed { data: fixed.value_data(), width, valid }));
    }
    let binary = array.as_binary_opt::<i32>().ok_or_else(|| type_error(BITS, "FixedSizeBinary or Binary", array.data_type()))?;
    Ok(Some(Bytes::Variable { offsets: binary.value_offsets(), data: binary.value_data(), valid }))
}

/// The report format version of a batch: its schema's [`VERSION_KEY`], or
/// this build's version when the schema carries none (a batch from a query
/// engine that dropped the metadata).
fn version(batch: &RecordBatch) -> Result<u32> {
    match batch.schema_ref().metadata().get(VERSION_KEY) {
        None => Ok(localdp::report::REPORT_VERSION),
        Some(text) => text.parse().map_err(|_| Error::Metadata { key: VERSION_KEY, problem: "not a version number" }),
    }
}

/// The payload columns of a batch as borrowed typed columns (no copy), with
/// `id` as the batch's envelope. Columns are found by name; columns of other
/// names (a `day`, a `metric`) are ignored, and a payload column the batch
/// lacks is absent from every row. A payload column of another type is
/// [`Error::ColumnType`].
///
/// With [`batch_view`], which takes the envelope from the `id` column:
///
/// ```
/// use localdp::{Metric, SimulationRng};
/// use localdp::report::Payload;
/// use localdp_arrow::{batch_view, payload_view, ReportBuilder};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let mut builder = ReportBuilder::new(&metric);
/// let report = metric.randomize_text("2", &mut SimulationRng::seed_from_u64(6))?; // simulation only
/// builder.push(&report)?;
/// let batch = builder.finish();
/// let view = batch_view(&batch)?;
/// assert_eq!((view.id, view.len), (metric.id().as_str(), 1));
/// assert_eq!(view.row(0)?, report.payload);
/// let relabelled = payload_view(&batch, "another id")?; // the same columns, another envelope
/// assert!(matches!(relabelled.row(0)?, Payload::Index(_)) && relabelled.id == "another id");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn payload_view<'a>(batch: &'a RecordBatch, id: &'a str) -> Result<ReportBatch<'a>> {
    Ok(ReportBatch {
        value: primitive::<UInt64Type>(batch, VALUE, "UInt64")?,
        seed: primitive::<UInt32Type>(batch, SEED, "UInt32")?,
        cohort: primitive::<UInt32Type>(batch, COHORT, "UInt32")?,
        bits: bits(batch)?,
        attributes: list::<UInt32Type>(batch, ATTRIBUTES, "List<UInt32>")?,
        values: list::<UInt64Type>(batch, VALUES, "List<UInt64>")?,
        ..ReportBatch::new(version(batch)?, id, batch.num_rows())
    })
}

/// The metric identity of each row, as the `id` column stores it.
enum Ids<'a> {
    /// A dictionary: a key per row into the distinct identities.
    Dictionary { keys: &'a [i32], nulls: Option<&'a NullBuffer>, values: Vec<Option<&'a str>> },
    /// One string per row.
    Strings(Vec<Option<&'a str>>),
}

impl<'a> Ids<'a> {
    fn of(batch: &'a RecordBatch) -> Result<Ids<'a>> {
        let array = batch.column_by_name(ID).ok_or(Error::MissingId)?;
        let expected = "Dictionary(Int32, Utf8) or a string";
        let wrong = || type_error(ID, expected, array.data_type());
        let strings = |array: &'a dyn Array| -> Option<Vec<Option<&'a str>>> {
            match array.data_type() {
                DataType::Utf8 => Some(array.as_string::<i32>().iter().collect()),
                DataType::LargeUtf8 => Some(array.as_string::<i64>().iter().collect()),
                DataType::Utf8View => Some(array.as_string_view().iter().collect()),
                _ => None,
            }
        };
        if let Some(dictionary) = array.as_dictionary_opt::<Int32Type>() {
            let values = strings(dictionary.values().as_ref()).ok_or_else(wrong)?;
            let nulls = dictionary.keys().nulls().filter(|n| n.null_count() > 0);
            return Ok(Ids::Dictionary { keys: dictionary.keys().values(), nulls, values });
        }
        strings(array.as_ref()).map(Ids::Strings).ok_or_else(wrong)
    }

    /// Row `i`'s identity (`None`: null, or a key outside the dictionary).
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Ids::Dictionary { keys, nulls, values } => {
                if nulls.is_some_and(|n| n.is_null(i)) {
                    return None;
                }
                usize::try_from(keys[i]).ok().and_then(|k| values.get(k).copied().flatten())
            }
            Ids::Strings(rows) => rows[i],
        }
    }

    /// The one identity of every row, if that is what the column holds
    /// (checked once per dictionary value when no key is null).
    fn single(&self, rows: usize) -> Option<&'a str> {
        match self {
            Ids::Dictionary { values, nulls: None, .. } if values.len() == 1 => values[0],
            _ => {
                let first = self.get(0)?;
                (1..rows).all(|i| self.get(i) == Some(first)).then_some(first)
            }
        }
    }
}

/// A whole batch as one [`ReportBatch`]: its columns viewed without copying
/// ([`payload_view`]) and its `id` column's one identity as the envelope.
/// A batch whose rows carry different identities, or none, is
/// [`Error::MixedIds`] ([`add_record_batch`] takes such batches apart).
///
/// See the example on [`payload_view`].
pub fn batch_view(batch: &RecordBatch) -> Result<ReportBatch<'_>> {
    let ids = Ids::of(batch)?;
    let id = if batch.num_rows() == 0 { "" } else { ids.single(batch.num_rows()).ok_or(Error::MixedIds)? };
    payload_view(batch, id)
}

/// Validates and adds every row of a record batch of reports, counting
/// rejections by reason exactly as [`Aggregator::add_json`] counts the same
/// reports; returns the first rejected row and its error (`None` if every
/// row was accepted). Columns of other types are read through [`conform`]
/// (a dataframe's `Int64` value, a category id). Never fails as a whole: a
/// batch [`check_schema`](crate::check_schema) refuses (a column of a type
/// that holds no reports' values, no `id` column) has every row counted as
/// malformed, and rows whose identity is not the aggregator's
/// metric's are counted as configuration mismatches (a null identity is
/// malformed), as reports of another config in JSON Lines are.
///
/// ```
/// use localdp::{Aggregator, Metric, Rejection, SimulationRng};
/// use localdp_arrow::{add_record_batch, ReportBuilder};
/// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
/// let other = Metric::from_json(r#"{"protocol":"grr","epsilon":2,"domain":4}"#)?;
/// let mut rng = SimulationRng::seed_from_u64(7); // simulation only
/// let mut builder = ReportBuilder::new(&other);
/// builder.push(&other.randomize_text("1", &mut rng)?)?;
/// let mut aggregator = Aggregator::new(metric);
/// let (row, _) = add_record_batch(&mut aggregator, &builder.finish()).unwrap(); // another metric's rows
/// assert_eq!((row, aggregator.n(), aggregator.rejected().get(Rejection::ConfigMismatch)), (0, 0, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn add_record_batch(aggregator: &mut Aggregator, batch: &RecordBatch) -> Option<(usize, localdp::Error)> {
    let rows = batch.num_rows();
    if rows == 0 {
        return None;
    }
    let batch = &match conform(batch) {
        Ok(batch) => batch,
        Err(e) => return reject_all(aggregator, 0, rows, e),
    };
    let ids = match Ids::of(batch) {
        Ok(ids) => ids,
        Err(e) => return reject_all(aggregator, 0, rows, e),
    };
    let own = aggregator.metric().id();
    if ids.single(rows) == Some(own.as_str()) {
        return add_view(aggregator, batch, &own, 0);
    }
    // Rows of several identities: runs of rows of the same kind (this
    // metric's, another's, none), each added as a slice (no copy).
    let kind = |i: usize| match ids.get(i) {
        None => 0,
        Some(id) if id == own => 1,
        Some(_) => 2,
    };
    let mut first = None;
    let mut start = 0;
    while start < rows {
        let run = kind(start);
        let end = (start..rows).find(|&i| kind(i) != run).unwrap_or(rows);
        let slice = batch.slice(start, end - start);
        let result = match run {
            0 => reject_all(aggregator, start, end - start, Error::NullId),
            1 => add_view(aggregator, &slice, &own, start),
            _ => add_view(aggregator, &slice, ids.get(start).unwrap_or_default(), start),
        };
        first = first.or(result);
        start = end;
    }
    first
}

/// Adds the rows of `batch` (which starts at row `at` of the caller's) under
/// the identity `id`.
fn add_view(aggregator: &mut Aggregator, batch: &RecordBatch, id: &str, at: usize) -> Option<(usize, localdp::Error)> {
    match payload_view(batch, id) {
        Ok(view) => aggregator.add_batch(&view).map(|(i, e)| (at + i, e)),
        Err(e) => reject_all(aggregator, at, batch.num_rows(), e),
    }
}

/// Counts `rows` rows as malformed (a batch of them with no payload column:
/// the aggregator counts each as a report with no payload) and returns the
/// first, at row `at` of the caller's batch, with `why`.
fn reject_all(aggregator: &mut Aggregator, at: usize, rows: usize, why: Error) -> Option<(usize, localdp::Error)> {
    let own = aggregator.metric().id();
    let empty = ReportBatch::new(localdp::report::REPORT_VERSION, &own, rows);
    aggregator.add_batch(&empty);
    Some((at, localdp::Error::Rejected { reason: Rejection::Malformed, detail: why.to_string() }))
}
