//! What the collector measures about itself, and `GET /metrics`: the
//! Prometheus text exposition format (version 0.0.4).
//!
//! Counters and histograms are plain atomics (a request adds a few relaxed
//! increments); the per-status counts sit behind one short lock. Nothing
//! here is keyed by anything a client chooses: routes are a fixed list and
//! metric names come from the metrics file, so the number of series is
//! bounded.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a request asked for, as the `route` label names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Route {
    /// `POST /api/metrics/{name}/reports`.
    Reports,
    /// `OPTIONS` on any path (a CORS preflight, or a 405).
    Preflight,
    /// `GET /api/metrics/{name}/estimate`.
    Estimate,
    /// `GET /api/metrics`, `GET /api/metrics/{name}`.
    Metrics,
    /// `GET /api/metrics/{name}/export` and `…/reports.parquet`.
    Export,
    /// `GET /readyz`, `/livez` and `/healthz`.
    Health,
    /// `GET /metrics` (this).
    Prometheus,
    /// Anything else under `/api`: unknown endpoints, wrong methods.
    OtherApi,
    /// The demo and the package's web build.
    Static,
}

impl Route {
    pub const ALL: [Route; 9] = [
        Route::Reports,
        Route::Preflight,
        Route::Estimate,
        Route::Metrics,
        Route::Export,
        Route::Health,
        Route::Prometheus,
        Route::OtherApi,
        Route::Static,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Route::Reports => "reports",
            Route::Preflight => "preflight",
            Route::Estimate => "estimate",
            Route::Metrics => "metrics",
            Route::Export => "export",
            Route::Health => "healthz",
            Route::Prometheus => "prometheus",
            Route::OtherApi => "other_api",
            Route::Static => "static",
        }
    }

    /// The route of a request, from its method and path alone.
    pub fn of(method: &axum::http::Method, path: &str) -> Route {
        use axum::http::Method;
        if method == Method::OPTIONS {
            return Route::Preflight;
        }
        match path {
            "/healthz" | "/readyz" | "/livez" => return Route::Health,
            "/metrics" => return Route::Prometheus,
            "/api/metrics" | "/api/metrics/" => return Route::Metrics,
            _ => {}
        }
        if let Some(rest) = path.strip_prefix("/api/metrics/") {
            return match rest.split_once('/') {
                None => Route::Metrics,
                Some((_, "reports")) if method == Method::POST => Route::Reports,
                Some((_, "estimate")) => Route::Estimate,
                Some((_, "export" | "reports.parquet")) => Route::Export,
                Some(_) => Route::OtherApi,
            };
        }
        if path == "/api" || path.starts_with("/api/") {
            Route::OtherApi
        } else {
            Route::Static
        }
    }
}

/// A histogram with fixed upper bounds (Prometheus `le`), in seconds or in
/// plain counts.
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    buckets: Vec<AtomicU64>,
    /// The sum of observations, in millionths of their unit.
    sum_micros: AtomicU64,
}

/// Request latencies, in seconds.
pub const LATENCY_BOUNDS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// Commit latencies, in seconds (each holds an fsync).
pub const COMMIT_BOUNDS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];
/// Requests per commit.
pub const GROUP_BOUNDS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(), sum_micros: AtomicU64::new(0) }
    }

    pub fn observe(&self, value: f64) {
        let bucket = self.bounds.iter().position(|&le| value <= le).unwrap_or(self.bounds.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add((value * 1e6).round() as u64, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, elapsed: Duration) {
        self.observe(elapsed.as_secs_f64());
    }

    /// The `_bucket`, `_sum` and `_count` lines; `labels` is empty or ends
    /// with a comma (`route="x",`).
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, count) in self.buckets.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = self.bounds.get(i).map_or("+Inf".to_string(), |b| b.to_string());
            let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{le}\"}} {cumulative}");
        }
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let bare = labels.trim_end_matches(',');
        let braces = if bare.is_empty() { String::new() } else { format!("{{{bare}}}") };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {cumulative}");
    }
}

/// Refusals of one metric by the per-source limits.
#[derive(Default)]
pub struct Limited {
    /// Requests refused by `--requests-per-minute`.
    pub requests: AtomicU64,
    /// Requests refused by `--reports-per-minute`.
    pub report_requests: AtomicU64,
    /// The reports those requests carried (none of them counted).
    pub reports: AtomicU64,
}

