//! The inputs of `localdp aggregate`, read on several threads: every file is
//! cut into sources (JSON Lines into byte ranges that start and end at line
//! boundaries), the threads take the sources in order, each into its own
//! aggregator, and the aggregators are merged. Counts are integers, so the
//! merged state, and the estimate, are the same whatever the number of
//! threads. Stdin is one source, read by one thread.

use crate::output::CliResult;
use crate::progress::Progress;
use localdp::{Aggregator, Error, Metric};
use localdp_arrow::ParquetFile;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// Bytes read at a time (whole lines of it are counted at once).
const CHUNK: usize = 1 << 20;

/// The smallest part of a JSON Lines file a thread takes.
const MIN_PART: usize = 64 << 10;

/// One part of the inputs, read by one thread.
#[derive(Debug, Clone)]
pub enum Source {
    /// The lines of a JSON Lines file that start in `range` (a range that
    /// starts and ends at line boundaries).
    JsonLines {
        /// The file.
        path: PathBuf,
        /// The bytes.
        range: Range<u64>,
    },
    /// Row groups of a Parquet file of reports ([`localdp_arrow`]).
    Parquet {
        /// The file, its footer read once for all its sources.
        file: ParquetFile,
        /// The row groups.
        row_groups: Range<usize>,
    },
    /// Standard input, JSON Lines (one thread reads it all).
    Stdin,
}

/// What `localdp aggregate` reads: the sources, and the Parquet files among
/// the inputs (whose exported rejections count once per file, even for a
/// file without rows).
pub struct Plan {
    /// The parts the threads take, in order.
    pub sources: Vec<Source>,
    /// The Parquet files, in the order given.
    pub parquet: Vec<ParquetFile>,
}

/// True for a file `localdp aggregate` reads as Parquet.
pub fn is_parquet(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// The file at `path`, or stdin if none, read line by line.
pub fn open_input(path: Option<&Path>) -> CliResult<Box<dyn BufRead>> {
    Ok(match path {
        Some(p) => Box::new(BufReader::new(File::open(p).map_err(|e| format!("{}: {e}", p.display()))?)),
        None => Box::new(BufReader::new(io::stdin())),
    })
}

impl Source {
    /// The sources of the files (stdin if none), cut in parts for `threads`
    /// threads: a JSON Lines file into up to four ranges per thread (of at
    /// least [`MIN_PART`] bytes), a Parquet file into its row groups.
    pub fn plan(files: &[PathBuf], threads: usize) -> CliResult<Plan> {
        if files.is_empty() {
            return Ok(Plan { sources: vec![Source::Stdin], parquet: Vec::new() });
        }
        let mut sources = Vec::new();
        let mut parquet = Vec::new();
        for path in files {
            if is_parquet(path) {
                let file = ParquetFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let groups = file.row_groups();
                sources.extend((0..groups).map(|g| Source::Parquet { file: file.clone(), row_groups: g..g + 1 }));
                parquet.push(file);
            } else {
                let size = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.len();
                let parts = if threads <= 1 { 1 } else { (4 * threads).min(size as usize / MIN_PART + 1) };
                sources.extend(Source::json_lines(path, parts)?);
            }
        }
        Ok(Plan { sources, parquet })
    }

    /// The sources of a JSON Lines file: `parts` byte ranges of about equal
    /// size, each boundary moved forward to the start of a line.
    fn json_lines(path: &Path, parts: usize) -> CliResult<Vec<Source>> {
        let at = |e: io::Error| format!("{}: {e}", path.display());
        let mut file = File::open(path).map_err(at)?;
        let size = file.metadata().map_err(at)?.len();
        let mut cuts = vec![0];
        for part in 1..parts as u64 {
            let cut = line_start_from(&mut file, size * part / parts as u64, size).map_err(at)?;
            if cut > *cuts.last().expect("not empty") {
                cuts.push(cut);
            }
        }
        if size > *cuts.last().expect("not empty") {
            cuts.push(size);
        }
        let range = |w: &[u64]| Source::JsonLines { path: path.to_path_buf(), range: w[0]..w[1] };
        Ok(cuts.windows(2).map(range).collect())
    }

    /// What messages call it.
    fn name(&self) -> String {
        match self {
            Source::JsonLines { path, .. } => path.display().to_string(),
            Source::Parquet { file, .. } => file.path().display().to_string(),
            Source::Stdin => "stdin".to_string(),
        }
    }

    /// Adds the source's reports; returns the first rejected line or row
    /// (numbered from 0 within the source) and its error (`strict`: reading
    /// may stop there). `read` counts bytes and lines.
    fn add_to(&self, aggregator: &mut Aggregator, read: &Counters, strict: bool) -> CliResult<Option<(u64, Error)>> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", self.name());
        match self {
            Source::JsonLines { path, range } => {
                let mut file = File::open(path).map_err(|e| at(&e))?;
                file.seek(SeekFrom::Start(range.start)).map_err(|e| at(&e))?;
                add_lines(aggregator, file.take(range.end - range.start), read, strict).map_err(|e| at(&e))
            }
            Source::Parquet { file, row_groups } => file.read_into(aggregator, row_groups.clone()).map_err(|e| at(&e)),
            Source::Stdin => add_lines(aggregator, io::stdin().lock(), read, strict).map_err(|e| at(&e)),
        }
    }

    /// Where the source's line or row `index` (from 0) is, for a message.
    fn position(&self, index: u64) -> String {
        match self {
            Source::JsonLines { path, range } => {
                // Counted only for the one line an error names.
                let before = File::open(path).and_then(|f| count_lines(f.take(range.start)));
                match before {
                    Ok(before) => format!("{}: line {}", path.display(), before + index + 1),
                    Err(e) => format!("{}: {e}", path.display()),
                }
            }
            Source::Parquet { file, .. } => format!("{}: row {}", file.path().display(), index + 1),
            Source::Stdin => format!("stdin: line {}", index + 1),
        }
    }
}

