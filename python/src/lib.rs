//! `localdp._localdp`: the Python extension behind `import localdp`.
//!
//! Thin wrappers over the library, as the wasm bindings are (src/wasm/):
//! configs and reports cross as their JSON (Python's `json` writes a dict,
//! the library's own reader parses it, so a dict is counted exactly as the
//! same line of `localdp aggregate`), Arrow data is viewed through the
//! C data interface without a copy and counted by `localdp-arrow` (the
//! CLI's Parquet path), and estimates come back as the JSON `localdp
//! aggregate --format json` prints. Errors become the exceptions of
//! `localdp/_errors.py`; a panic becomes `localdp.Error`, never a crash.

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::RecordBatch;
use arrow_pyarrow::FromPyArrow;
use localdp::metric::ValueKind;
use localdp::{Error, Estimate, Metric, PostProcessing, Rejection, RejectionCounts, Report};
use pyo3::exceptions::{PyOSError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyBytes, PyDict, PyList, PyString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The exception class `name` of `localdp._errors`.
fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = ERRORS.get_or_try_init(py, || py.import("localdp._errors").map(Bound::unbind))?;
    module.bind(py).getattr(name)
}

/// A `localdp` exception of class `name` with `message` and attributes.
fn raise(py: Python<'_>, name: &str, message: &str, attributes: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| {
        let error = error_class(py, name)?.call1((message,))?;
        for (key, value) in attributes {
            error.setattr(*key, value)?;
        }
        Ok::<_, PyErr>(PyErr::from_value(error))
    })();
    made.unwrap_or_else(|e| e)
}

/// The library's error as the Python exception of the same name (see
/// `localdp/_errors.py`), with its typed fields as attributes.
fn py_error(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    let value = |v: &dyn ToPy| v.to_py(py);
    match error {
        Error::MalformedConfig { key, .. } => {
            raise(py, "ConfigError", &message, &[("key", value(&key)), ("parameter", value(&key))])
        }
        Error::InvalidConfig { parameter, .. } => raise(
            py,
            "ConfigError",
            &message,
            &[("key", value(&None::<String>)), ("parameter", value(&Some(parameter.to_string())))],
        ),
        Error::ValueNotInDomain { .. } => raise(py, "ValueNotInDomain", &message, &[]),
        Error::InvalidValue { .. } => raise(py, "InvalidValue", &message, &[]),
        Error::InvalidField { field, .. } => raise(py, "InvalidValue", &message, &[("field", value(&Some(field)))]),
        Error::PrivacyBudgetExceeded { cost, spent, budget } => raise(
            py,
            "PrivacyBudgetExceeded",
            &message,
            &[("cost", value(&cost)), ("spent", value(&spent)), ("budget", value(&budget))],
        ),
        Error::Rejected { reason, .. } => {
            raise(py, "Rejected", &message, &[("reason", value(&Some(reason.as_str().to_string())))])
        }
        Error::MergeMismatch { .. } => raise(py, "MergeMismatch", &message, &[]),
        Error::NoReports => raise(py, "NoReports", &message, &[]),
        Error::State(_) => raise(py, "StateError", &message, &[]),
        _ => raise(py, "Error", &message, &[]),
    }
}

/// A `ConfigError` about an argument of the API (`post`, `quantiles`), as
/// the library's errors about them are.
fn argument_error(py: Python<'_>, parameter: &str, message: &str) -> PyErr {
    raise(py, "ConfigError", message, &[("key", py.None()), ("parameter", PyString::new(py, parameter).into_any().unbind())])
}

/// A value as a Python object (for exception attributes).
trait ToPy {
    fn to_py(&self, py: Python<'_>) -> Py<PyAny>;
}

impl ToPy for f64 {
    fn to_py(&self, py: Python<'_>) -> Py<PyAny> {
        self.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(|_| py.None())
    }
}

impl ToPy for Option<String> {
    fn to_py(&self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Some(s) => PyString::new(py, s).into_any().unbind(),
            None => py.None(),
        }
    }
}

/// An error of `localdp-arrow` (a Parquet file or Arrow data that cannot
/// be read as a whole): `OSError` for a file that cannot be opened,
/// `localdp.ReadError` otherwise, naming the file (`source`) if it is one,
/// and saying that nothing was counted (`Aggregator::adding` sees to it).
fn read_error(py: Python<'_>, source: Option<&str>, error: localdp_arrow::Error) -> PyErr {
    match (error, source) {
        (localdp_arrow::Error::Io { path, source }, _) => PyOSError::new_err((source.raw_os_error().unwrap_or(0), source.to_string(), path)),
        (other, Some(path)) => raise(py, "ReadError", &format!("{path}: {other}; nothing was counted"), &[]),
        (other, None) => raise(py, "ReadError", &format!("{other}; nothing was counted"), &[]),
    }
}

/// `localdp.SchemaError` for Arrow data or a file (`source`: its path, or
/// `None`) whose schema `check_schema` refused, naming the column, its type
/// and what was expected.
fn schema_error(py: Python<'_>, source: Option<&str>, error: localdp_arrow::Error) -> PyErr {
    let message = match source {
        Some(path) => format!("{path}: {error}; nothing was counted"),
        None => format!("{error}; nothing was counted"),
    };
    let (column, found, expected) = match &error {
        localdp_arrow::Error::ColumnType { column, expected, found } => (*column, Some(found.clone()), *expected),
        _ => (localdp_arrow::ID, None, "a column of metric identities (Client.id)"),
    };
    let text = |s: &str| PyString::new(py, s).into_any().unbind();
    raise(py, "SchemaError", &message, &[("column", text(column)), ("found", found.to_py(py)), ("expected", text(expected))])
}

/// Checks a schema before anything of its data is counted.
fn check_schema(py: Python<'_>, source: Option<&str>, schema: &arrow_schema::Schema) -> PyResult<()> {
    localdp_arrow::check_schema(schema).map_err(|e| schema_error(py, source, e))
}

/// Runs `work`, turning a panic into `localdp.Error` (a bug in localdp,
/// never a crash of the interpreter).
fn guard<T>(py: Python<'_>, work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(raise(py, "Error", &format!("internal error (a bug in localdp, please report it): {what}"), &[]))
    })
}

