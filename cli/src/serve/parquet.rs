//! `GET /api/metrics/{name}/reports.parquet`: a metric's stored reports as
//! a Parquet file (`localdp_arrow`'s schema), streamed row group by row
//! group, behind the same access rule as its estimate.

use crate::serve::logging::{log_error};
use super::app::{authorize, unknown_metric, App};
use super::export::{Lines, Pages, COMPACTED_HEADER, EXPORT_PAGE};
use super::response::json;
use super::writer::Page;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use localdp::Report;
use serde_json::json;
use localdp_arrow::{ParquetWriter, ReportBuilder, ROW_GROUP_ROWS};
use std::sync::Arc;
use tokio::sync::mpsc::Sender;

type Chunk = Result<Bytes, std::io::Error>;

/// The metric's accepted reports up to the newest stored when the request
/// came, oldest first, and as `localdp.rejected` the rejections counted by
/// then: `localdp aggregate` of the file prints the estimate the collector
/// answered at that moment. A database error midway cuts the connection, so
/// a truncated file (which has no footer) cannot pass for a complete one.
pub async fn reports_parquet(State(app): State<Arc<App>>, UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    if let Some(denied) = authorize(&app, &headers) {
        return denied;
    }
    let Some(index) = app.find(&name) else { return unknown_metric(&app, &name) };
    let (pages, first) = match Pages::open(&app, app.metrics[index].key).await {
        Ok(opened) => opened,
        Err(e) => {
            log_error!("{name}: export failed: {e}");
            return json(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "the reports could not be read"}));
        }
    };
    let compacted = first.compacted;
    let (chunks, rx) = tokio::sync::mpsc::channel::<Chunk>(2);
    let shared = Arc::clone(&app);
    // Parsing and encoding are CPU work: a blocking thread does them.
    tokio::task::spawn_blocking(move || {
        if let Err(e) = encode(&shared, index, (pages, first), &chunks) {
            log_error!("{}: export failed: {e}", shared.metrics[index].spec.name);
            let _ = chunks.blocking_send(Err(std::io::Error::other(e)));
        }
    });
    let mut response = Response::new(Body::new(Lines(rx)));
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/vnd.apache.parquet"));
    // The name is of `A-Z a-z 0-9 _ -` (checked at start): nothing to quote.
    let disposition = format!("attachment; filename=\"{name}.parquet\"");
    out.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&disposition).unwrap_or_else(|_| HeaderValue::from_static("attachment")),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // What the file no longer holds: reports compacted by retention.
    out.insert(COMPACTED_HEADER, HeaderValue::from(compacted));
    out.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Writes the pages as Parquet into `chunks`, each row group sent as soon as
/// it is written. `Ok` also when the client left.
fn encode(app: &App, index: usize, (pages, first): (Pages, Page), chunks: &Sender<Chunk>) -> Result<(), String> {
    let collected = &app.metrics[index];
    let rejected = first.rejected.unwrap_or_default();
    let mut writer = ParquetWriter::new(Vec::new(), &collected.metric, collected.spec.config.get(), ROW_GROUP_ROWS)
        .map_err(|e| e.to_string())?;
    let mut builder = ReportBuilder::new(&collected.metric);
    let runtime = tokio::runtime::Handle::current();
    let mut page = first;
    loop {
        for (_, text) in &page.rows {
            // Stored reports were validated when they came in.
            let report = Report::from_json(text).map_err(|e| format!("a stored report does not parse: {e}"))?;
            builder.push(&report).map_err(|e| format!("a stored report does not fit the schema: {e}"))?;
        }
        writer.write(&builder.finish()).map_err(|e| e.to_string())?;
        let written = std::mem::take(writer.output());
        if !written.is_empty() && chunks.blocking_send(Ok(Bytes::from(written))).is_err() {
            return Ok(()); // the client left
        }
        let Some(&(last, _)) = page.rows.last().filter(|_| page.rows.len() == EXPORT_PAGE) else { break };
        page = runtime.block_on(pages.next(app, last))?;
    }
    let rest = writer.finish(&rejected).map_err(|e| e.to_string())?;
    let _ = chunks.blocking_send(Ok(Bytes::from(rest)));
    Ok(())
}