/// The first line start at or after `offset` (the end of the file if none).
fn line_start_from(file: &mut File, offset: u64, size: u64) -> io::Result<u64> {
    if offset == 0 {
        return Ok(0);
    }
    // A line starts at `offset` when the byte before it is a newline.
    file.seek(SeekFrom::Start(offset - 1))?;
    let mut buffer = vec![0; 64 * 1024];
    let mut at = offset - 1;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(size);
        }
        if let Some(i) = buffer[..n].iter().position(|&b| b == b'\n') {
            return Ok(at + i as u64 + 1);
        }
        at += n as u64;
    }
}

/// The newlines of a reader.
fn count_lines(mut input: impl Read) -> io::Result<u64> {
    let mut buffer = vec![0; CHUNK];
    let mut lines = 0;
    loop {
        match input.read(&mut buffer)? {
            0 => return Ok(lines),
            n => lines += buffer[..n].iter().filter(|&&b| b == b'\n').count() as u64,
        }
    }
}

/// Bytes and lines read so far, by every thread.
#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    lines: AtomicU64,
}

/// Adds the JSON Lines of `input`, whole lines at a time
/// ([`Aggregator::add_json_lines`]); returns the first rejected line
/// (numbered from 0) and its error. `strict`: stops reading once there is one.
fn add_lines(
    aggregator: &mut Aggregator,
    mut input: impl Read,
    read: &Counters,
    strict: bool,
) -> io::Result<Option<(u64, Error)>> {
    let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK);
    let mut lines = 0u64;
    let mut first = None;
    loop {
        // Fill past what is left of the last partial line.
        let kept = buffer.len();
        buffer.resize(kept + CHUNK, 0);
        let n = loop {
            match input.read(&mut buffer[kept..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        buffer.truncate(kept + n);
        // Whole lines, or everything at the end of the input.
        let whole = if n == 0 { buffer.len() } else { buffer.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) };
        if whole > 0 {
            let text = &buffer[..whole];
            if let (Some((line, e)), None) = (aggregator.add_json_lines(text), &first) {
                first = Some((lines + line as u64, e));
            }
            // A last line without a newline is a line too.
            let counted = text.iter().filter(|&&b| b == b'\n').count() as u64 + u64::from(text.last() != Some(&b'\n'));
            lines += counted;
            read.bytes.fetch_add(whole as u64, Ordering::Relaxed);
            read.lines.fetch_add(counted, Ordering::Relaxed);
            buffer.drain(..whole);
        }
        if n == 0 || (strict && first.is_some()) {
            return Ok(first);
        }
    }
}

/// A rejection, by where it is: the source's index and the line in it.
struct Rejected {
    source: usize,
    line: u64,
    error: Error,
}

/// Aggregates the sources on `threads` threads into one aggregator. With
/// `strict`, the first rejected line (in the order of the sources) is an
/// error naming its file and line; the threads stop taking sources once one
/// is found.
pub fn aggregate(
    metric: &Metric,
    sources: &[Source],
    threads: usize,
    strict: bool,
    progress: &mut Progress,
) -> CliResult<Aggregator> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let read = Counters::default();
    let first: Mutex<Option<Rejected>> = Mutex::new(None);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let worker = || {
        let mut aggregator = Aggregator::new(metric.clone());
        while !stop.load(Ordering::Relaxed) {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(source) = sources.get(index) else { break };
            match source.add_to(&mut aggregator, &read, strict) {
                Ok(None) => {}
                Ok(Some((line, error))) => {
                    let mut first = first.lock().expect("no thread panics holding it");
                    if first.as_ref().is_none_or(|f| (index, line) < (f.source, f.line)) {
                        *first = Some(Rejected { source: index, line, error });
                    }
                    if strict {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(message) => {
                    failure.lock().expect("no thread panics holding it").get_or_insert(message);
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        aggregator
    };
    let aggregators: Vec<Aggregator> = std::thread::scope(|scope| {
        // Each thread says when it is done; until all are, the progress line
        // is redrawn from the counters.
        let (done, finished) = mpsc::channel();
        // No more threads than sources (stdin is one).
        let handles: Vec<_> = (0..threads.min(sources.len()).max(1))
            .map(|_| {
                let done = done.clone();
                scope.spawn(move || {
                    let aggregator = worker();
                    let _ = done.send(());
                    aggregator
                })
            })
            .collect();
        drop(done);
        let mut running = handles.len();
        while running > 0 {
            match finished.recv_timeout(Duration::from_millis(100)) {
                Ok(()) => running -= 1,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    progress.update(read.bytes.load(Ordering::Relaxed), read.lines.load(Ordering::Relaxed))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        handles.into_iter().map(|h| h.join().expect("an aggregating thread does not panic")).collect()
    });
    progress.finish();
    if let Some(message) = failure.into_inner().expect("no thread panics holding it") {
        return Err(message);
    }
    if let (true, Some(rejected)) = (strict, first.into_inner().expect("no thread panics holding it")) {
        return Err(format!("{}: {}", sources[rejected.source].position(rejected.line), rejected.error));
    }
    let mut aggregators = aggregators.into_iter();
    let mut merged = aggregators.next().expect("at least one thread");
    for other in aggregators {
        merged.merge(&other).map_err(|e| e.to_string())?;
    }
    Ok(merged)
}
