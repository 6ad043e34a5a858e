//! Parquet files of reports.

use crate::schema::{self, CONFIG_KEY, ID, REJECTED_KEY};
use crate::{error::{Error, Result}, view::add_record_batch};
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};
use localdp::{Aggregator, Metric, Rejection, RejectionCounts};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ARROW_SCHEMA_META_KEY};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::cell::Cell;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

/// Rows per row group by default: Parquet's own default (2^20), the unit
/// `localdp aggregate --threads` splits a file by.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// At most this many bytes (as encoded in memory) per row group, whatever
/// the rows: 2^20 reports of 1,024 bits would otherwise hold 128 MiB while
/// being written.
pub const ROW_GROUP_BYTES: usize = 64 << 20;
/// Rows per record batch read ([`ParquetFile::read_into`]): large enough that
/// the column kernels run long, small enough (a few MiB) to stay in cache.
const READ_BATCH_ROWS: usize = 64 * 1024;

/// Writes one metric's reports as a Parquet file, batch by batch
/// ([`crate::ReportBuilder`] makes the batches): zstd-compressed, the
/// schema's metadata plus [`CONFIG_KEY`] (the config's text) in the Arrow
/// schema the file embeds and in the footer's key-value metadata, and, at
/// [`ParquetWriter::finish`], [`REJECTED_KEY`] in the footer only (the
/// embedded schema is written first).
///
/// ```
/// use localdp::{Metric, Rejection, RejectionCounts, SimulationRng};
/// use localdp_arrow::{ParquetFile, ParquetWriter, ReportBuilder};
/// let config = r#"{"protocol":"grr","epsilon":1,"domain":4}"#;
/// let metric = Metric::from_json(config)?;
/// let mut rng = SimulationRng::seed_from_u64(4); // simulation only
/// let mut writer = ParquetWriter::new(Vec::new(), &metric, config, 2)?; // 2 rows a group
/// for values in [["0", "1"], ["2", "3"], ["3", "3"]] {
///     let mut builder = ReportBuilder::new(&metric);
///     for value in values {
///         builder.push(&metric.randomize_text(value, &mut rng)?)?;
///     }
///     writer.write(&builder.finish())?;
/// }
/// let mut rejected = RejectionCounts::default();
/// rejected.count(Rejection::Malformed);
/// let bytes = writer.finish(&rejected)?;
/// assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
/// let path = std::env::temp_dir().join(format!("localdp-doc-writer-{}.parquet", std::process::id()));
/// std::fs::write(&path, &bytes)?;
/// assert_eq!(ParquetFile::open(&path)?.row_groups(), 3);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ParquetWriter<W: Write + Send> {
    inner: ArrowWriter<W>,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A file of `metric`'s reports on `out`, whose config's text is
    /// `config`, in row groups of at most `row_group_rows` reports (and
    /// [`ROW_GROUP_BYTES`]).
    ///
    /// See the example on [`ParquetWriter`].
    pub fn new(out: W, metric: &Metric, config: &str, row_group_rows: usize) -> Result<Self> {
        // The config in the Arrow schema's metadata too: readers that take
        // the schema embedded in the file (pyarrow) show only that.
        let mut schema = schema::schema(metric).as_ref().clone();
        schema.metadata.insert(CONFIG_KEY.to_string(), config.to_string());
        let mut metadata: Vec<KeyValue> =
            schema.metadata().iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
        metadata.sort_by(|a, b| a.key.cmp(&b.key));
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_key_value_metadata(Some(metadata))
            .build();
        Ok(ParquetWriter { inner: ArrowWriter::try_new(out, Arc::new(schema), Some(properties))? })
    }

    /// Appends a batch of the metric's reports (a row group is written out
    /// whenever one is full).
    ///
    /// See the example on [`ParquetWriter`].
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(self.inner.write(batch)?)
    }

    /// The output so far (for streaming: take the bytes written and send
    /// them; the writer counts positions itself).
    pub fn output(&mut self) -> &mut W {
        self.inner.inner_mut()
    }

    /// Writes the last row group and the footer, with `rejected` (the
    /// rejections counted among the reports the file was made from) as
    /// [`REJECTED_KEY`], and hands back the output.
    ///
    /// See the example on [`ParquetWriter`].
    pub fn finish(mut self, rejected: &RejectionCounts) -> Result<W> {
        let counts = serde_json::to_string(rejected).expect("counts serialize");
        self.inner.append_key_value_metadata(KeyValue::new(REJECTED_KEY.to_string(), counts));
        Ok(self.inner.into_inner()?)
    }
}

