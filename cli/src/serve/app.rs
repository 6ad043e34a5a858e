//! The collector's state ([`App`]) and what every endpoint checks first: a
//! token where one is needed ([`authorize`]), and the metric's name
//! ([`App::find`], [`unknown_metric`]).

use super::access::{Access, Tokens};
use super::collector::Collected;
use super::intake::Front;
use super::response::json;
use super::telemetry::Telemetry;
use super::writer::Writer;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The collector's state, shared by every request handler.
pub(super) struct App {
    pub(super) metrics: Arc<Vec<Collected>>,
    /// Per metric: the users below which its estimate means nothing yet
    /// (the planner's [`localdp::plan::min_users`]).
    pub(super) min_users: Vec<u64>,
    /// Stores the batches (group commit) and reads exports.
    pub(super) writer: Writer,
    pub(super) telemetry: Arc<Telemetry>,
    /// What a report post is checked against (shared with the shuffler).
    pub(super) front: Arc<Front>,
    pub(super) www: Option<PathBuf>,
    pub(super) pkg: Option<PathBuf>,
    /// The compressed copies of `www` and `pkg` files.
    pub(super) assets: super::assets::Assets,
    pub(super) tokens: Option<Tokens>,
    /// One permit per estimate being computed (`--max-estimates`).
    pub(super) computing: Arc<Semaphore>,
    /// One permit per estimate being computed or waiting its turn
    /// (`--max-estimates` + [`ESTIMATES_WAITING`]).
    pub(super) admitted: Arc<Semaphore>,
    /// Per metric: held while one of its estimates is computed, so that the
    /// same estimate asked twice meanwhile is computed once.
    pub(super) turns: Vec<Arc<tokio::sync::Mutex<()>>>,
    /// `--central-delta`.
    pub(super) central_delta: f64,
    /// Set by the first SIGINT/SIGTERM: /healthz answers 503 from then on.
    pub(super) draining: AtomicBool,
}

impl App {
    /// The index of the metric named `name`.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.spec.name == name)
    }
}

/// Estimates that may wait for a turn to be computed (a dashboard asks for
/// every metric's at once); past them, a 503.
pub(super) const ESTIMATES_WAITING: usize = 16;

/// `None` if the request may read (no tokens configured, or a valid one
/// given); else the 401.
pub(super) fn authorize(app: &App, headers: &HeaderMap) -> Option<Response> {
    let tokens = app.tokens.as_ref()?;
    let (error, challenge) = match tokens.admits(headers) {
        Access::Granted => return None,
        Access::Missing => ("this endpoint needs Authorization: Bearer <token>", "Bearer realm=\"localdp\""),
        Access::Invalid => ("the token is not valid", "Bearer realm=\"localdp\", error=\"invalid_token\""),
    };
    let mut response = json(StatusCode::UNAUTHORIZED, json!({ "error": error }));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    Some(response)
}

/// The 404 of a metric name that is not configured: it lists the metrics,
/// unless tokens are configured (the list is then for token holders, and a
/// report post needs none).
pub(super) fn unknown_metric(app: &App, name: &str) -> Response {
    if app.tokens.is_some() {
        return json(StatusCode::NOT_FOUND, json!({"error": "no such metric"}));
    }
    let names: Vec<&str> = app.metrics.iter().map(|m| m.spec.name.as_str()).collect();
    json(StatusCode::NOT_FOUND, json!({"error": format!("no metric named {name:?}"), "metrics": names}))
}