/// `json.dumps(value)`.
fn dumps(value: &Bound<'_, PyAny>) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = value.py();
    let dumps = DUMPS.get_or_try_init(py, || py.import("json")?.getattr("dumps").map(Bound::unbind))?;
    dumps.bind(py).call1((value,))?.extract()
}

/// `json.loads(text)`.
fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let loads = LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?;
    loads.bind(py).call1((text,))
}

/// The metric of a config dict (its JSON, as everywhere else).
fn metric_of(config: &Bound<'_, PyAny>) -> PyResult<(Metric, String)> {
    let text = dumps(config).map_err(|_| {
        raise(config.py(), "ConfigError", "malformed configuration: config must be a JSON object (a dict)", &[])
    })?;
    let metric = Metric::from_json(&text).map_err(|e| py_error(config.py(), e))?;
    Ok((metric, text))
}

/// Rejection counts as a dict, every reason present.
fn counts_dict<'py>(py: Python<'py>, counts: &RejectionCounts) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for reason in Rejection::ALL {
        dict.set_item(reason.as_str(), counts.get(reason))?;
    }
    Ok(dict)
}

/// The aggregator of one metric: validates and counts reports (from dicts,
/// JSON lines, JSON Lines and Parquet files, and Arrow data), merges, saves
/// and estimates. Bad reports are counted by reason under ``rejected``.
///
/// ``config`` is the metric's config as a dict: the same JSON as the CLI's
/// CONFIG.json and the JavaScript package's config.
///
/// >>> import localdp
/// >>> config = {"protocol": "grr", "epsilon": 2, "domain": ["red", "green", "blue"]}
/// >>> client = localdp.Client(config, seed=1)  # seeded: simulation only
/// >>> agg = localdp.Aggregator(config)
/// >>> agg.add_many([client.randomize(c) for c in ["red"] * 60 + ["blue"] * 40])
/// {'accepted': 100, 'rejected': {'malformed': 0, 'unsupported_version': 0, 'config_mismatch': 0, 'out_of_range': 0, 'bad_length': 0, 'bad_subset_size': 0}}
/// >>> est = agg.estimate()
/// >>> [e["value"] for e in est["estimates"]], est["n"]
/// (['red', 'green', 'blue'], 100)
#[pyclass(module = "localdp")]
struct Aggregator {
    inner: localdp::Aggregator,
    /// The config's JSON text (for pickling).
    config: String,
    /// The configs (`localdp.config`) of the files and Arrow data added
    /// that are not this aggregator's, for `NoReports` to name.
    other_configs: Vec<String>,
    /// The first refused rows and lines (at most [`REFUSALS_KEPT`]).
    refusals: Vec<Refusal>,
}

/// How many refused rows an aggregator remembers (`rejections`).
const REFUSALS_KEPT: usize = 100;

/// A refused row or line: where it was and why (never its contents).
#[derive(Clone)]
struct Refusal {
    source: String,
    row: u64,
    reason: &'static str,
}

/// The reason an error of a refused report is counted under.
fn reason_of(error: &Error) -> &'static str {
    match error {
        Error::Rejected { reason, .. } => reason.as_str(),
        _ => Rejection::Malformed.as_str(),
    }
}

/// The refusals of one source (a file, a call), row numbers from its start.
struct Refusals<'a> {
    kept: &'a mut Vec<Refusal>,
    source: &'a str,
}

impl Refusals<'_> {
    fn full(&self) -> bool {
        self.kept.len() >= REFUSALS_KEPT
    }

    fn note(&mut self, row: u64, error: &Error) {
        if !self.full() {
            self.kept.push(Refusal { source: self.source.to_string(), row, reason: reason_of(error) });
        }
    }

    /// Adds `batch` (whose first row is row `at` of the source) and notes
    /// its first refused rows: the first one as counted, the next ones
    /// found by counting the rest again on a scratch aggregator (so every
    /// row is counted once), a chunk at a time and only while fewer than
    /// [`REFUSALS_KEPT`] are kept.
    fn add_batch(&mut self, aggregator: &mut localdp::Aggregator, batch: &RecordBatch, at: u64) {
        let Some((first, error)) = localdp_arrow::add_record_batch(aggregator, batch) else { return };
        self.note(at + first as u64, &error);
        let mut next = first + 1;
        while !self.full() && next < batch.num_rows() {
            let chunk = batch.slice(next, (batch.num_rows() - next).min(REFUSAL_CHUNK));
            let mut scratch = localdp::Aggregator::new(aggregator.metric().clone());
            match localdp_arrow::add_record_batch(&mut scratch, &chunk) {
                Some((i, error)) => {
                    self.note(at + (next + i) as u64, &error);
                    next += i + 1;
                }
                None => next += chunk.num_rows(),
            }
        }
    }

    /// Adds JSON Lines and notes their first refused lines (numbered from
    /// 0, blank lines included), as [`Refusals::add_batch`] does rows.
    fn add_lines(&mut self, aggregator: &mut localdp::Aggregator, text: &[u8]) {
        let Some((first, error)) = aggregator.add_json_lines(text) else { return };
        self.note(first as u64, &error);
        // `rest` is the text from line `line` on.
        let (mut line, mut rest) = (first + 1, after_lines(text, first + 1));
        while !self.full() && !rest.is_empty() {
            let chunk = &rest[..rest.len() - after_lines(rest, REFUSAL_CHUNK).len()];
            let mut scratch = localdp::Aggregator::new(aggregator.metric().clone());
            let skip = match scratch.add_json_lines(chunk) {
                Some((i, error)) => {
                    self.note((line + i) as u64, &error);
                    i + 1
                }
                None => REFUSAL_CHUNK,
            };
            (line, rest) = (line + skip, after_lines(rest, skip));
        }
    }
}

/// Rows (or lines) counted again at a time when looking for refused ones.
const REFUSAL_CHUNK: usize = 4096;

/// `text` after its first `lines` lines (empty if it has no more).
fn after_lines(text: &[u8], lines: usize) -> &[u8] {
    if lines == 0 {
        return text;
    }
    match text.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(lines - 1) {
        Some((end, _)) => &text[end + 1..],
        None => &[],
    }
}

