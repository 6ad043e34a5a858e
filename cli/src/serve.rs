//! `localdp serve`: the collector. Stores every accepted report in SQLite,
//! keeps a running aggregate per metric so estimates are instant, rebuilds
//! the aggregates from the database at start, and serves the demo page and
//! the npm package's web build. See the README's "The collector and the
//! demo" for the endpoints and their JSON.
//!
//! Nothing here logs a report or a value: log lines carry counts only.

#[path = "serve/collector.rs"]
mod collector;
#[path = "serve/store.rs"]
mod store;

use axum::body::{Body, HttpBody};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use collector::{BodyError, Collected};
use localdp::{Error, Metric, PostProcessing, RejectionCounts};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::json;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::Store;

/// `localdp serve` options.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// TCP port; 0 picks a free one (the URL printed first says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. The default accepts connections from this
    /// machine only.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The SQLite database of stored reports (created if missing).
    #[arg(long, default_value = "localdp.sqlite")]
    db: PathBuf,
    /// The metrics: a JSON array of {"name", "title", "unit", "config"}, each
    /// config the same object as the CLI's --config (title and unit are
    /// optional, for display). Default: WWW/metrics.json.
    #[arg(long)]
    metrics: Option<PathBuf>,
    /// The demo page, served at /.
    #[arg(long, default_value = "www")]
    www: PathBuf,
    /// The npm package's web build (`npm run build` makes it), served at /pkg/.
    #[arg(long, default_value = "dist/web")]
    pkg: PathBuf,
    /// The largest request body accepted, in bytes; a larger one is refused
    /// with 413 before it is parsed.
    #[arg(long, default_value_t = 1 << 20)]
    max_body: usize,
}

struct App {
    metrics: Vec<Collected>,
    store: Mutex<Store>,
    max_body: usize,
    www: Option<PathBuf>,
    pkg: Option<PathBuf>,
}

impl App {
    fn find(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.spec.name == name)
    }
}

/// Runs the collector until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<(), String> {
    let metrics_file = args.metrics.clone().unwrap_or_else(|| args.www.join("metrics.json"));
    let specs = collector::read_metrics_file(&metrics_file)?;
    let mut store = Store::open(&args.db)?;
    let started = Instant::now();
    let mut metrics = Vec::with_capacity(specs.len());
    for spec in specs {
        let metric = Metric::from_json(spec.config.get())
            .map_err(|e| format!("{}: metric {:?}: {e}", metrics_file.display(), spec.name))?;
        let key = store.register(&spec.name, &metric.id(), spec.config.get())?;
        metrics.push(Collected::rebuild(spec, metric, key, &store)?);
    }
    eprintln!(
        "localdp serve: {} ({} metrics from {}, rebuilt in {} ms)",
        args.db.display(),
        metrics.len(),
        metrics_file.display(),
        started.elapsed().as_millis()
    );
    for m in &metrics {
        eprintln!(
            "  {}: {} ε={} n={} rejected={}",
            m.spec.name,
            m.metric.protocol().name(),
            m.metric.epsilon(),
            m.n(),
            m.rejected().total()
        );
    }
    let names: Vec<&str> = metrics.iter().map(|m| m.spec.name.as_str()).collect();
    for (name, count) in store.unconfigured(&names)? {
        eprintln!("localdp serve: the database also holds {count} reports of metric {name:?}, not configured (kept, not served)");
    }
    let www = existing_dir(&args.www, "no demo page: --www");
    let pkg = existing_dir(&args.pkg, "the demo needs the npm package's web build (npm run build): --pkg");
    let app = Arc::new(App { metrics, store: Mutex::new(store), max_body: args.max_body, www, pkg });

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.bind, args.port))
            .await
            .map_err(|e| format!("cannot listen on {}:{}: {e}", args.bind, args.port))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        // Handlers first: a signal sent as soon as the URL is read stops cleanly.
        let stop = shutdown_signal().map_err(|e| format!("cannot handle signals: {e}"))?;
        // The first line of stdout, and the only one: scripts read it.
        println!("http://{address}/");
        axum::serve(listener, router(app)).with_graceful_shutdown(stop).await.map_err(|e| e.to_string())
    })?;
    eprintln!("localdp serve: stopped");
    Ok(())
}

fn existing_dir(dir: &Path, missing: &str) -> Option<PathBuf> {
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("localdp serve: {missing} {} not found", dir.display());
        None
    }
}

