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

use arrow_array::cast::AsArray;
use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::{Array, ArrayRef, BinaryArray, ListArray, RecordBatch};
use arrow_pyarrow::FromPyArrow;
use localdp::metric::ValueKind;
use localdp::{Error, Estimate, Metric, PostProcessing, Rejection, RejectionCounts, Report};
use pyo3::exceptions::{PyOSError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

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
/// `localdp.ReadError` otherwise.
fn read_error(py: Python<'_>, error: localdp_arrow::Error) -> PyErr {
    match error {
        localdp_arrow::Error::Io { path, source } => PyOSError::new_err((source.raw_os_error().unwrap_or(0), source.to_string(), path)),
        other => raise(py, "ReadError", &other.to_string(), &[]),
    }
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
}

/// What an ``add_*`` call accepted and rejected (by reason).
fn added<'py>(py: Python<'py>, inner: &localdp::Aggregator, n: u64, rejected: &RejectionCounts) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("accepted", inner.n() - n)?;
    dict.set_item("rejected", counts_dict(py, &inner.rejected().since(rejected))?)?;
    Ok(dict)
}

impl Aggregator {
    /// Runs `add` on the aggregator with the interpreter released, then
    /// returns what it accepted and rejected.
    fn adding<'py>(
        &mut self,
        py: Python<'py>,
        add: impl FnOnce(&mut localdp::Aggregator) -> PyResult<()> + Send,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (n, before) = (self.inner.n(), *self.inner.rejected());
        let inner = &mut self.inner;
        guard(py, || py.detach(|| add(inner)))?;
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
}

