//! The JSON answers of the collector and the shuffler: one line of JSON,
//! never cached, never sniffed.

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A JSON response (compact, one line).
pub(crate) fn json(status: StatusCode, body: impl Serialize) -> Response {
    let mut text = serde_json::to_string(&body).expect("serializes");
    text.push('\n');
    (status, api_headers(), text).into_response()
}

/// The headers of every JSON answer: its type, `no-store` and `nosniff`.
pub(crate) fn api_headers() -> [(HeaderName, HeaderValue); 3] {
    [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ]
}

/// A JSON answer with `Retry-After: seconds` (the body says it too).
pub(crate) fn retry_later(status: StatusCode, body: serde_json::Value, seconds: u64) -> Response {
    let mut response = json(status, body);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}
