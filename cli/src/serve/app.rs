//! The collector's state ([`App`]) and what every endpoint checks first: a
//! reader's token where one is needed ([`authorize`]), a shuffler's token
//! on a shuffled batch ([`authorize_batch`]), and the metric's name
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
    /// `--token-file`: the readers' tokens.
    pub(super) tokens: Option<Tokens>,
    /// `--shuffler-token-file`: the only tokens that may post a shuffled
    /// batch (and they read nothing).
    pub(super) shufflers: Option<Tokens>,
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

/// `None` if the request may read (no readers' tokens configured, or a
/// valid one given); else the 401.
pub(super) fn authorize(app: &App, headers: &HeaderMap) -> Option<Response> {
    match app.tokens.as_ref()?.admits(headers) {
        Access::Granted(_) => None,
        refused => Some(unauthorized(&refused)),
    }
}

/// The fingerprint of the shuffler token a shuffled batch (`Localdp-Batch`)
/// was posted with; else the refusal: 403 from a collector without
/// shuffler tokens or with a reader's token, 401 without a valid token.
/// Only a shuffler token's batches feed the central ε shown to operators,
/// so no one who merely reads can claim that reports came shuffled.
pub(super) fn authorize_batch(app: &App, headers: &HeaderMap) -> Result<String, Response> {
    let forbidden = |error: &str| json(StatusCode::FORBIDDEN, json!({ "error": error }));
    let Some(shufflers) = &app.shufflers else {
        return Err(forbidden(
            "this collector takes no shuffled batches (Localdp-Batch): it needs --shuffler-token-file, and the \
             shuffler one of its tokens; nothing was counted",
        ));
    };
    match shufflers.admits(headers) {
        Access::Granted(fingerprint) => Ok(fingerprint),
        _ if app.tokens.as_ref().is_some_and(|readers| matches!(readers.admits(headers), Access::Granted(_))) => Err(forbidden(
            "a reader's token (--token-file) may not post a shuffled batch (Localdp-Batch): only a token of \
             --shuffler-token-file may; nothing was counted",
        )),
        refused => Err(unauthorized(&refused)),
    }
}

/// The 401 of a missing or invalid token.
fn unauthorized(access: &Access) -> Response {
    let (error, challenge) = match access {
        Access::Missing => ("this endpoint needs Authorization: Bearer <token>", "Bearer realm=\"localdp\""),
        _ => ("the token is not valid", "Bearer realm=\"localdp\", error=\"invalid_token\""),
    };
    let mut response = json(StatusCode::UNAUTHORIZED, json!({ "error": error }));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
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