/// A metric's refusals by the per-source limits, since start: the
/// `"limited"` of its description with counts (the same numbers `/metrics`
/// shows as `localdp_requests_limited_total` and the `rate_limited` reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LimitedCounts {
    /// Report posts refused by `--requests-per-minute` (429).
    pub requests: u64,
    /// Report posts refused by `--reports-per-minute` (429; 413 for a batch
    /// larger than the whole limit).
    pub reports: u64,
    /// The reports those posts carried: none of them was counted.
    pub reports_carried: u64,
}

impl Limited {
    /// The counts so far.
    pub fn counts(&self) -> LimitedCounts {
        LimitedCounts {
            requests: self.requests.load(Ordering::Relaxed),
            reports: self.report_requests.load(Ordering::Relaxed),
            reports_carried: self.reports.load(Ordering::Relaxed),
        }
    }
}

/// One metric's stored counts, as `/metrics` shows them.
pub struct Counted<'a> {
    pub name: &'a str,
    pub accepted: u64,
    /// Every reason of the batch rule, zeros included.
    pub rejected: Vec<(&'static str, u64)>,
    /// Of the accepted, those compacted into the stored state (`--keep`).
    pub compacted: u64,
}

/// Everything `/metrics` shows apart from the stored counts.
pub struct Telemetry {
    /// Per metric, in the metrics file's order.
    pub limited: Vec<Limited>,
    statuses: Mutex<BTreeMap<(Route, u16), u64>>,
    latency: Vec<Histogram>,
    pub commit: Histogram,
    pub group: Histogram,
    pub in_flight: AtomicU64,
    /// Report posts refused for their origin (`--allow-origin`).
    origins_refused: AtomicU64,
}

impl Telemetry {
    pub fn new(metrics: usize) -> Telemetry {
        Telemetry {
            limited: (0..metrics).map(|_| Limited::default()).collect(),
            statuses: Mutex::new(BTreeMap::new()),
            latency: Route::ALL.iter().map(|_| Histogram::new(LATENCY_BOUNDS)).collect(),
            commit: Histogram::new(COMMIT_BOUNDS),
            group: Histogram::new(GROUP_BOUNDS),
            in_flight: AtomicU64::new(0),
            origins_refused: AtomicU64::new(0),
        }
    }

    /// A report post refused for its origin; the count so far when it is a
    /// power of two, to be logged then (a flood of beacons is a few lines).
    pub fn origin_refused(&self) -> Option<u64> {
        let refused = self.origins_refused.fetch_add(1, Ordering::Relaxed) + 1;
        refused.is_power_of_two().then_some(refused)
    }

    /// Answers with a status of 400 or more since start, by status (every
    /// route): the refusals the log sums up.
    pub fn refusals(&self) -> BTreeMap<u16, u64> {
        let mut refusals = BTreeMap::new();
        for ((_, status), n) in self.statuses.lock().expect("no panics while holding the lock").iter() {
            if *status >= 400 {
                *refusals.entry(*status).or_default() += n;
            }
        }
        refusals
    }

    /// A request answered.
    pub fn answered(&self, route: Route, status: u16, elapsed: Duration) {
        *self.statuses.lock().expect("no panics while holding the lock").entry((route, status)).or_default() += 1;
        self.latency[route as usize].observe_duration(elapsed);
    }

