//! A batch the shuffler formed, as either store keeps it until the
//! collector acknowledges it.

/// A batch formed: its id, metric, size and body (a JSON array, shuffled).
pub(crate) struct Outgoing {
    pub(crate) id: String,
    pub(crate) metric: String,
    pub(crate) size: u64,
    pub(crate) body: String,
}
