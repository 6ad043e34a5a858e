//! Reports as columns: a batch of reports of one configuration, its
//! envelope once and each payload field as a borrowed typed column, laid out
//! as Apache Arrow lays out its arrays (so an Arrow record batch is viewed
//! without copying; this crate itself has no Arrow dependency).
//!
//! [`crate::Aggregator::add_batch`] validates and counts a [`ReportBatch`]
//! exactly as [`crate::Aggregator::add_json`] would count the same reports,
//! one by one: the same accepted counts and the same rejections by reason.
//! Frequency and numeric aggregators do it with column kernels (no
//! allocation per row); every other family goes row by row through
//! [`ReportBatch::row`].
//!
//! ```
//! use localdp::columnar::{Column, ReportBatch};
//! use localdp::{Aggregator, Metric, Rejection};
//! let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
//! let id = metric.id();
//! let values = [0u64, 3, 2, 9]; // 9 is outside the domain
//! let batch = ReportBatch {
//!     value: Some(Column { values: &values, valid: None }),
//!     ..ReportBatch::new(1, &id, values.len())
//! };
//! let mut aggregator = Aggregator::new(metric);
//! let (row, error) = aggregator.add_batch(&batch).unwrap(); // the first rejection
//! assert_eq!(row, 3);
//! assert!(matches!(error, localdp::Error::Rejected { reason: Rejection::OutOfRange, .. }));
//! assert_eq!((aggregator.n(), aggregator.rejected().get(Rejection::OutOfRange)), (3, 1));
//! ```

use localdp_core::error::{Error, Rejection, Result};
use localdp_core::report::{unsupported_version, BitVector, Payload, REPORT_VERSION};
pub use localdp_core::report::{Presence, ReportFields};

/// An Arrow-style validity bitmap: bit `i` (least significant first) of
/// `bytes`, counted from `offset`, is 1 where row `i` is present.
#[derive(Debug, Clone, Copy)]
pub struct Bitmap<'a> {
    /// The bits.
    pub bytes: &'a [u8],
    /// The bit of row 0.
    pub offset: usize,
}

impl Bitmap<'_> {
    /// Whether row `i` is present; `None` when the bitmap is too short.
    ///
    /// ```
    /// use localdp::columnar::Bitmap;
    /// let valid = Bitmap { bytes: &[0b0000_0101], offset: 1 }; // rows start at bit 1
    /// assert_eq!((valid.get(0), valid.get(1), valid.get(7)), (Some(false), Some(true), None));
    /// ```
    pub fn get(&self, i: usize) -> Option<bool> {
        let bit = self.offset.checked_add(i)?;
        self.bytes.get(bit / 8).map(|byte| byte >> (bit % 8) & 1 == 1)
    }
}

/// Whether row `i` is present under an optional validity bitmap (none: all
/// rows are), or malformed when the bitmap is too short.
fn present(valid: Option<Bitmap<'_>>, i: usize) -> Result<bool> {
    match valid {
        None => Ok(true),
        Some(bitmap) => bitmap.get(i).ok_or_else(short_column),
    }
}

fn short_column() -> Error {
    Rejection::Malformed.error("a column or its validity bitmap is shorter than the batch")
}

fn bad_offsets() -> Error {
    Rejection::Malformed.error("a column's offsets are out of bounds")
}

/// One column of fixed-width values: row `i` is `values[i]`.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a, T> {
    /// The values, one per row (a null row's value is ignored).
    pub values: &'a [T],
    /// Which rows are present; `None`: all of them.
    pub valid: Option<Bitmap<'a>>,
}

impl<T: Copy> Column<'_, T> {
    /// Row `i`: `None` where it is null.
    fn get(&self, i: usize) -> Result<Option<T>> {
        let value = *self.values.get(i).ok_or_else(short_column)?;
        Ok(present(self.valid, i)?.then_some(value))
    }
}