/// What an ``add_*`` call accepted and rejected (by reason).
fn added<'py>(py: Python<'py>, inner: &localdp::Aggregator, n: u64, rejected: &RejectionCounts) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("accepted", inner.n() - n)?;
    dict.set_item("rejected", counts_dict(py, &inner.rejected().since(rejected))?)?;
    Ok(dict)
}

/// Why a file is not JSON Lines text, if it is not (its first bytes or a
/// NUL byte say so; the contents are never quoted).
fn not_text(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"PAR1") {
        Some("it is a Parquet file (add_parquet reads it)")
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        Some("it is gzip-compressed (decompress it first)")
    } else if bytes.contains(&0) {
        Some("it holds NUL bytes (a binary file)")
    } else {
        None
    }
}

/// The Parquet files `paths` names: a path, a directory (every file under
/// it whose name does not start with `.` or `_`, as pyarrow's datasets
/// read a directory, hive partitions included), a glob pattern, or a list
/// or tuple of these; in order, each directory's and glob's files sorted.
fn parquet_paths(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let py = paths.py();
    if paths.is_instance_of::<PyList>() || paths.is_instance_of::<pyo3::types::PyTuple>() {
        let mut all = Vec::new();
        for item in paths.try_iter()? {
            all.extend(parquet_paths(&item?)?);
        }
        return Ok(all);
    }
    let path: PathBuf = paths.extract().map_err(|_| {
        PyTypeError::new_err("add_parquet takes a path (str or os.PathLike), a directory, a glob pattern, or a list of them")
    })?;
    let missing = |what: &str| {
        pyo3::exceptions::PyFileNotFoundError::new_err((2, what.to_string(), path.display().to_string()))
    };
    if path.is_dir() {
        let os_error = |e: std::io::Error, at: &Path| PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string(), at.display().to_string()));
        let mut files = Vec::new();
        let mut folders = vec![path.clone()];
        // Each folder's real path: a link to a folder already read (a loop) is not read again.
        let mut seen = std::collections::HashSet::new();
        while let Some(folder) = folders.pop() {
            if !seen.insert(std::fs::canonicalize(&folder).map_err(|e| os_error(e, &folder))?) {
                continue;
            }
            let entries = std::fs::read_dir(&folder).map_err(|e| os_error(e, &folder))?;
            for entry in entries {
                let entry = entry.map_err(|e| PyOSError::new_err(e.to_string()))?;
                let name = entry.file_name();
                if name.to_string_lossy().starts_with(['.', '_']) {
                    continue;
                }
                let entry = entry.path();
                if entry.is_dir() {
                    folders.push(entry);
                } else {
                    files.push(entry);
                }
            }
        }
        files.sort();
        return if files.is_empty() { Err(missing("no Parquet file in this directory")) } else { Ok(files) };
    }
    let text = path.to_string_lossy();
    if !path.exists() && text.contains(['*', '?', '[']) {
        let found: Vec<PathBuf> =
            py.import("glob")?.getattr("glob")?.call((text.as_ref(),), Some(&[("recursive", true)].into_py_dict(py)?))?.extract()?;
        let mut files: Vec<PathBuf> = found.into_iter().filter(|p| p.is_file()).collect();
        files.sort();
        return if files.is_empty() { Err(missing("no file matches this pattern")) } else { Ok(files) };
    }
    Ok(vec![path])
}

/// Opens the Parquet files `paths` names and checks their schemas, before
/// anything of them is counted.
fn open_parquet(py: Python<'_>, paths: &Bound<'_, PyAny>) -> PyResult<Vec<localdp_arrow::ParquetFile>> {
    let mut files = Vec::new();
    for path in parquet_paths(paths)? {
        let file = guard(py, || localdp_arrow::ParquetFile::open(&path).map_err(|e| read_error(py, Some(&path.display().to_string()), e)))?;
        check_schema(py, Some(&path.display().to_string()), file.schema())?;
        files.push(file);
    }
    Ok(files)
}

impl Aggregator {
    fn of(inner: localdp::Aggregator, config: String) -> Self {
        Aggregator { inner, config, other_configs: Vec::new(), refusals: Vec::new() }
    }

