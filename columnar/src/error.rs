//! The crate's error ([`Error`]) and result type.

/// What can go wrong between reports and Arrow or Parquet. Messages name
/// columns, types and keys, never a report's contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A payload column has another Arrow type than the schema's.
    #[error("column {column:?} is {found}, expected {expected}")]
    ColumnType {
        /// The column.
        column: &'static str,
        /// The types it may have.
        expected: &'static str,
        /// The type it has.
        found: String,
    },
    /// A list column's items hold nulls.
    #[error("column {column:?} has null items")]
    NullItems {
        /// The column.
        column: &'static str,
    },
    /// The batch has no `id` column.
    #[error("no \"id\" column")]
    MissingId,
    /// A row's `id` is null.
    #[error("a report without an id")]
    NullId,
    /// The rows of one batch carry different metric identities, or none
    /// ([`batch_view`](crate::batch_view) needs one).
    #[error("the rows carry different metric identities")]
    MixedIds,
    /// A metadata entry that cannot be read.
    #[error("metadata {key:?}: {problem}")]
    Metadata {
        /// The key.
        key: &'static str,
        /// What is wrong with its value.
        problem: &'static str,
    },
    /// A report of another metric or format version given to a builder.
    #[error("a report of another metric")]
    OtherMetric,
    /// A report whose payload has no place in the metric's schema.
    #[error("a report payload this metric's reports never have")]
    PayloadShape,
    /// Row groups a file does not have.
    #[error("row groups {requested:?} requested, the file has {available}")]
    RowGroups {
        /// The row groups asked for.
        requested: std::ops::Range<usize>,
        /// The file's row groups.
        available: usize,
    },
    /// A file that cannot be opened.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Parquet's own error (not a Parquet file, a corrupt page, a write that
    /// failed).
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A file that parquet's reader stopped on with a panic rather than an
    /// error (bytes it does not check before it trusts them).
    #[error("a damaged file: parquet cannot decode it")]
    Damaged,
    /// Arrow's own error.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// This crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::ColumnType`]: `column` is of type `found`, not of the types `expected` names.
pub(crate) fn type_error(column: &'static str, expected: &'static str, found: &arrow_schema::DataType) -> Error {
    Error::ColumnType { column, expected, found: found.to_string() }
}
