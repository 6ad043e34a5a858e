//! Reports as Parquet ([`localdp_arrow`]): `localdp export --format
//! parquet`, and the Parquet files `localdp aggregate` reads.

use crate::config::load_config;
use crate::inputs::open_input;
use crate::output::CliResult;
use crate::progress;
use localdp::{Aggregator, Rejection, RejectionCounts, Report};
use localdp_arrow::{ParquetFile, ParquetWriter, ReportBuilder};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// What `localdp export` writes.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    /// Apache Parquet, in the schema of `docs/COLUMNAR.md`.
    Parquet,
}

/// Rows per batch handed to the Parquet writer.
const BATCH_ROWS: usize = 64 * 1024;

/// `localdp export`: the JSON Lines reports of `files` (stdin if none),
/// validated as `localdp aggregate` validates them, the accepted ones
/// written to `output` and the rejected ones counted (on stderr, and in the
/// file as `localdp.rejected`). The file appears whole or not at all: it is
/// written beside `output` and renamed.
pub fn export(config: &Path, format: ExportFormat, output: &Path, row_group_rows: usize, files: &[PathBuf]) -> CliResult {
    let ExportFormat::Parquet = format;
    let (metric, config_text) = load_config(config)?;
    let partial = output.with_file_name(format!(
        ".{}.partial",
        output.file_name().map_or_else(|| "export".into(), |n| n.to_string_lossy())
    ));
    let created = std::fs::File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
    let written = (|| {
        let mut writer = ParquetWriter::new(created, &metric, config_text.trim(), row_group_rows)
            .map_err(|e| e.to_string())?;
        let mut validator = Aggregator::new(metric.clone());
        let mut builder = ReportBuilder::new(&metric);
        let write = |builder: &mut ReportBuilder, writer: &mut ParquetWriter<_>| {
            writer.write(&builder.finish()).map_err(|e| format!("{}: {e}", partial.display()))
        };
        for_each_line(files, |line| {
            // Parsed once here; a line that does not parse is counted by the
            // aggregator, as `aggregate` counts it.
            let Ok(report) = Report::from_json(line) else {
                let _ = validator.add_json(line);
                return Ok(());
            };
            if validator.add(&report).is_ok() {
                builder.push(&report).map_err(|e| format!("an accepted report does not fit the schema: {e}"))?;
                if builder.len() == BATCH_ROWS {
                    write(&mut builder, &mut writer)?;
                }
            }
            Ok(())
        })?;
        write(&mut builder, &mut writer)?;
        let rejected = *validator.rejected();
        let out = writer.finish(&rejected).map_err(|e| format!("{}: {e}", partial.display()))?;
        out.sync_all().map_err(|e| e.to_string())?;
        print_rejected(&rejected);
        Ok(())
    })();
    match written.and_then(|()| std::fs::rename(&partial, output).map_err(|e| format!("{}: {e}", output.display()))) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// Calls `each` on every non-blank line of the files (stdin if none), with a
/// progress line on a terminal; an error from `each` is prefixed with the
/// file and line.
fn for_each_line(files: &[PathBuf], mut each: impl FnMut(&[u8]) -> CliResult) -> CliResult {
    let inputs: Vec<Option<&Path>> =
        if files.is_empty() { vec![None] } else { files.iter().map(|f| Some(f.as_path())).collect() };
    let size: Option<u64> = files.iter().map(|f| std::fs::metadata(f).ok().map(|m| m.len())).sum();
    let mut progress = progress::Progress::new(size.filter(|_| !files.is_empty()));
    for input in inputs {
        let source = input.map_or("stdin".to_string(), |p| p.display().to_string());
        let mut reader = open_input(input)?;
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(|e| format!("{source}: {e}"))? == 0 {
                break;
            }
            number += 1;
            progress.advance(line.len());
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Err(e) = each(&line) {
                progress.finish();
                return Err(format!("{source}: line {number}: {e}"));
            }
        }
    }
    progress.finish();
    Ok(())
}

/// The line `localdp aggregate` and `localdp export` print on stderr when
/// reports were rejected.
pub fn print_rejected(rejected: &RejectionCounts) {
    if rejected.total() > 0 {
        let reasons: Vec<String> = Rejection::ALL
            .iter()
            .filter(|&&r| rejected.get(r) > 0)
            .map(|&r| format!("{} {r}", rejected.get(r)))
            .collect();
        eprintln!("localdp: skipped {} rejected reports ({})", rejected.total(), reasons.join(", "));
    }
}

/// Adds the rejections a Parquet file was exported with (once per file,
/// after its rows); `strict`: any is an error, as the rejected line itself
/// would have been.
pub fn add_exported_rejections(aggregator: &mut Aggregator, file: &ParquetFile, strict: bool) -> CliResult {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", file.path().display());
    let exported = file.exported_rejections().map_err(|e| at(&e))?;
    if strict && exported.total() > 0 {
        return Err(at(&format_args!("{} reports were rejected when it was exported (localdp.rejected)", exported.total())));
    }
    file.add_exported_rejections(aggregator).map_err(|e| at(&e))
}