/// Resolves on SIGINT or SIGTERM; the handlers are installed by the call.
#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/api/metrics", get(list_metrics))
        .route("/api/metrics/{name}", get(show_metric))
        .route("/api/metrics/{name}/reports", post(post_reports))
        .route("/api/metrics/{name}/estimate", get(estimate))
        .method_not_allowed_fallback(|| async { json(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method not allowed"})) })
        .fallback(static_file)
        .with_state(app)
}

/// A JSON response (compact, one line).
fn json(status: StatusCode, body: impl Serialize) -> Response {
    let mut text = serde_json::to_string(&body).expect("serializes");
    text.push('\n');
    (status, api_headers(), text).into_response()
}

fn api_headers() -> [(HeaderName, HeaderValue); 3] {
    [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ]
}

fn unknown_metric(app: &App, name: &str) -> Response {
    let names: Vec<&str> = app.metrics.iter().map(|m| m.spec.name.as_str()).collect();
    json(StatusCode::NOT_FOUND, json!({"error": format!("no metric named {name:?}"), "metrics": names}))
}

/// A metric as `GET /api/metrics` lists it.
#[derive(Serialize)]
struct Described<'a> {
    name: &'a str,
    title: Option<&'a str>,
    unit: Option<&'a str>,
    /// `frequency` (a "domain"), `numeric` (a "range") or `rappor`.
    kind: &'static str,
    /// The resolved protocol.
    protocol: &'static str,
    epsilon: f64,
    n: u64,
    rejected: RejectionCounts,
    /// Verbatim from the metrics file: what a client randomizes with.
    config: &'a RawValue,
}

fn describe(m: &Collected) -> Described<'_> {
    Described {
        name: &m.spec.name,
        title: m.spec.title.as_deref(),
        unit: m.spec.unit.as_deref(),
        kind: m.metric.family(),
        protocol: m.metric.protocol().name(),
        epsilon: m.metric.epsilon(),
        n: m.n(),
        rejected: m.rejected(),
        config: &m.spec.config,
    }
}

/// `GET /api/metrics`: every metric with its config, resolved protocol and counts.
async fn list_metrics(State(app): State<Arc<App>>) -> Response {
    #[derive(Serialize)]
    struct List<'a> {
        metrics: Vec<Described<'a>>,
    }
    json(StatusCode::OK, List { metrics: app.metrics.iter().map(describe).collect() })
}

/// `GET /api/metrics/{name}`: one metric, as in the list.
async fn show_metric(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>) -> Response {
    match app.find(&name) {
        Some(i) => json(StatusCode::OK, describe(&app.metrics[i])),
        None => unknown_metric(&app, &name),
    }
}

/// `POST /api/metrics/{name}/reports`: one report or an array of them.
async fn post_reports(
    State(app): State<Arc<App>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > app.max_body as u64) {
        return too_large(app.max_body);
    }
    let body = match tokio::time::timeout(BODY_TIMEOUT, read_limited(body, app.max_body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(ReadError::TooLarge)) => return too_large(app.max_body),
        Ok(Err(ReadError::Failed(e))) => {
            return json(StatusCode::BAD_REQUEST, json!({"error": format!("could not read the body: {e}")}))
        }
        Err(_) => {
            let error = format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs());
            return json(StatusCode::REQUEST_TIMEOUT, json!({ "error": error }));
        }
    };
    let shared = Arc::clone(&app);
    tokio::task::spawn_blocking(move || ingest(&shared, index, &body)).await.unwrap_or_else(|_| {
        json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal error; nothing of this batch was counted"}))
    })
}

fn too_large(limit: usize) -> Response {
    json(
        StatusCode::PAYLOAD_TOO_LARGE,
        json!({"error": format!("the body is larger than {limit} bytes; send smaller batches"), "max_body": limit}),
    )
}

/// How long a body may take to arrive (a slow sender holds a connection).
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

enum ReadError {
    TooLarge,
    Failed(String),
}