    /// Runs `add` with the interpreter released, on a scratch aggregator
    /// and a copy of the refusals, kept only if it succeeds (merging is
    /// exact): a call that fails midway (a file that cannot be read) counts
    /// nothing. Returns what it accepted and rejected.
    fn adding<'py>(
        &mut self,
        py: Python<'py>,
        add: impl FnOnce(&mut localdp::Aggregator, &mut Vec<Refusal>) -> PyResult<()> + Send,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (n, before) = (self.inner.n(), *self.inner.rejected());
        let mut scratch = localdp::Aggregator::new(self.inner.metric().clone());
        let mut refusals = self.refusals.clone();
        guard(py, || py.detach(|| add(&mut scratch, &mut refusals)))?;
        guard(py, || self.inner.merge(&scratch).map_err(|e| py_error(py, e)))?;
        self.refusals = refusals;
        added(py, &self.inner, n, &before)
    }

    /// Adds one report given as a dict (or any JSON value), a JSON line
    /// (`str`) or its bytes, counting it if refused.
    fn add_one(&mut self, report: &Bound<'_, PyAny>) -> localdp::Result<()> {
        if let Ok(text) = report.cast::<PyString>() {
            return match text.to_cow() {
                Ok(text) => self.inner.add_json(text.as_bytes()),
                // Not UTF-8 (a lone surrogate): malformed, as such bytes are.
                Err(_) => self.inner.add_json(b"\xff"),
            };
        }
        if let Ok(bytes) = report.cast::<PyBytes>() {
            return self.inner.add_json(bytes.as_bytes());
        }
        match dumps(report) {
            Ok(text) => self.inner.add_json(text.as_bytes()),
            // Not JSON at all (a set, a date): malformed.
            Err(_) => self.inner.add_json(b"\xff"),
        }
    }

    /// Remembers `config` (the `localdp.config` of data added) when it is
    /// not this aggregator's, for [`Aggregator::no_reports`].
    fn note_config(&mut self, config: Option<&str>) {
        let Some(config) = config else { return };
        let own = self.inner.metric().id();
        let same = Metric::from_json(config).is_ok_and(|m| m.id() == own);
        if !same && !self.other_configs.iter().any(|c| c == config) {
            self.other_configs.push(config.to_string());
        }
    }

    /// Adds opened Parquet files and the rejections they were exported with.
    fn add_files<'py>(&mut self, py: Python<'py>, files: Vec<localdp_arrow::ParquetFile>) -> PyResult<Bound<'py, PyDict>> {
        for file in &files {
            self.note_config(file.config());
        }
        self.adding(py, |aggregator, kept| {
            for file in files {
                let source = file.path().display().to_string();
                let mut refusals = Refusals { kept, source: &source };
                let read = file
                    .for_each_batch(0..file.row_groups(), |row, batch| refusals.add_batch(aggregator, batch, row))
                    .and_then(|_| file.add_exported_rejections(aggregator));
                read.map_err(|e| Python::attach(|py| read_error(py, Some(&source), e)))?;
            }
            Ok(())
        })
    }

    /// `NoReports`, saying why when reports were added but none accepted:
    /// the main reason and, for `config_mismatch`, the config the data
    /// added was made for.
    fn no_reports(&self, py: Python<'_>) -> PyErr {
        let rejected = self.inner.rejected();
        let Some((main, count)) = Rejection::ALL.into_iter().map(|r| (r, rejected.get(r))).filter(|(_, c)| *c > 0).max_by_key(|(_, c)| *c)
        else {
            return py_error(py, Error::NoReports);
        };
        let mut message = format!(
            "{}: all {} reports added were rejected, {count} of them as {}",
            Error::NoReports,
            rejected.total(),
            main.as_str()
        );
        let config = match main {
            Rejection::ConfigMismatch => self.other_configs.first(),
            _ => None,
        };
        if main == Rejection::ConfigMismatch {
            message.push_str(" (made for another config than this aggregator's");
            if let Some(config) = config {
                message.push_str(&format!(": the data added carries localdp.config {config}; Aggregator.from_parquet(path) uses a file's own config"));
            }
            message.push(')');
        }
        let file_config = config.and_then(|c| loads(py, c).ok()).map_or_else(|| py.None(), |c| c.unbind());
        let main_reason = PyString::new(py, main.as_str()).into_any().unbind();
        let counts = counts_dict(py, rejected).map_or_else(|_| py.None(), |d| d.into_any().unbind());
        raise(py, "NoReports", &message, &[("main_reason", main_reason), ("rejected", counts), ("file_config", file_config)])
    }
}

