//! What either store of the shuffler takes and gives: a post's reports to
//! hold, and a batch formed, kept until the collector acknowledges it.

/// A post's accepted reports of a metric, to be held.
pub(crate) struct Hold {
    pub(crate) metric: String,
    pub(crate) reports: Vec<String>,
}

/// A batch formed: its id, metric, size and body (a JSON array, shuffled).
pub(crate) struct Outgoing {
    pub(crate) id: String,
    pub(crate) metric: String,
    pub(crate) size: u64,
    pub(crate) body: String,
}
