//! # localdp-arrow
//!
//! localdp reports as Apache Arrow record batches and Parquet files: the
//! schema of one metric's reports, a builder, a zero-copy view of a batch as
//! the core's [`localdp::columnar::ReportBatch`] (so an aggregator counts
//! Arrow columns directly), and Parquet files written and read in row
//! groups. The CLI's `localdp export --format parquet` and `localdp
//! aggregate FILE.parquet`, the collector's `reports.parquet` and the
//! DataFusion crate use it.
//!
//! ## The schema
//!
//! One schema per metric ([`schema`]): a non-null `id` column, then only the
//! payload columns the metric's reports carry, named as the JSON wire
//! fields ([`localdp::report`]) and in this order:
//!
//! | column | Arrow type | null |
//! |---|---|---|
//! | `id` | `Dictionary(Int32, Utf8)`: [`localdp::Metric::id`], `protocol:epsilon:fingerprint`, stored once per batch | never |
//! | `value` | `UInt64` | where some reports lack it |
//! | `seed` | `UInt32` | 〃 |
//! | `cohort` | `UInt32` | 〃 |
//! | `bits` | `FixedSizeBinary(w)` when every report has `w` bytes, else `Binary`; raw bytes, bit `i` in byte `i/8` at position `i%8` | 〃 |
//! | `attributes` | `List<UInt32>` (items non-null) | 〃 |
//! | `values` | `List<UInt64>` (items non-null) | 〃 |
//!
//! Metadata: `localdp.version` (`"1"`, the report format version) on the
//! schema; Parquet files also carry `localdp.config` (the config's JSON text,
//! in the embedded schema and the footer) and, in the footer,
//! `localdp.rejected` (the rejections counted among the reports the file
//! was made from, as the estimate's `"rejected"` prints them).
//! `docs/COLUMNAR.md` has an example per payload shape.
//!
//! ```
//! use localdp::{Aggregator, Metric, SimulationRng};
//! let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
//! let mut rng = SimulationRng::seed_from_u64(7); // simulation only
//! let mut builder = localdp_arrow::ReportBuilder::new(&metric);
//! for value in ["0", "1", "3", "3"] {
//!     builder.push(&metric.randomize_text(value, &mut rng).unwrap()).unwrap();
//! }
//! let batch = builder.finish();
//! let mut aggregator = Aggregator::new(metric);
//! assert!(localdp_arrow::add_record_batch(&mut aggregator, &batch).is_none());
//! assert_eq!(aggregator.n(), 4);
//! ```

#![deny(missing_docs)]

mod builder;
mod conform;
mod error;
mod file;
mod schema;
mod view;

pub use builder::ReportBuilder;
pub use conform::{check_schema, conform};
pub use error::{Error, Result};
pub use file::{write_parquet, ParquetFile, ParquetWriter, ROW_GROUP_BYTES, ROW_GROUP_ROWS};
pub use schema::{
    id_type, schema, ATTRIBUTES, BITS, COHORT, CONFIG_KEY, ID, REJECTED_KEY, SEED, VALUE, VALUES, VERSION_KEY,
};
pub use view::{add_record_batch, batch_view, payload_view};