/// A column of byte strings: the `bits` payload as raw bytes (bit `i` in
/// byte `i/8` at position `i%8`, as the hex on the wire), not hex.
#[derive(Debug, Clone, Copy)]
pub enum Bytes<'a> {
    /// Every row `width` bytes (Arrow FixedSizeBinary): row `i` is
    /// `data[i*width..(i+1)*width]`.
    Fixed {
        /// The rows, back to back.
        data: &'a [u8],
        /// The bytes of one row.
        width: usize,
        /// Which rows are present; `None`: all of them.
        valid: Option<Bitmap<'a>>,
    },
    /// Arrow Binary: row `i` is `data[offsets[i]..offsets[i+1]]`
    /// (`offsets.len()` is the number of rows plus one).
    Variable {
        /// Where each row starts, and where the last ends.
        offsets: &'a [i32],
        /// The rows' bytes.
        data: &'a [u8],
        /// Which rows are present; `None`: all of them.
        valid: Option<Bitmap<'a>>,
    },
}

impl<'a> Bytes<'a> {
    /// Row `i`'s bytes: `None` where it is null.
    pub(crate) fn get(&self, i: usize) -> Result<Option<&'a [u8]>> {
        let (range, valid) = match *self {
            Bytes::Fixed { width, valid, .. } => {
                let start = i.checked_mul(width).ok_or_else(bad_offsets)?;
                (start..start.checked_add(width).ok_or_else(bad_offsets)?, valid)
            }
            Bytes::Variable { offsets, valid, .. } => (offset_range(offsets, i)?, valid),
        };
        let data = match *self {
            Bytes::Fixed { data, .. } | Bytes::Variable { data, .. } => data,
        };
        // A null row's offsets may be anything; they are not read.
        if !present(valid, i)? {
            return Ok(None);
        }
        data.get(range).map(Some).ok_or_else(bad_offsets)
    }
}

/// `offsets[i]..offsets[i+1]` as a range, if both exist, are not negative
/// and do not decrease.
fn offset_range(offsets: &[i32], i: usize) -> Result<std::ops::Range<usize>> {
    let (Some(&start), Some(&end)) = (offsets.get(i), offsets.get(i.wrapping_add(1))) else {
        return Err(short_column());
    };
    match (usize::try_from(start), usize::try_from(end)) {
        (Ok(start), Ok(end)) if start <= end => Ok(start..end),
        _ => Err(bad_offsets()),
    }
}

/// A list column (Arrow List of non-null values): row `i` is
/// `values[offsets[i]..offsets[i+1]]`.
#[derive(Debug, Clone, Copy)]
pub struct List<'a, T> {
    /// Where each row's list starts, and where the last ends.
    pub offsets: &'a [i32],
    /// Every row's items, back to back.
    pub values: &'a [T],
    /// Which rows are present; `None`: all of them.
    pub valid: Option<Bitmap<'a>>,
}

impl<'a, T> List<'a, T> {
    /// Row `i`'s items: `None` where it is null.
    pub(crate) fn get(&self, i: usize) -> Result<Option<&'a [T]>> {
        let range = offset_range(self.offsets, i)?;
        if !present(self.valid, i)? {
            return Ok(None);
        }
        self.values.get(range).map(Some).ok_or_else(bad_offsets)
    }
}

/// A batch of reports of one configuration: the envelope once, the payload
/// as columns named as the JSON wire fields ([`crate::report`]).
///
/// A column that is `None` is absent from every row; a row's payload is
/// chosen by which columns are present in that row, by the rule
/// [`localdp_core::Report::from_json`] applies to a report's fields.
#[derive(Debug, Clone, Copy)]
pub struct ReportBatch<'a> {
    /// The report format version of every row ([`REPORT_VERSION`]); another
    /// version has every row rejected as unsupported.
    pub version: u32,
    /// The metric's identity as [`localdp_core::Metric::id`] writes it
    /// (`protocol:epsilon:fingerprint`); another metric's has every
    /// well-formed row rejected as a configuration mismatch.
    pub id: &'a str,
    /// The number of rows.
    pub len: usize,
    /// `value`: an index, a bucket, a bit or an output index.
    pub value: Option<Column<'a, u64>>,
    /// `seed`: a hash seed or a Hadamard column.
    pub seed: Option<Column<'a, u32>>,
    /// `cohort`: a cohort, a sketch row or a tree level.
    pub cohort: Option<Column<'a, u32>>,
    /// `bits`: a bit vector, as raw bytes.
    pub bits: Option<Bytes<'a>>,
    /// `attributes`: sampled attributes or buckets.
    pub attributes: Option<List<'a, u32>>,
    /// `values`: one output per sampled attribute.
    pub values: Option<List<'a, u64>>,
}