/// Writes `batches` of `metric`'s reports as a whole Parquet file to `out`
/// (see [`ParquetWriter`]).
///
/// See the example on [`ParquetFile::open`].
pub fn write_parquet<W: Write + Send>(
    out: W,
    metric: &Metric,
    config: &str,
    batches: &[RecordBatch],
    rejected: &RejectionCounts,
) -> Result<W> {
    let mut writer = ParquetWriter::new(out, metric, config, ROW_GROUP_ROWS)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish(rejected)
}

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|source| Error::Io { path: path.display().to_string(), source })
}

/// Runs parquet's decoding of a file's bytes: parquet 59 still panics on
/// some malformed files (a column chunk at a negative offset, dictionary
/// keys of more than 32 bits), so a panic in `decode` is the file's error
/// ([`Error::Damaged`]) and its message is not printed (with `panic =
/// "abort"` it still ends the process).
fn decode<T>(parse: impl FnOnce() -> Result<T>) -> Result<T> {
    thread_local! {
        static DECODING: Cell<bool> = const { Cell::new(false) };
    }
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !DECODING.get() {
                hook(info);
            }
        }));
    });
    DECODING.set(true);
    let result = std::panic::catch_unwind(AssertUnwindSafe(parse));
    DECODING.set(false);
    result.unwrap_or(Err(Error::Damaged))
}

/// Refuses a file whose dictionary page claims more values than its bytes
/// hold (every plain value takes at least one byte): parquet 59 reserves
/// memory for the claimed count before it reads a value, so a file of a
/// few kilobytes could ask for gigabytes. Reads each column chunk's
/// dictionary page only.
fn dictionaries_fit(file: File, footer: &parquet::file::metadata::ParquetMetaData) -> Result<()> {
    use parquet::column::page::{Page, PageReader};
    use parquet::file::serialized_reader::SerializedPageReader;
    let file = Arc::new(file);
    for group in footer.row_groups() {
        let rows = usize::try_from(group.num_rows()).map_err(|_| Error::Damaged)?;
        for column in group.columns().iter().filter(|c| c.dictionary_page_offset().is_some()) {
            let mut pages = SerializedPageReader::new(Arc::clone(&file), column, rows, None)?;
            if let Some(Page::DictionaryPage { buf, num_values, .. }) = pages.get_next_page()? {
                if num_values as usize > buf.len() {
                    return Err(Error::Damaged);
                }
            }
        }
    }
    Ok(())
}

/// The schema a file's rows are read in: the Arrow types its Parquet schema
/// maps to, but a string `id` column as [`schema::id_type`] (the identity
/// decoded once per batch, as it was written, not once per row), and the
/// footer's key-value metadata (bar `ARROW:schema`) as the schema's.
fn read_schema(footer: &ArrowReaderMetadata) -> SchemaRef {
    let fields: Vec<_> = footer
        .schema()
        .fields()
        .iter()
        .map(|field| match field.data_type() {
            DataType::Utf8 if field.name() == ID => Arc::new(field.as_ref().clone().with_data_type(schema::id_type())),
            _ => field.clone(),
        })
        .collect();
    let metadata = footer
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter(|e| e.key != ARROW_SCHEMA_META_KEY)
        .filter_map(|e| Some((e.key.clone(), e.value.clone()?)))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, metadata))
}