#[pymethods]
impl Aggregator {
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (metric, text) = metric_of(config)?;
        Ok(Aggregator::of(localdp::Aggregator::new(metric), text))
    }

    /// The aggregator whose state ``to_bytes`` gave (here or on another
    /// machine), for the same ``config``. Raises ``StateError`` for bytes
    /// that are corrupt, truncated or of another config.
    ///
    /// >>> import localdp
    /// >>> config = {"protocol": "oue", "epsilon": 1, "domain": 8}
    /// >>> agg = localdp.Aggregator(config)
    /// >>> agg.add_many([localdp.Client(config, seed=s).randomize(3) for s in range(10)])["accepted"]
    /// 10
    /// >>> localdp.Aggregator.from_bytes(config, agg.to_bytes()).n
    /// 10
    #[staticmethod]
    fn from_bytes(py: Python<'_>, config: &Bound<'_, PyAny>, state: &[u8]) -> PyResult<Self> {
        let (metric, text) = metric_of(config)?;
        let inner = guard(py, || localdp::Aggregator::from_bytes(metric, state).map_err(|e| py_error(py, e)))?;
        Ok(Aggregator::of(inner, text))
    }

    /// The aggregator of the config a Parquet export was made for (its
    /// ``localdp.config``), with the file's reports added: what
    /// ``Aggregator(config).add_parquet(path)`` gives with the right config.
    /// ``path`` is anything ``add_parquet`` takes; the first file's config
    /// is used. Raises ``ReadError`` for a file without a config, and
    /// ``FileNotFoundError`` for an empty list.
    ///
    /// >>> import localdp, pyarrow as pa, pyarrow.parquet as pq, json, tempfile, os
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    /// >>> ids = pa.array([localdp.Client(config).id] * 2).dictionary_encode()
    /// >>> table = pa.table({"id": ids, "value": pa.array([1, 3], pa.uint64())})
    /// >>> path = os.path.join(tempfile.mkdtemp(), "reports.parquet")
    /// >>> pq.write_table(table.replace_schema_metadata({"localdp.config": json.dumps(config)}), path)
    /// >>> localdp.Aggregator.from_parquet(path).n
    /// 2
    #[staticmethod]
    fn from_parquet(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Self> {
        let files = open_parquet(py, path)?;
        let first = files.first().ok_or_else(|| pyo3::exceptions::PyFileNotFoundError::new_err((2, "no Parquet file given")))?;
        let config = first.config().ok_or_else(|| {
            let source = first.path().display();
            raise(py, "ReadError", &format!("{source}: the file carries no localdp.config: give its config to Aggregator(config)"), &[])
        })?;
        let metric = Metric::from_json(config).map_err(|e| py_error(py, e))?;
        let mut aggregator = Aggregator::of(localdp::Aggregator::new(metric), config.to_string());
        aggregator.add_files(py, files)?;
        Ok(aggregator)
    }

    /// The resolved protocol (what ``"auto"`` chose).
    ///
    /// >>> import localdp
    /// >>> localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4}).protocol
    /// 'grr'
    #[getter]
    fn protocol(&self) -> &'static str {
        self.inner.protocol().name()
    }

    /// Accepted reports so far.
    ///
    /// >>> import localdp
    /// >>> agg = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    /// >>> agg.add_many(['not json', '{"version":1}'])["accepted"], agg.n
    /// (0, 0)
    #[getter]
    fn n(&self) -> u64 {
        self.inner.n()
    }

    /// Rejected reports so far, by reason (every reason present, zeros
    /// included): the estimate's ``"rejected"``.
    ///
    /// >>> import localdp
    /// >>> agg = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    /// >>> _ = agg.add_many(["not json", {"version": 9}])
    /// >>> {k: v for k, v in agg.rejected.items() if v}
    /// {'malformed': 1, 'unsupported_version': 1}
    #[getter]
    fn rejected<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counts_dict(py, self.inner.rejected())
    }

    /// Adds one report: a dict (a ``Client.randomize`` result, a parsed
    /// JSON line) or one JSON line as ``str`` or ``bytes``. A bad report is
    /// counted under ``rejected`` and raises ``Rejected`` (its ``reason``:
    /// ``"malformed"``, ``"config_mismatch"``, ``"out_of_range"``…).
    ///
    /// >>> import localdp
    /// >>> agg = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    /// >>> agg.add(localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4}, seed=1).randomize(2))
    /// >>> try:
    /// ...     agg.add({"version": 1, "protocol": "grr"})
    /// ... except localdp.Rejected as e:
    /// ...     print(e.reason)
    /// malformed
    fn add(&mut self, py: Python<'_>, report: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(py, || self.add_one(report).map_err(|e| py_error(py, e)))
    }

    /// Adds many reports (any iterable of what ``add`` takes); bad ones are
    /// counted, never raised. Returns what this call accepted and rejected:
    /// ``{"accepted": int, "rejected": {reason: int}}``.
    ///
    /// >>> import localdp
    /// >>> agg = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    /// >>> client = localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4}, seed=1)
    /// >>> result = agg.add_many([client.randomize(v) for v in [0, 1, 1, 3]] + ["{}"])
    /// >>> result["accepted"], result["rejected"]["malformed"]
    /// (4, 1)
    fn add_many<'py>(&mut self, py: Python<'py>, reports: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        if reports.is_instance_of::<PyString>() || reports.is_instance_of::<PyBytes>() || reports.is_instance_of::<pyo3::types::PyByteArray>() {
            return Err(PyTypeError::new_err(
                "add_many takes an iterable of reports, not one str or bytes (it would count each character): \
                 add(line) adds one JSON line, add_json_lines(path) a file, add_many(text.splitlines()) lines",
            ));
        }
        let (n, before) = (self.inner.n(), *self.inner.rejected());
        guard(py, || {
            for (row, report) in reports.try_iter()?.enumerate() {
                if let Err(error) = self.add_one(&report?) {
                    Refusals { kept: &mut self.refusals, source: "add_many" }.note(row as u64, &error);
                }
            }
            Ok(())
        })?;
        added(py, &self.inner, n, &before)
    }

    /// Adds the reports of Arrow data in the columnar schema of
    /// docs/COLUMNAR.md (an ``id`` column, then the payload columns named
    /// as the JSON fields): a ``pyarrow.Table``, ``RecordBatch`` or
    /// ``RecordBatchReader``, anything with the Arrow PyCapsule interface
    /// (``__arrow_c_stream__`` or ``__arrow_c_array__``: a Polars
    /// DataFrame, a DuckDB result), or a list of these. Columns of the
    /// schema's types are read in place, without a copy; the others are
    /// read as them with no cast needed: an ``id`` of strings or a category
    /// (pandas ``category``, Polars ``Categorical`` and ``Enum``, any
    /// dictionary), numbers of any integer type or whole-number floats,
    /// large and view binary, large lists. Rows are counted exactly as the
    /// same reports as JSON: a malformed row (a negative or fractional
    /// ``value``, a null) or a row of another config is counted under
    /// ``rejected``, never raised. A column that cannot hold the schema's
    /// values (text in ``value``), or no ``id`` column, raises
    /// ``SchemaError`` before anything is counted. Returns what this call
    /// accepted and rejected, as ``add_many``.
    ///
    /// >>> import localdp, pyarrow as pa
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 1024}
    /// >>> agg = localdp.Aggregator(config)
    /// >>> ids = pa.array([localdp.Client(config).id] * 3).dictionary_encode()
    /// >>> table = pa.table({"id": ids, "value": pa.array([5, 7, 2000], pa.uint64())})
    /// >>> result = agg.add_arrow(table)
    /// >>> result["accepted"], result["rejected"]["out_of_range"]
    /// (2, 1)
    fn add_arrow<'py>(&mut self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let stream = |data: &Bound<'py, PyAny>| -> PyResult<Option<ArrowArrayStreamReader>> {
            if data.hasattr("__arrow_c_stream__")? {
                return ArrowArrayStreamReader::from_pyarrow_bound(data).map(Some);
            }
            Ok(None)
        };
        let batch = |data: &Bound<'py, PyAny>| -> PyResult<Option<RecordBatch>> {
            if data.hasattr("__arrow_c_array__")? {
                return RecordBatch::from_pyarrow_bound(data).map(Some);
            }
            Ok(None)
        };
        let not_arrow = || {
            PyTypeError::new_err(
                "add_arrow takes Arrow data: a pyarrow Table, RecordBatch or RecordBatchReader, an object with \
                 __arrow_c_stream__ or __arrow_c_array__, or a list of them",
            )
        };
        let items: Vec<Bound<'py, PyAny>> = if data.hasattr("__arrow_c_stream__")? || data.hasattr("__arrow_c_array__")? {
            vec![data.clone()]
        } else if let Ok(list) = data.cast::<PyList>() {
            list.iter().collect()
        } else {
            return Err(not_arrow());
        };
        // Imported through the C data interface (arrow's checks of the
        // foreign arrays run here, under the panic guard too), and every
        // schema checked before a row is counted.
        let sources = guard(py, || {
            let mut sources = Vec::new();
            for item in &items {
                let source = if let Some(reader) = stream(item)? {
                    Source::Stream(reader)
                } else if let Some(batch) = batch(item)? {
                    Source::Batch(batch)
                } else {
                    return Err(not_arrow());
                };
                check_schema(py, None, &source.schema())?;
                sources.push(source);
            }
            Ok(sources)
        })?;
        for source in &sources {
            self.note_config(source.schema().metadata().get(localdp_arrow::CONFIG_KEY).map(String::as_str));
        }
        let single = !data.is_instance_of::<PyList>();
        self.adding(py, |aggregator, kept| {
            for (i, source) in sources.into_iter().enumerate() {
                let name = if single { "add_arrow".to_string() } else { format!("add_arrow[{i}]") };
                let mut refusals = Refusals { kept, source: &name };
                match source {
                    Source::Batch(batch) => refusals.add_batch(aggregator, &batch, 0),
                    Source::Stream(reader) => {
                        let mut row = 0;
                        for batch in reader {
                            let batch = batch.map_err(|e| {
                                Python::attach(|py| read_error(py, None, localdp_arrow::Error::Arrow(e)))
                            })?;
                            refusals.add_batch(aggregator, &batch, row);
                            row += batch.num_rows() as u64;
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// Adds the reports of Parquet files of reports (``localdp export``,
    /// the collector's ``reports.parquet``, or any writer's, compressed
    /// with zstd, Snappy, gzip, LZ4 or Brotli), and the rejections they
    /// were exported with: the same counts as ``localdp aggregate
    /// FILE.parquet``. ``path`` is a file, a directory (its files, hive
    /// partitions included, as pyarrow reads a dataset), a glob pattern
    /// (``"reports/day=*/*.parquet"``) or a list of these. Columns are read
    /// as ``add_arrow`` reads them; every file's schema is checked before
    /// anything is counted (``SchemaError``). Returns what this call
    /// accepted and rejected, as ``add_many``. A file that cannot be
    /// opened raises ``OSError`` (``FileNotFoundError`` for a pattern or
    /// directory with no file); one that cannot be read, ``ReadError``;
    /// either way nothing of this call is counted. A directory's links to
    /// folders are followed, each folder read once.
    ///
    /// >>> import localdp, pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    /// >>> ids = pa.array([localdp.Client(config).id] * 2).dictionary_encode()
    /// >>> folder = tempfile.mkdtemp()
    /// >>> for day in ["day=1", "day=2"]:
    /// ...     os.makedirs(os.path.join(folder, day))
    /// ...     pq.write_table(pa.table({"id": ids, "value": pa.array([1, 3], pa.uint64())}),
    /// ...                    os.path.join(folder, day, "reports.parquet"))
    /// >>> localdp.Aggregator(config).add_parquet(folder)["accepted"]
    /// 4
    fn add_parquet<'py>(&mut self, py: Python<'py>, path: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let files = open_parquet(py, path)?;
        self.add_files(py, files)
    }

    /// Adds the reports of a JSON Lines file (one report per line, blank
    /// lines skipped), as ``localdp aggregate FILE`` counts them (the file
    /// is read into memory whole). A file that is not text (a Parquet file,
    /// a gzip file, NUL bytes) raises ``ReadError`` and nothing is counted.
    /// Returns what this call accepted and rejected, as ``add_many``.
    ///
    /// >>> import localdp, json, tempfile, os
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    /// >>> client = localdp.Client(config, seed=3)
    /// >>> path = os.path.join(tempfile.mkdtemp(), "reports.jsonl")
    /// >>> with open(path, "w") as f:
    /// ...     _ = f.write("\n".join(json.dumps(client.randomize(v)) for v in [0, 2, 2]) + "\nnot json\n")
    /// >>> result = localdp.Aggregator(config).add_json_lines(path)
    /// >>> result["accepted"], result["rejected"]["malformed"]
    /// (3, 1)
    fn add_json_lines<'py>(&mut self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let source = path.display().to_string();
        let text = py
            .detach(|| std::fs::read(&path))
            .map_err(|e| PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string(), source.clone())))?;
        if let Some(why) = not_text(&text) {
            return Err(raise(py, "ReadError", &format!("{source} is not JSON Lines text: {why}; nothing was counted"), &[]));
        }
        self.adding(py, |aggregator, kept| {
            Refusals { kept, source: &source }.add_lines(aggregator, &text);
            Ok(())
        })
    }

    /// The first refused rows and lines (up to ``limit``; the first 100
    /// are kept), in the order they were added: dicts with ``source``
    /// (the file's path, or ``"add_many"``, ``"add_arrow"``,
    /// ``"add_arrow[i]"`` for the i-th item of a list), ``row`` (from 0:
    /// the row of the file or data, the line of a JSON Lines file with
    /// blank lines counted, the item of ``add_many``) and ``reason`` (as
    /// in ``rejected``). A report's contents are never kept.
    ///
    /// >>> import localdp
    /// >>> agg = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    /// >>> _ = agg.add_many(['{"version": 9}', "not json"])
    /// >>> agg.rejections()
    /// [{'source': 'add_many', 'row': 0, 'reason': 'unsupported_version'}, {'source': 'add_many', 'row': 1, 'reason': 'malformed'}]
    #[pyo3(signature = (limit=10))]
    fn rejections<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyList>> {
        let rows = PyList::empty(py);
        for refusal in self.refusals.iter().take(limit) {
            let row = PyDict::new(py);
            row.set_item("source", &refusal.source)?;
            row.set_item("row", refusal.row)?;
            row.set_item("reason", refusal.reason)?;
            rows.append(row)?;
        }
        Ok(rows)
    }

    /// Adds everything ``other`` accepted and rejected (an aggregator of the
    /// same config, e.g. one per file or per machine: merging is exact).
    /// Raises ``MergeMismatch`` for another config, or for the aggregator
    /// itself (its reports would count twice).
    ///
    /// >>> import localdp
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    /// >>> a, b = localdp.Aggregator(config), localdp.Aggregator(config)
    /// >>> _ = a.add_many([localdp.Client(config, seed=1).randomize(1)] * 2)
    /// >>> _ = b.add_many([localdp.Client(config, seed=2).randomize(3)] * 3)
    /// >>> a.merge(b)
    /// >>> a.n
    /// 5
    fn merge(slf: &Bound<'_, Self>, other: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        if slf.is(other) {
            return Err(raise(py, "MergeMismatch", "cannot merge an aggregator into itself: its reports would count twice", &[]));
        }
        let other = other.borrow();
        let mut this = slf.borrow_mut();
        guard(py, || this.inner.merge(&other.inner).map_err(|e| py_error(py, e)))?;
        for config in &other.other_configs {
            this.note_config(Some(config));
        }
        let room = REFUSALS_KEPT.saturating_sub(this.refusals.len());
        this.refusals.extend(other.refusals.iter().take(room).cloned());
        Ok(())
    }

    /// The state as compact, versioned, checksummed bytes (for
    /// ``Aggregator.from_bytes``; the same bytes as the CLI and the
    /// JavaScript package write).
    ///
    /// >>> import localdp
    /// >>> state = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4}).to_bytes()
    /// >>> isinstance(state, bytes)
    /// True
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guard(py, || Ok(self.inner.to_bytes()))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The estimate: the same dict that ``localdp aggregate --format json``
    /// prints, with equal numbers. ``post`` post-processes a frequency
    /// estimate's ``frequency`` (``"norm-sub"`` or ``"project"``; the
    /// unbiased numbers stay); ``quantiles`` (a distribution metric's) are
    /// the levels to estimate, as ``--quantiles``. Raises ``NoReports``
    /// when no report was accepted.
    ///
    /// >>> import localdp
    /// >>> config = {"protocol": "piecewise", "epsilon": 2, "range": [0, 10]}
    /// >>> agg = localdp.Aggregator(config)
    /// >>> _ = agg.add_many([localdp.Client(config, seed=s).randomize(4.0) for s in range(1000)])
    /// >>> est = agg.estimate()
    /// >>> est["n"], abs(est["mean"] - 4) < 5 * est["std_error"]
    /// (1000, True)
    /// >>> try:
    /// ...     localdp.Aggregator(config).estimate()
    /// ... except localdp.NoReports as e:
    /// ...     print(e)
    /// no accepted reports to estimate from
    #[pyo3(signature = (post=None, quantiles=None))]
    fn estimate<'py>(
        &self,
        py: Python<'py>,
        post: Option<&str>,
        quantiles: Option<Vec<f64>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = guard(py, || {
            let post: PostProcessing = match post {
                None => PostProcessing::None,
                Some(name) => name.parse().map_err(|e: String| argument_error(py, "post", &e))?,
            };
            let estimate = self.inner.estimate(post).map_err(|e| match e {
                Error::NoReports => self.no_reports(py),
                e => py_error(py, e),
            })?;
            let estimate = match (estimate, quantiles) {
                (Estimate::Distribution(e), Some(levels)) => {
                    Estimate::Distribution(e.with_quantiles(&levels).map_err(|e| py_error(py, e))?)
                }
                (_, Some(_)) => {
                    return Err(argument_error(py, "quantiles", "quantiles apply to distribution metrics only"))
                }
                (estimate, None) => estimate,
            };
            Ok(serde_json::to_string(&estimate).expect("an estimate serializes"))
        })?;
        loads(py, &text)
    }

    /// The estimate as a long ``pandas.DataFrame``: one row per thing
    /// estimated, its key columns first, then ``estimate``, ``std_error``,
    /// ``ci95_low`` and ``ci95_high``. Keys: ``value`` (frequency, RAPPOR,
    /// heavy hitters), ``attribute`` (numeric), ``lo`` and ``hi`` (a
    /// distribution's bins; ``frame="quantiles"``: ``q``), ``key`` and
    /// ``stat`` (key-value: a ``"frequency"`` and a ``"mean"`` row per key),
    /// ``marginal`` and one column per attribute (marginals: a row per cell
    /// of every marginal; ``frame="histograms"``: ``attribute`` and
    /// ``value``). The rest of the estimate (``n``, ``epsilon``,
    /// ``rejected``…) is in ``DataFrame.attrs``. Needs pandas.
    ///
    /// >>> import localdp
    /// >>> config = {"protocol": "grr", "epsilon": 2, "domain": ["a", "b"]}
    /// >>> agg = localdp.Aggregator(config)
    /// >>> _ = agg.add_many([localdp.Client(config, seed=s).randomize("a") for s in range(50)])
    /// >>> frame = agg.to_pandas()
    /// >>> list(frame.columns), list(frame["value"]), frame.attrs["n"]
    /// (['value', 'estimate', 'std_error', 'ci95_low', 'ci95_high', 'unbiased_frequency'], ['a', 'b'], 50)
    #[pyo3(signature = (post=None, quantiles=None, frame=None))]
    fn to_pandas<'py>(
        &self,
        py: Python<'py>,
        post: Option<&str>,
        quantiles: Option<Vec<f64>>,
        frame: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let estimate = self.estimate(py, post, quantiles)?;
        py.import("localdp._frames")?.getattr("to_pandas")?.call1((estimate, frame))
    }

    /// Pickling: the config, then the state bytes (``to_bytes``).
    fn __getnewargs__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>,)> {
        Ok((loads(py, &self.config)?,))
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.to_bytes(py)
    }

    fn __setstate__(&mut self, py: Python<'_>, state: &[u8]) -> PyResult<()> {
        let metric = self.inner.metric().clone();
        self.inner = guard(py, || localdp::Aggregator::from_bytes(metric, state).map_err(|e| py_error(py, e)))?;
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("Aggregator(protocol={:?}, n={}, rejected={})", self.inner.protocol().name(), self.inner.n(), self.inner.rejected().total())
    }
}

