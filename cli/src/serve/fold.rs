//! Adding stored reports and rejection counts to an aggregate: what the
//! collector's running aggregate and PostgreSQL's per-collector states
//! both do.

use crate::serve::logging::log_error;
use localdp::{Aggregator, Rejection, RejectionCounts, Report};

/// Adds validated reports and rejection counts to an aggregate (`name`
/// names the metric in the log).
pub fn fold(aggregator: &mut Aggregator, reports: &[Report], rejected: &RejectionCounts, name: &str) {
    for report in reports {
        // `validate` made the same check: this cannot fail (and would be
        // counted as a rejection if it did, never lost).
        if let Err(e) = aggregator.add(report) {
            log_error!("{name}: a stored report was refused by the aggregate: {e}");
        }
    }
    if rejected.total() > 0 {
        let mut counts = *aggregator.rejected();
        add_counts(&mut counts, rejected, name);
        aggregator.restore_rejected(counts);
    }
}

/// Adds rejection counts to others.
pub fn add_counts(counts: &mut RejectionCounts, more: &RejectionCounts, name: &str) {
    for reason in Rejection::ALL {
        // Past 2^53 rejections: counted nowhere, and said so.
        if let Err(e) = counts.add(reason, more.get(reason)) {
            log_error!("{name}: rejections not counted: {e}");
        }
    }
}
