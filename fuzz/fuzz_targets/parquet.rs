//! Untrusted Parquet files (what `localdp aggregate FILE.parquet` reads):
//! `ParquetFile::open` of the bytes, its exported rejections, and its row
//! groups read into an aggregator of one of the fixed configurations.
//!
//! Property: no panic; reading the row groups one at a time (as `localdp
//! aggregate --threads` splits a file) counts what reading them at once
//! counts, when both succeed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::{Aggregator, Metric};
use localdp_arrow::ParquetFile;
use std::path::PathBuf;
use std::sync::OnceLock;

mod configs;
use configs::CONFIGS;

fn metrics() -> &'static [Metric] {
    static METRICS: OnceLock<Vec<Metric>> = OnceLock::new();
    METRICS.get_or_init(|| CONFIGS.iter().map(|c| Metric::from_json(c).expect("a valid fuzz config")).collect())
}

/// The file the bytes are written to (`ParquetFile` reads files): one per
/// fuzzing process, in fuzz/target/ (untracked, and freed with the build).
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join(format!("input-{}.parquet", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the configuration (the seeds are one exported
    // file per configuration, so that their rows are decoded as its own);
    // the rest is the file.
    let Some((&pick, bytes)) = data.split_first() else { return };
    let metric = &metrics()[usize::from(pick) % CONFIGS.len()];
    std::fs::write(scratch(), bytes).expect("a writable temporary directory");
    let Ok(file) = ParquetFile::open(scratch()) else { return };
    let _ = file.exported_rejections();
    let mut whole = Aggregator::new(metric.clone());
    let Ok(_) = file.read_into(&mut whole, 0..file.row_groups()) else { return };
    let mut groups = Aggregator::new(metric.clone());
    for g in 0..file.row_groups() {
        if file.read_into(&mut groups, g..g + 1).is_err() {
            return;
        }
    }
    assert_eq!(whole.to_bytes(), groups.to_bytes(), "row groups one at a time count as the whole file");
});