impl<'a> ReportBatch<'a> {
    /// A batch of `len` rows with no column yet (fill in the payload's).
    ///
    /// With [`ReportBatch::row`]:
    ///
    /// ```
    /// use localdp::columnar::{Bitmap, Column, ReportBatch};
    /// use localdp::report::Payload;
    /// let batch = ReportBatch {
    ///     value: Some(Column { values: &[4, 0, 9], valid: Some(Bitmap { bytes: &[0b101], offset: 0 }) }),
    ///     ..ReportBatch::new(1, "grr:1.0:abc", 3)
    /// };
    /// assert_eq!(batch.row(0)?, Payload::Index(4));
    /// assert!(batch.row(1).is_err()); // a null row carries no payload
    /// assert!(batch.row(3).is_err()); // beyond the batch: malformed, never a panic
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(version: u32, id: &'a str, len: usize) -> Self {
        ReportBatch {
            version,
            id,
            len,
            value: None,
            seed: None,
            cohort: None,
            bits: None,
            attributes: None,
            values: None,
        }
    }

    /// Row `i`'s payload. A column shorter than the batch, offsets out of
    /// bounds, a row beyond `len` or a combination of fields no report has
    /// make the row malformed (an error, never a panic).
    ///
    /// See the example on [`ReportBatch::new`].
    pub fn row(&self, i: usize) -> Result<Payload> {
        if i >= self.len {
            return Err(short_column());
        }
        let value = self.value.map(|c| c.get(i)).transpose()?.flatten();
        let seed = self.seed.map(|c| c.get(i)).transpose()?.flatten();
        let cohort = self.cohort.map(|c| c.get(i)).transpose()?.flatten();
        let bits = self.bits.map(|c| c.get(i)).transpose()?.flatten();
        let attributes = self.attributes.map(|c| c.get(i)).transpose()?.flatten();
        let values = self.values.map(|c| c.get(i)).transpose()?.flatten();
        Payload::from_fields(
            seed,
            value,
            bits,
            cohort,
            attributes.map(<[u32]>::to_vec),
            values.map(<[u64]>::to_vec),
            |bytes| Ok(BitVector::from_bytes(bytes.to_vec())),
        )
    }

    /// What the envelope check of the batch against the metric `id` found.
    pub(crate) fn envelope(&self, id: &str) -> Envelope {
        if self.version != REPORT_VERSION {
            Envelope::OtherVersion
        } else if self.id != id {
            Envelope::OtherMetric
        } else {
            Envelope::Matches
        }
    }

    /// The rejection of a row whose envelope does not match (`None` when it
    /// does): every row of another version; every well-formed row of
    /// another metric (a malformed one is malformed first, as in JSON).
    pub(crate) fn envelope_rejection(&self, envelope: Envelope, i: usize) -> Option<Error> {
        match envelope {
            Envelope::Matches => None,
            Envelope::OtherVersion => Some(unsupported_version()),
            Envelope::OtherMetric => Some(match self.row(i) {
                Err(e) => e,
                Ok(_) => Rejection::ConfigMismatch.error("report batch made for another metric"),
            }),
        }
    }
}

/// Rows a reader gathers into [`Columns`] before counting them as one batch.
#[doc(hidden)]
pub const BATCH: usize = 4096;

/// Reports' payload fields gathered row by row into owned columns, then
/// lent as one [`ReportBatch`]: how readers that meet reports one at a time
/// (JSON Lines' canonical lines, the full wasm module's JS objects) hand
/// them to the kernels. Every row has the same fields (the first row's), so
/// the columns have no nulls: the form a kernel counts.
#[derive(Default)]
#[doc(hidden)]
pub struct Columns {
    len: usize,
    /// The fields of every row.
    shape: [bool; 6],
    value: Vec<u64>,
    seed: Vec<u32>,
    cohort: Vec<u32>,
    bits: Lists<u8>,
    attributes: Lists<u32>,
    values: Lists<u64>,
}