/// A Parquet file of reports whose footer was read once, when it was
/// opened: its row groups (the units it can be read in, in parallel), the
/// rejections it was exported with, and its rows, read by row groups. Cheap
/// to clone (the footer is shared), so each thread of `localdp aggregate
/// --threads` reads its row groups without parsing the footer again.
///
/// Reading a file in parts, and its exported rejections:
///
/// ```
/// use localdp::{Aggregator, Metric, Rejection, RejectionCounts, SimulationRng};
/// use localdp_arrow::{ParquetFile, ParquetWriter, ReportBuilder};
/// let config = r#"{"protocol":"grr","epsilon":1,"domain":4}"#;
/// let metric = Metric::from_json(config)?;
/// let mut rng = SimulationRng::seed_from_u64(5); // simulation only
/// let mut builder = ReportBuilder::new(&metric);
/// for value in ["0", "1", "2", "3", "3"] {
///     builder.push(&metric.randomize_text(value, &mut rng)?)?;
/// }
/// let path = std::env::temp_dir().join(format!("localdp-doc-file-{}.parquet", std::process::id()));
/// let mut writer = ParquetWriter::new(std::fs::File::create(&path)?, &metric, config, 2)?;
/// writer.write(&builder.finish())?;
/// let mut rejected = RejectionCounts::default();
/// rejected.add(Rejection::BadLength, 2)?;
/// writer.finish(&rejected)?;
/// let file = ParquetFile::open(&path)?;
/// assert_eq!((file.path(), file.row_groups()), (path.as_path(), 3));
/// assert_eq!(file.exported_rejections()?, rejected);
/// // Two parts (as two threads would read them), merged: every row, and the rejections once.
/// let (mut a, mut b) = (Aggregator::new(metric.clone()), Aggregator::new(metric));
/// assert!(file.read_into(&mut a, 0..1)?.is_none());
/// assert!(file.read_into(&mut b, 1..3)?.is_none());
/// a.merge(&b)?;
/// file.add_exported_rejections(&mut a)?;
/// assert_eq!((a.n(), a.rejected().get(Rejection::BadLength)), (5, 2));
/// assert!(file.read_into(&mut b, 0..4).is_err()); // the file has 3 row groups
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ParquetFile {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
}

