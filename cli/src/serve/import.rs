//! `localdp import --db FILE --metrics METRICS.json --metric NAME EXPORT`:
//! a metric's export (`GET …/export`, JSON Lines, or `…/reports.parquet`)
//! into a collector's store (a SQLite file, or `postgres://…`), as if its
//! reports had been posted.
//!
//! Every report is checked as a post's are ([`accept`]), and stored in
//! canonical JSON. The whole file is one transaction: a line the collector
//! would reject refuses the file, naming the line (or the Parquet row), and
//! nothing of it is stored. A file is imported into a metric once: its
//! SHA-256 is stored with its reports, and importing it again stores
//! nothing. (A later export of the same metric is another file that holds
//! the earlier one's reports again: import one export per metric.)
//! A Parquet export's rejection counts (`localdp.rejected`) are added to
//! the metric's; a JSON Lines export carries none.
//!
//! On PostgreSQL the import takes a collector slot of its own, as a
//! collector does (running collectors go on), and in the same transaction
//! adds the file to that slot's aggregate state, which is what collectors
//! estimate from: a running one counts it within its refresh (1 s).

use super::collector::{accept, read_metrics_file};
use super::database::{Database, Import};
use localdp::columnar::ReportBatch;
use localdp::metric::envelope;
use localdp::report::REPORT_VERSION;
use localdp::{Aggregator, Error, Metric, Rejection, RejectionCounts};
use localdp_arrow::{batch_view, conform, ParquetFile};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub fn run(db: &Path, metrics_file: &Path, name: &str, export: &Path) -> Result<(), String> {
    let specs = read_metrics_file(metrics_file)?;
    let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        format!("--metric {name:?}: not in {} (it has {})", metrics_file.display(), names.join(", "))
    })?;
    let metric = Metric::from_json(spec.config.get()).map_err(|e| format!("{}: metric {name:?}: {e}", metrics_file.display()))?;
    let digest = digest(export)?;
    let parquet = export.extension().is_some_and(|e| e == "parquet");
    // A Parquet file is read (its footer checked) before the store is touched.
    let parquet = parquet.then(|| ParquetFile::open(export).map_err(|e| format!("{}: {e}", export.display()))).transpose()?;
    let mut store = Database::open(db)?;
    let shown = store.describe(db);
    let key = store.register(name, &metric.id(), spec.config.get())?;
    let Some(mut import) = store.import(key, &digest, &metric, name)? else {
        eprintln!(
            "localdp import: {} was imported into metric {name:?} before (SHA-256 {digest}); nothing stored",
            export.display()
        );
        return Ok(());
    };
    let refused = |e: String| format!("{}: {e}; nothing was imported", export.display());
    let rejected = match &parquet {
        Some(file) => {
            rows(file, &metric, &mut import).map_err(refused)?;
            file.exported_rejections().map_err(|e| refused(e.to_string()))?
        }
        None => {
            lines(export, &metric, &mut import).map_err(refused)?;
            RejectionCounts::default()
        }
    };
    let reports = import.commit(&rejected)?;
    eprintln!(
        "localdp import: {} into metric {name:?} of {}: {reports} reports, {} rejections counted",
        export.display(),
        shown,
        rejected.total()
    );
    Ok(())
}

/// The file's SHA-256, in hex.
fn digest(path: &Path) -> Result<String, String> {
    let at = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(at)?;
    let mut hash = Sha256::new();
    let mut chunk = vec![0; 1 << 16];
    loop {
        match file.read(&mut chunk).map_err(at)? {
            0 => break,
            n => hash.update(&chunk[..n]),
        }
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// What a report refused at `place` (a line, a row) says: the rule it
/// broke, never the report. A malformed one gets its reason alone: the
/// parser's detail can quote a field's name from the line.
fn refusal(place: String, e: &Error) -> String {
    match e {
        Error::Rejected { reason: Rejection::Malformed, .. } => format!("{place}: rejected (malformed: not a report)"),
        Error::Rejected { reason, detail } => format!("{place}: rejected ({}): {detail}", reason.as_str()),
        other => format!("{place}: {other}"),
    }
}

/// Every line of a JSON Lines export, checked and stored.
fn lines(path: &Path, metric: &Metric, import: &mut Import<'_>) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut scratch = None;
    for (at, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", at + 1))?;
        let report = accept(metric, &line, &mut scratch).map_err(|e| refusal(format!("line {}", at + 1), &e))?;
        import.add(&report)?;
    }
    Ok(())
}

/// Every row of a Parquet export, checked and stored.
fn rows(file: &ParquetFile, metric: &Metric, import: &mut Import<'_>) -> Result<(), String> {
    let mut scratch = None;
    let mut failed = None;
    file.for_each_batch(0..file.row_groups(), |first, batch| {
        if failed.is_none() {
            let at = |e: localdp_arrow::Error| format!("row {}: {e}", first + 1);
            failed = match conform(batch) {
                Ok(batch) => match batch_view(&batch) {
                    Ok(view) => add_rows(first, &view, metric, &mut scratch, import).err(),
                    Err(e) => Some(at(e)),
                },
                Err(e) => Some(at(e)),
            };
        }
    })
    .map_err(|e| e.to_string())?;
    failed.map_or(Ok(()), Err)
}

/// The rows of one batch (the first is row `first` of the file), checked
/// and stored.
fn add_rows(
    first: u64,
    view: &ReportBatch<'_>,
    metric: &Metric,
    scratch: &mut Option<Aggregator>,
    import: &mut Import<'_>,
) -> Result<(), String> {
    let place = |i: usize| format!("row {}", first + i as u64 + 1);
    if view.len > 0 && (view.version != REPORT_VERSION || view.id != metric.id()) {
        // Not the file's id or version: whoever made the file chose them.
        return Err(format!("{}: rows of another metric or report version", place(0)));
    }
    for i in 0..view.len {
        let payload = view.row(i).map_err(|e| refusal(place(i), &e))?;
        let text = envelope(metric.kind(), payload).to_json();
        let report = accept(metric, &text, scratch).map_err(|e| refusal(place(i), &e))?;
        import.add(&report)?;
    }
    Ok(())
}