#[pymethods]
impl Aggregator {
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Aggregator { inner: localdp::Aggregator::new(metric_of(config)?.0) })
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
        let (metric, _) = metric_of(config)?;
        let inner = guard(py, || localdp::Aggregator::from_bytes(metric, state).map_err(|e| py_error(py, e)))?;
        Ok(Aggregator { inner })
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
        let (n, before) = (self.inner.n(), *self.inner.rejected());
        guard(py, || {
            for report in reports.try_iter()? {
                let _ = self.add_one(&report?);
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
    /// DataFrame, a DuckDB result), or a list of these. The columns are read
    /// in place, without a copy (but for Polars' ``BinaryView`` and
    /// ``LargeList`` columns, which are narrowed to the schema's ``Binary``
    /// and ``List``). Rows are counted exactly as the same
    /// reports as JSON: a malformed row, a row of another config or a
    /// column of the wrong type is counted under ``rejected``, never raised.
    /// Returns what this call accepted and rejected, as ``add_many``.
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
        // foreign arrays run here, under the panic guard too).
        let sources = guard(py, || {
            let mut sources = Vec::new();
            for item in &items {
                if let Some(reader) = stream(item)? {
                    sources.push(Source::Stream(reader));
                } else if let Some(batch) = batch(item)? {
                    sources.push(Source::Batch(batch));
                } else {
                    return Err(not_arrow());
                }
            }
            Ok(sources)
        })?;
        self.adding(py, |aggregator| {
            for source in sources {
                match source {
                    Source::Batch(batch) => {
                        localdp_arrow::add_record_batch(aggregator, &narrow(batch));
                    }
                    Source::Stream(reader) => {
                        for batch in reader {
                            let batch = batch.map_err(|e| {
                                Python::attach(|py| read_error(py, localdp_arrow::Error::Arrow(e)))
                            })?;
                            localdp_arrow::add_record_batch(aggregator, &narrow(batch));
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// Adds the reports of a Parquet file of reports (``localdp export``,
    /// the collector's ``reports.parquet``), and the rejections it was
    /// exported with: the same counts as ``localdp aggregate FILE.parquet``.
    /// Returns what this call accepted and rejected, as ``add_many``. A file
    /// that cannot be opened raises ``OSError``; one that cannot be read,
    /// ``ReadError``.
    ///
    /// >>> import localdp, pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    /// >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    /// >>> ids = pa.array([localdp.Client(config).id] * 2).dictionary_encode()
    /// >>> path = os.path.join(tempfile.mkdtemp(), "reports.parquet")
    /// >>> pq.write_table(pa.table({"id": ids, "value": pa.array([1, 3], pa.uint64())}), path)
    /// >>> localdp.Aggregator(config).add_parquet(path)["accepted"]
    /// 2
    fn add_parquet<'py>(&mut self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let file = guard(py, || localdp_arrow::ParquetFile::open(&path).map_err(|e| read_error(py, e)))?;
        self.adding(py, |aggregator| {
            let read = file
                .read_into(aggregator, 0..file.row_groups())
                .and_then(|_| file.add_exported_rejections(aggregator));
            read.map(|_| ()).map_err(|e| Python::attach(|py| read_error(py, e)))
        })
    }

    /// Adds the reports of a JSON Lines file (one report per line, blank
    /// lines skipped), as ``localdp aggregate FILE`` counts them (the file
    /// is read into memory whole). Returns
    /// what this call accepted and rejected, as ``add_many``.
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
        self.adding(py, |aggregator| {
            let text = std::fs::read(&path)
                .map_err(|e| PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string(), path.display().to_string())))?;
            aggregator.add_json_lines(&text);
            Ok(())
        })
    }

    /// Adds everything ``other`` accepted and rejected (an aggregator of the
    /// same config, e.g. one per file or per machine: merging is exact).
    /// Raises ``MergeMismatch`` for another config.
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
        // Merging an aggregator into itself adds a copy of it.
        let other = other.borrow().inner.clone();
        let mut this = slf.borrow_mut();
        guard(py, || this.inner.merge(&other).map_err(|e| py_error(py, e)))
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
            let estimate = match (self.inner.estimate(post).map_err(|e| py_error(py, e))?, quantiles) {
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

    /// The estimate as a ``pandas.DataFrame``: one row per value (frequency,
    /// RAPPOR, heavy hitters), attribute (numeric) or bin (distribution),
    /// with its estimate, standard error and 95% interval (columns
    /// ``estimate``, ``std_error``, ``ci95_low``, ``ci95_high``, after the
    /// row's key: ``value``, ``attribute`` or ``lo`` and ``hi``). The
    /// rest of the estimate (``n``, ``epsilon``, ``rejected``…) is in
    /// ``DataFrame.attrs``. Needs pandas.
    ///
    /// >>> import localdp
    /// >>> config = {"protocol": "grr", "epsilon": 2, "domain": ["a", "b"]}
    /// >>> agg = localdp.Aggregator(config)
    /// >>> _ = agg.add_many([localdp.Client(config, seed=s).randomize("a") for s in range(50)])
    /// >>> frame = agg.to_pandas()
    /// >>> list(frame.columns), list(frame["value"]), frame.attrs["n"]
    /// (['value', 'estimate', 'std_error', 'ci95_low', 'ci95_high', 'unbiased_frequency'], ['a', 'b'], 50)
    #[pyo3(signature = (post=None, quantiles=None))]
    fn to_pandas<'py>(
        &self,
        py: Python<'py>,
        post: Option<&str>,
        quantiles: Option<Vec<f64>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let estimate = self.estimate(py, post, quantiles)?;
        py.import("localdp._frames")?.getattr("to_pandas")?.call1((estimate,))
    }

    fn __repr__(&self) -> String {
        format!("Aggregator(protocol={:?}, n={}, rejected={})", self.inner.protocol().name(), self.inner.n(), self.inner.rejected().total())
    }
}

/// The batch with its large and view binary columns as `Binary`, and its
/// large lists as `List`: the layouts the schema's columns have
/// (docs/COLUMNAR.md), which Polars exports as `BinaryView` and
/// `LargeList`. Only those columns are copied; a column that does not fit
/// the smaller offsets is left as it is (its rows are then counted as
/// malformed, as any column of another type is).
fn narrow(batch: RecordBatch) -> RecordBatch {
    let narrowed = |column: &ArrayRef| -> Option<ArrayRef> {
        // Rows of bytes as Binary, if their bytes fit its offsets.
        fn binary<'a>(rows: impl Iterator<Item = Option<&'a [u8]>> + Clone) -> Option<ArrayRef> {
            let bytes: usize = rows.clone().flatten().map(<[u8]>::len).sum();
            (bytes <= i32::MAX as usize).then(|| Arc::new(rows.collect::<BinaryArray>()) as ArrayRef)
        }
        if let Some(view) = column.as_binary_view_opt() {
            return binary(view.iter());
        }
        if let Some(large) = column.as_binary_opt::<i64>() {
            return binary(large.iter());
        }
        let large = column.as_list_opt::<i64>()?;
        let offsets: Vec<i32> = large.value_offsets().iter().map(|&o| i32::try_from(o).ok()).collect::<Option<_>>()?;
        let arrow_schema::DataType::LargeList(field) = large.data_type() else { return None };
        let offsets = arrow_buffer::OffsetBuffer::new(offsets.into());
        Some(Arc::new(ListArray::try_new(field.clone(), offsets, large.values().clone(), large.nulls().cloned()).ok()?))
    };
    let columns: Vec<Option<ArrayRef>> = batch.columns().iter().map(narrowed).collect();
    if columns.iter().all(Option::is_none) {
        return batch;
    }
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(field, column)| match column {
            Some(c) => Arc::new(field.as_ref().clone().with_data_type(c.data_type().clone())),
            None => field.clone(),
        })
        .collect();
    let arrays: Vec<ArrayRef> = batch.columns().iter().zip(columns).map(|(old, new)| new.unwrap_or_else(|| old.clone())).collect();
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(fields, batch.schema().metadata().clone()));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema, arrays, &options).unwrap_or(batch)
}

/// Arrow data given to `add_arrow`, imported.
enum Source {
    Batch(RecordBatch),
    Stream(ArrowArrayStreamReader),
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