/// Arrow data given to `add_arrow`, imported.
enum Source {
    Batch(RecordBatch),
    Stream(ArrowArrayStreamReader),
}

impl Source {
    fn schema(&self) -> arrow_schema::SchemaRef {
        match self {
            Source::Batch(batch) => batch.schema(),
            Source::Stream(reader) => arrow_array::RecordBatchReader::schema(reader),
        }
    }
}

/// A client: randomizes values into reports, as a device does (with the
/// config's ``memoize`` and ``budget``, its state kept in memory).
///
/// With ``seed`` (an integer) the reports are reproducible: **for simulation
/// and tests only**, since anyone who knows the seed can undo the
/// randomization. Without it, the operating system's CSPRNG draws them, as
/// in production.
///
/// >>> import localdp
/// >>> client = localdp.Client({"protocol": "oue", "epsilon": 1, "domain": 8}, seed=7)
/// >>> report = client.randomize(5)
/// >>> sorted(report), report["protocol"]
/// (['bits', 'domain', 'epsilon', 'protocol', 'version'], 'oue')
/// >>> localdp.Client({"protocol": "oue", "epsilon": 1, "domain": 8}, seed=7).randomize(5) == report
/// True
#[pyclass(module = "localdp")]
struct Client {
    core: localdp::client::Client,
    rng: Box<dyn localdp::rng::CryptoRng + Send + Sync>,
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (config, seed=None))]
    fn new(py: Python<'_>, config: &Bound<'_, PyAny>, seed: Option<u64>) -> PyResult<Self> {
        let (_, text) = metric_of(config)?;
        let mut rng: Box<dyn localdp::rng::CryptoRng + Send + Sync> = match seed {
            // FOR SIMULATION ONLY (the class docs say so).
            Some(seed) => Box::new(localdp::SimulationRng::seed_from_u64(seed)),
            None => Box::new(localdp::SecureRng::new().map_err(|e| py_error(py, e))?),
        };
        let secret = localdp::client::new_secret(&mut rng);
        let core = localdp::client::Client::new(&text, &secret, None).map_err(|e| py_error(py, e))?;
        Ok(Client { core, rng })
    }

    /// The resolved protocol (what ``"auto"`` chose).
    ///
    /// >>> import localdp
    /// >>> localdp.Client({"protocol": "auto", "epsilon": 1, "domain": 4}).protocol
    /// 'grr'
    #[getter]
    fn protocol(&self) -> &'static str {
        self.core.metric().protocol().name()
    }

    /// ε of one report.
    ///
    /// >>> import localdp
    /// >>> localdp.Client({"protocol": "grr", "epsilon": 0.5, "domain": 4}).epsilon
    /// 0.5
    #[getter]
    fn epsilon(&self) -> f64 {
        self.core.metric().epsilon()
    }

    /// The metric's identity, ``protocol:epsilon:fingerprint``: the ``id``
    /// column of the metric's Arrow and Parquet reports.
    ///
    /// >>> import localdp
    /// >>> localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4}).id.split(":")[:2]
    /// ['grr', '1.0']
    #[getter]
    fn id(&self) -> String {
        self.core.metric().id()
    }

    /// Randomizes one value into a report (a dict: the same object as a
    /// line of ``localdp randomize``). A value is a ``str`` (a label, an
    /// open domain's string) or an ``int`` of a sized domain; a number for a
    /// numeric or distribution metric (clipped to its range), a list of
    /// numbers for a record. Raises ``ValueNotInDomain`` or ``InvalidValue``
    /// for a value the metric does not take (the value is never in the
    /// message), ``PrivacyBudgetExceeded`` when the config's budget is
    /// spent (nothing is released).
    ///
    /// >>> import localdp
    /// >>> client = localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4}, seed=1)
    /// >>> client.randomize(3)["value"] in range(4)
    /// True
    /// >>> try:
    /// ...     client.randomize(9)
    /// ... except localdp.ValueNotInDomain as e:
    /// ...     print(e)
    /// value is not in the domain (expected an integer in 0..4)
    fn randomize<'py>(&mut self, py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let text = value_text(self.core.metric(), value)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let report: Report = guard(py, || self.core.randomize_text(&text, now, &mut self.rng).map_err(|e| py_error(py, e)))?;
        loads(py, &report.to_json())
    }

    fn __repr__(&self) -> String {
        format!("Client(protocol={:?}, epsilon={})", self.core.metric().protocol().name(), self.core.metric().epsilon())
    }
}