/// The body, refused as soon as it grows past `limit` (a body without a
/// Content-Length, e.g. chunked, is measured as it arrives).
async fn read_limited(mut body: Body, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| ReadError::Failed(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(ReadError::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// Validates, stores (one transaction) and counts a batch; blocking.
fn ingest(app: &App, index: usize, body: &[u8]) -> Response {
    let metric = &app.metrics[index];
    let name = &metric.spec.name;
    let batch = match metric.validate(body) {
        Ok(batch) => batch,
        Err(e) => {
            let what = match e {
                BodyError::NotJson(_) => "not JSON",
                BodyError::NotReports => "not a report or an array",
            };
            eprintln!("{name}: refused a body of {} bytes ({what})", body.len());
            return json(StatusCode::BAD_REQUEST, json!({"error": e.to_string()}));
        }
    };
    let accepted = batch.reports.len();
    if accepted > 0 || batch.rejected.total() > 0 {
        let mut store = app.store.lock().expect("no panics while holding the lock");
        if let Err(e) = store.append(metric.key, &batch.reports, &batch.rejected) {
            eprintln!("{name}: database error, batch of {} reports not counted: {e}", accepted + batch.rejected.total() as usize);
            return json(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "the batch could not be stored; nothing of it was counted"}),
            );
        }
        // Still under the store's lock: the aggregate follows the database.
        metric.absorb(&batch);
    }
    eprintln!("{name}: {accepted} accepted, {} rejected", batch.rejected.total());
    let error = match (accepted, batch.rejected.total()) {
        (0, 0) => Some("the body holds no reports"),
        (0, _) => Some("no report in the body is valid for this metric"),
        _ => None,
    };
    let response = Ingested {
        error,
        accepted,
        rejected: batch.rejected,
        errors: batch
            .described
            .iter()
            .map(|(index, reason, message)| DescribedRejection { index: *index, reason: reason.as_str(), message })
            .collect(),
    };
    json(if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, response)
}

/// The answer to a batch.
#[derive(Serialize)]
struct Ingested<'a> {
    /// Only when nothing was accepted (a 400).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
    accepted: usize,
    /// Every reason, zeros included.
    rejected: RejectionCounts,
    /// The first few rejected reports, one by one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<DescribedRejection<'a>>,
}

#[derive(Serialize)]
struct DescribedRejection<'a> {
    /// Position in the body's array (0 for a single report).
    index: usize,
    reason: &'static str,
    /// What was wrong (never a raw value: reports hold none).
    message: &'a str,
}

/// `GET /api/metrics/{name}/estimate[?post=none|norm-sub|project]`: the
/// text `localdp aggregate --format json` prints for the same reports.
async fn estimate(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, RawQuery(query): RawQuery) -> Response {
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let mut post = PostProcessing::None;
    for pair in query.as_deref().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("post", value)) => match value.parse() {
                Ok(p) => post = p,
                Err(e) => return json(StatusCode::BAD_REQUEST, json!({ "error": e })),
            },
            _ => {
                return json(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "unknown query parameter (the only one is post=none|norm-sub|project)"}),
                )
            }
        }
    }
    let shared = Arc::clone(&app);
    let Ok(estimate) = tokio::task::spawn_blocking(move || shared.metrics[index].estimate(post)).await else {
        return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal error"}));
    };
    match estimate {
        Ok(estimate) => {
            let mut text = serde_json::to_string_pretty(&estimate).expect("an estimate serializes");
            text.push('\n');
            (StatusCode::OK, api_headers(), text).into_response()
        }
        Err((Error::NoReports, n, rejected)) => json(
            StatusCode::CONFLICT,
            json!({"error": Error::NoReports.to_string(), "n": n, "rejected": rejected}),
        ),
        Err((e, ..)) => json(StatusCode::BAD_REQUEST, json!({"error": e.to_string()})),
    }
}

const PAGE_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The demo (`--www`) at `/` and the package's web build (`--pkg`) at `/pkg/`.
async fn static_file(State(app): State<Arc<App>>, method: Method, uri: Uri) -> Response {
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        return json(StatusCode::NOT_FOUND, json!({"error": "no such endpoint"}));
    }
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n").into_response();
    }
    let not_found = || (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain")], "not found\n").into_response();
    let (root, rest) = match path.strip_prefix("/pkg/") {
        Some(rest) => (&app.pkg, rest),
        None => (&app.www, &path[1..]),
    };
    let Some(root) = root else { return not_found() };
    let rest = if rest.is_empty() || rest.ends_with('/') { format!("{rest}index.html") } else { rest.to_string() };
    // Plain names only: no `..`, no hidden files, no percent-escapes.
    let safe = rest.split('/').all(|segment| {
        !segment.is_empty()
            && !segment.starts_with('.')
            && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
    if !safe {
        return not_found();
    }
    let file = root.join(&rest);
    let Ok(bytes) = tokio::fs::read(&file).await else { return not_found() };
    let extension = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    let content_type = match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "ts" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if extension == "html" {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_POLICY));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}