/// One report's payload fields, for [`Columns::push`] (`None`: absent).
#[derive(Default, Clone, Copy)]
#[doc(hidden)]
pub struct Row<'a> {
    pub value: Option<u64>,
    pub seed: Option<u32>,
    pub cohort: Option<u32>,
    /// Raw bytes, as in a [`Bytes`] column.
    pub bits: Option<&'a [u8]>,
    pub attributes: Option<&'a [u32]>,
    pub values: Option<&'a [u64]>,
}

impl Row<'_> {
    /// Which fields the row has: value, seed, cohort, bits, attributes, values.
    fn shape(&self) -> [bool; 6] {
        [
            self.value.is_some(),
            self.seed.is_some(),
            self.cohort.is_some(),
            self.bits.is_some(),
            self.attributes.is_some(),
            self.values.is_some(),
        ]
    }
}

impl Columns {
    /// The rows gathered.
    #[doc(hidden)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no row is gathered.
    #[doc(hidden)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a row; false, with nothing added, if it cannot join the rows
    /// gathered: it has other fields, or its lists would take a column past
    /// what `i32` offsets address. (Count those first and push it again: a
    /// row refused by empty columns is one no batch can carry.)
    #[doc(hidden)]
    pub fn push(&mut self, row: Row<'_>) -> bool {
        let shape = row.shape();
        let fits = self.bits.fits(row.bits) && self.attributes.fits(row.attributes) && self.values.fits(row.values);
        if !fits || (!self.is_empty() && shape != self.shape) {
            return false;
        }
        self.shape = shape;
        self.value.extend(row.value);
        self.seed.extend(row.seed);
        self.cohort.extend(row.cohort);
        self.bits.push(row.bits);
        self.attributes.push(row.attributes);
        self.values.push(row.values);
        self.len += 1;
        true
    }

    /// The rows as a batch of the metric `id`, in the current format
    /// version (counted by `Aggregator::add_columns`).
    pub(crate) fn batch<'a>(&'a self, id: &'a str) -> ReportBatch<'a> {
        let [value, seed, cohort, bits, attributes, values] = self.shape;
        fn column<T>(present: bool, values: &[T]) -> Option<Column<'_, T>> {
            present.then_some(Column { values, valid: None })
        }
        ReportBatch {
            value: column(value, &self.value),
            seed: column(seed, &self.seed),
            cohort: column(cohort, &self.cohort),
            bits: self.bits.list(bits).map(|l| Bytes::Variable { offsets: l.offsets, data: l.values, valid: None }),
            attributes: self.attributes.list(attributes),
            values: self.values.list(values),
            ..ReportBatch::new(REPORT_VERSION, id, self.len)
        }
    }

    /// Empties the columns (keeping their memory).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.value.clear();
        self.seed.clear();
        self.cohort.clear();
        self.bits.clear();
        self.attributes.clear();
        self.values.clear();
    }
}

/// A column of lists (or byte strings) being filled.
struct Lists<T> {
    /// Where each row's list starts, and where the last ends.
    offsets: Vec<i32>,
    items: Vec<T>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists { offsets: vec![0], items: Vec::new() }
    }
}

impl<T: Copy> Lists<T> {
    /// Whether `list` fits under `i32` offsets after the items so far.
    fn fits(&self, list: Option<&[T]>) -> bool {
        list.is_none_or(|list| i32::try_from(self.items.len() + list.len()).is_ok())
    }

    /// Adds a row's list, if it has one (and it [`fits`](Lists::fits)).
    fn push(&mut self, list: Option<&[T]>) {
        if let Some(list) = list {
            self.items.extend_from_slice(list);
            self.offsets.push(self.items.len() as i32);
        }
    }

    fn list(&self, present: bool) -> Option<List<'_, T>> {
        present.then_some(List { offsets: &self.offsets, values: &self.items, valid: None })
    }

    fn clear(&mut self) {
        self.offsets.truncate(1);
        self.items.clear();
    }
}

/// The result of checking a batch's envelope once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Envelope {
    /// The aggregator's version and metric.
    Matches,
    /// Another report format version.
    OtherVersion,
    /// Another metric's identity.
    OtherMetric,
}