/// A Python value as the text the library's clients take (what the CLI
/// reads from a line), or a `TypeError` for a value of the wrong kind.
fn value_text(metric: &Metric, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = value.py();
    let number = |v: &Bound<'_, PyAny>| -> PyResult<f64> {
        if v.is_instance_of::<pyo3::types::PyBool>() || !(v.is_instance_of::<pyo3::types::PyInt>() || v.is_instance_of::<pyo3::types::PyFloat>()) {
            return Err(PyTypeError::new_err("a numeric value must be a number (or a list of numbers for a record)"));
        }
        let x: f64 = v.extract()?;
        if !x.is_finite() {
            return Err(py_error(py, Error::InvalidValue { expected: localdp::ExpectedValue::FiniteNumber }));
        }
        Ok(x)
    };
    match metric.value_kind() {
        ValueKind::Text => Ok(value.cast::<PyString>().map_err(|_| PyTypeError::new_err("a value of this metric must be a str"))?.to_cow()?.into_owned()),
        ValueKind::Index { size } => {
            if let Ok(text) = value.cast::<PyString>() {
                return Ok(text.to_cow()?.into_owned());
            }
            if value.is_instance_of::<pyo3::types::PyBool>() || !value.is_instance_of::<pyo3::types::PyInt>() {
                return Err(PyTypeError::new_err("a value must be a str or an int"));
            }
            let Some(size) = size else {
                return Err(PyTypeError::new_err("this domain's values are strs"));
            };
            match value.extract::<u64>() {
                Ok(index) => Ok(index.to_string()),
                Err(_) => Err(py_error(py, Error::ValueNotInDomain { domain: localdp::DomainKind::Size(size) })),
            }
        }
        ValueKind::Numbers { .. } => {
            let numbers: Vec<f64> = if let Ok(list) = value.cast::<PyList>() {
                list.iter().map(|v| number(&v)).collect::<PyResult<_>>()?
            } else if let Ok(tuple) = value.cast::<pyo3::types::PyTuple>() {
                tuple.iter().map(|v| number(&v)).collect::<PyResult<_>>()?
            } else {
                vec![number(value)?]
            };
            Ok(numbers.iter().map(|&x| localdp::privacy::number_text(x)).collect::<Vec<_>>().join(","))
        }
        ValueKind::Object => {
            if !value.is_instance_of::<pyo3::types::PyDict>() {
                return Err(PyTypeError::new_err("a value of this metric must be a dict"));
            }
            Ok(py.import("json")?.call_method1("dumps", (value,))?.extract()?)
        }
    }
}

/// A deliberate panic, for the test that a panic in Rust is
/// `localdp.Error` (python/tests/test_errors.py); not part of the API.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    guard(py, || panic!("a panic on purpose"))
}

/// The extension module: `Aggregator` and `Client` (`localdp/__init__.py`
/// exports them with the exceptions).
#[pymodule]
fn _localdp(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Aggregator>()?;
    module.add_class::<Client>()?;
    module.add_function(wrap_pyfunction!(_panic_for_tests, module)?)?;
    Ok(())
}