    /// The exposition; `counts` in the metrics' order.
    pub fn render(&self, counts: &[Counted<'_>], sources: usize) -> String {
        let mut out = String::with_capacity(8192);
        family(
            &mut out,
            "localdp_reports_accepted_total",
            "counter",
            "Reports stored and counted, per metric (everything in the database).",
        );
        for Counted { name, accepted, .. } in counts {
            let _ = writeln!(out, "localdp_reports_accepted_total{{metric=\"{name}\"}} {accepted}");
        }
        family(
            &mut out,
            "localdp_reports_compacted",
            "gauge",
            "Of the accepted reports, those compacted into the metric's stored state by retention (--keep): counted, no longer exported.",
        );
        for Counted { name, compacted, .. } in counts {
            let _ = writeln!(out, "localdp_reports_compacted{{metric=\"{name}\"}} {compacted}");
        }
        family(
            &mut out,
            "localdp_reports_rejected_total",
            "counter",
            "Reports not counted, per metric and reason: the batch rule's reasons (everything in the database) \
             and rate_limited (reports in requests refused by the per-source report limit, since start).",
        );
        for (i, Counted { name, rejected, .. }) in counts.iter().enumerate() {
            for (reason, n) in rejected {
                let _ = writeln!(out, "localdp_reports_rejected_total{{metric=\"{name}\",reason=\"{reason}\"}} {n}");
            }
            let limited = self.limited[i].counts().reports_carried;
            let _ = writeln!(out, "localdp_reports_rejected_total{{metric=\"{name}\",reason=\"rate_limited\"}} {limited}");
        }
        family(
            &mut out,
            "localdp_requests_limited_total",
            "counter",
            "Report posts refused by the per-source limits (429), per metric and limit, since start.",
        );
        for (i, Counted { name, .. }) in counts.iter().enumerate() {
            let limited = self.limited[i].counts();
            for (limit, n) in [("requests", limited.requests), ("reports", limited.reports)] {
                let _ = writeln!(out, "localdp_requests_limited_total{{metric=\"{name}\",limit=\"{limit}\"}} {n}");
            }
        }
        family(
            &mut out,
            "localdp_http_requests_total",
            "counter",
            "HTTP requests answered, by route and status, since start.",
        );
        for ((route, status), n) in self.statuses.lock().expect("no panics while holding the lock").iter() {
            let _ = writeln!(out, "localdp_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}", route.as_str());
        }
        family(
            &mut out,
            "localdp_http_request_duration_seconds",
            "histogram",
            "Time from a request's head to its answer (for report posts: through the commit), by route.",
        );
        for route in Route::ALL {
            self.latency[route as usize].render(
                &mut out,
                "localdp_http_request_duration_seconds",
                &format!("route=\"{}\",", route.as_str()),
            );
        }
        family(
            &mut out,
            "localdp_commit_duration_seconds",
            "histogram",
            "Time of one group commit: the transaction that stores the reports of the requests queued together, fsync included.",
        );
        self.commit.render(&mut out, "localdp_commit_duration_seconds", "");
        family(&mut out, "localdp_commit_requests", "histogram", "Report posts stored by one commit.");
        self.group.render(&mut out, "localdp_commit_requests", "");
        family(&mut out, "localdp_requests_in_flight", "gauge", "Requests being answered now.");
        let _ = writeln!(out, "localdp_requests_in_flight {}", self.in_flight.load(Ordering::Relaxed));
        family(
            &mut out,
            "localdp_limited_sources",
            "gauge",
            "Client addresses (IPv6: /64 prefixes) the per-source limits are tracking.",
        );
        let _ = writeln!(out, "localdp_limited_sources {sources}");
        out
    }
}

/// A family's `# HELP` and `# TYPE` lines.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A `/metrics` answer: the text exposition format, never cached.
pub fn response(text: String) -> axum::response::Response {
    use axum::http::{header, HeaderValue, StatusCode};
    use axum::response::IntoResponse;
    let mut response = (StatusCode::OK, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The build, the process and the database, as `/metrics` shows them
/// (the process figures where the system tells them: Linux's /proc).
pub fn render_process(out: &mut String, started: SystemTime, db: &Path) {
    family(out, "localdp_build_info", "gauge", "The running build: its version (always 1).");
    let _ = writeln!(out, "localdp_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
    family(out, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.");
    let start = started.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    let _ = writeln!(out, "process_start_time_seconds {start:.3}");
    if let Some(cpu) = cpu_seconds() {
        family(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
        let _ = writeln!(out, "process_cpu_seconds_total {cpu:.3}");
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok();
    if let Some(pages) = statm.as_deref().and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok()) {
        family(out, "process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.");
        let _ = writeln!(out, "process_resident_memory_bytes {}", pages * page_size());
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        family(out, "process_open_fds", "gauge", "Open file descriptors.");
        let _ = writeln!(out, "process_open_fds {}", fds.count());
    }
    if let Some(max) = max_fds() {
        family(out, "process_max_fds", "gauge", "The most file descriptors the process may open.");
        let _ = writeln!(out, "process_max_fds {max}");
    }
    // A PostgreSQL database's size is the server's to tell (pg_database_size),
    // not a file of this machine's: no figure rather than a false 0.
    if db.to_str().is_some_and(super::postgres::is_url) {
        return;
    }
    family(
        out,
        "localdp_database_bytes",
        "gauge",
        "Size of the SQLite database (--db) and of its write-ahead log, in bytes (0: no such file now).",
    );
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    for (file, path) in [("database", db.to_path_buf()), ("wal", PathBuf::from(wal))] {
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        let _ = writeln!(out, "localdp_database_bytes{{file=\"{file}\"}} {bytes}");
    }
}

#[cfg(unix)]
fn cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(unix)]
fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(1) as u64
}

#[cfg(unix)]
fn max_fds() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct it is given.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit.rlim_cur)
}

#[cfg(not(unix))]
fn cpu_seconds() -> Option<f64> {
    None
}

#[cfg(not(unix))]
fn page_size() -> u64 {
    4096
}

#[cfg(not(unix))]
fn max_fds() -> Option<u64> {
    None
}
