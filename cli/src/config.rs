//! The metric's config file (`--config`), read the same way by every
//! command; errors name the file.

use crate::output::CliResult;
use localdp::Metric;
use std::path::Path;

/// The metric of the config file at `path`.
pub fn load_metric(path: &Path) -> CliResult<Metric> {
    load_config(path).map(|(metric, _)| metric)
}

/// The config's text (simulated clients read its client-only keys) and metric.
pub fn load_config(path: &Path) -> CliResult<(Metric, String)> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let metric = Metric::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((metric, text))
}