impl ParquetFile {
    /// Reads the footer of the Parquet file at `path`. Its rows are read in
    /// the Arrow types of its Parquet schema, never in those of the Arrow
    /// schema writers embed in the footer (`ARROW:schema`): that is a
    /// second encoding of the same schema, and arrow's reader of it panics
    /// on some malformed bytes.
    ///
    /// ```
    /// use localdp::{Aggregator, Metric, RejectionCounts, SimulationRng};
    /// use localdp_arrow::{write_parquet, ParquetFile, ReportBuilder};
    /// let config = r#"{"protocol":"olh","epsilon":1,"domain":16}"#;
    /// let metric = Metric::from_json(config)?;
    /// let mut rng = SimulationRng::seed_from_u64(2); // simulation only
    /// let mut builder = ReportBuilder::new(&metric);
    /// for value in ["1", "5", "5"] {
    ///     builder.push(&metric.randomize_text(value, &mut rng)?)?;
    /// }
    /// let path = std::env::temp_dir().join(format!("localdp-doc-{}.parquet", std::process::id()));
    /// let file = std::fs::File::create(&path)?;
    /// write_parquet(file, &metric, config, &[builder.finish()], &RejectionCounts::default())?;
    /// let parquet = ParquetFile::open(&path)?;
    /// let mut aggregator = Aggregator::new(metric);
    /// assert!(parquet.read_into(&mut aggregator, 0..parquet.row_groups())?.is_none());
    /// assert_eq!(aggregator.n(), 3);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path) -> Result<Self> {
        let file = open(path)?;
        let footer = decode(|| Ok(ArrowReaderMetadata::load(&file, ArrowReaderOptions::new().with_skip_arrow_metadata(true))?))?;
        let options = ArrowReaderOptions::new().with_schema(read_schema(&footer));
        let metadata = decode(|| Ok(ArrowReaderMetadata::try_new(footer.metadata().clone(), options)?))?;
        decode(|| dictionaries_fit(file, footer.metadata()))?;
        Ok(ParquetFile { path: path.to_path_buf(), metadata })
    }

    /// The file's path.
    ///
    /// See the example on [`ParquetFile`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The Arrow schema the file's rows are read in (before
    /// [`crate::conform`]), with the footer's metadata: what
    /// [`crate::check_schema`] checks before a row is counted.
    pub fn schema(&self) -> &SchemaRef {
        self.metadata.schema()
    }

    /// The config the file was written for ([`CONFIG_KEY`]), if it carries
    /// one.
    pub fn config(&self) -> Option<&str> {
        self.footer_value(CONFIG_KEY)
    }

    fn footer_value(&self, key: &str) -> Option<&str> {
        let metadata = self.metadata.metadata().file_metadata().key_value_metadata()?;
        metadata.iter().find(|e| e.key == key)?.value.as_deref()
    }

    /// The number of row groups.
    ///
    /// See the example on [`ParquetFile`].
    pub fn row_groups(&self) -> usize {
        self.metadata.metadata().num_row_groups()
    }

    /// The rejection counts the file carries ([`REJECTED_KEY`]): those
    /// counted among the reports it was made from (`localdp export`); none
    /// for a file without the key. Counted once per file, whichever row
    /// groups are read.
    ///
    /// See the example on [`ParquetFile`].
    pub fn exported_rejections(&self) -> Result<RejectionCounts> {
        let Some(text) = self.footer_value(REJECTED_KEY) else {
            return Ok(RejectionCounts::default());
        };
        let bad = |problem| Error::Metadata { key: REJECTED_KEY, problem };
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|_| bad("not a JSON object"))?;
        let mut counts = RejectionCounts::default();
        for (reason, count) in object {
            let reason = Rejection::ALL.into_iter().find(|r| r.as_str() == reason).ok_or(bad("an unknown reason"))?;
            let count = count.as_u64().ok_or(bad("a count that is not a whole number"))?;
            counts.add(reason, count).map_err(|_| bad("a count too large"))?;
        }
        Ok(counts)
    }

    /// Adds [`ParquetFile::exported_rejections`] to the aggregator's
    /// rejection counts: once per file, whichever of its row groups were
    /// read, so that aggregating the file gives the estimate of the JSON
    /// Lines it was exported from, `"rejected"` included.
    ///
    /// See the example on [`ParquetFile`].
    pub fn add_exported_rejections(&self, aggregator: &mut Aggregator) -> Result<()> {
        let exported = self.exported_rejections()?;
        let mut counts = *aggregator.rejected();
        for reason in Rejection::ALL {
            counts
                .add(reason, exported.get(reason))
                .map_err(|_| Error::Metadata { key: REJECTED_KEY, problem: "a count too large" })?;
        }
        aggregator.restore_rejected(counts);
        Ok(())
    }

    /// Reads the row groups `row_groups` into the aggregator
    /// ([`add_record_batch`]: rows of another metric are counted as
    /// configuration mismatches, malformed rows as malformed). Returns the
    /// first rejected row (counted from the start of the file) and its
    /// error, `None` if every row was accepted. A file that cannot be read,
    /// or row groups it does not have, are an error. The file's
    /// [`ParquetFile::exported_rejections`] are not added here.
    ///
    /// See the example on [`ParquetFile`].
    pub fn read_into(&self, aggregator: &mut Aggregator, row_groups: Range<usize>) -> Result<Option<(u64, localdp::Error)>> {
        let mut first = None;
        self.for_each_batch(row_groups, |row, batch| {
            if let Some((i, e)) = add_record_batch(aggregator, batch) {
                first.get_or_insert((row + i as u64, e));
            }
        })?;
        Ok(first)
    }

    /// Reads the row groups `row_groups` batch by batch, giving `each` the
    /// number of a batch's first row (counted from the start of the file)
    /// and the batch ([`ParquetFile::read_into`] counts them). A file that
    /// cannot be read, or row groups it does not have, are an error.
    pub fn for_each_batch(&self, row_groups: Range<usize>, mut each: impl FnMut(u64, &RecordBatch)) -> Result<()> {
        let groups = self.metadata.metadata().row_groups();
        if row_groups.end > groups.len() {
            return Err(Error::RowGroups { requested: row_groups, available: groups.len() });
        }
        let mut row: u64 = groups[..row_groups.start].iter().map(|g| g.num_rows().max(0) as u64).sum();
        let file = open(&self.path)?;
        let mut reader = decode(|| {
            Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_row_groups(row_groups.collect())
                .with_batch_size(READ_BATCH_ROWS)
                .build()?)
        })?;
        while let Some(batch) = decode(|| Ok(reader.next().transpose()?))? {
            each(row, &batch);
            row += batch.num_rows() as u64;
        }
        Ok(())
    }
}
