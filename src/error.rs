//! The one error type of the core.
//!
//! Messages name the problem and never contain a user's raw value: a value
//! that is not in the domain is reported as such, not echoed back.

use thiserror::Error;

/// Everything that can go wrong in localdp.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration has the wrong shape: not an object, a missing or
    /// unknown key, a value of the wrong type (a `TypeError` in JavaScript).
    #[error("malformed configuration: {0}")]
    MalformedConfig(String),
    /// A configuration parameter is out of range (a `RangeError` in JavaScript).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A value handed to a client is not in the configured domain.
    #[error("value is not in the domain ({0})")]
    ValueNotInDomain(String),
    /// A numeric value handed to a client is not a finite number, or a
    /// record has the wrong number of values.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A report would take the ε spent in the budget window above the
    /// budget; nothing was released (`PrivacyBudgetExceeded` in JavaScript).
    #[error("privacy budget exceeded: {0}")]
    PrivacyBudgetExceeded(String),
    /// A report was refused by the aggregator; the reason is also counted.
    #[error("report rejected ({reason}): {detail}")]
    Rejected {
        /// The counted reason.
        reason: Rejection,
        /// What exactly was wrong (never the reported payload itself).
        detail: String,
    },
    /// Two aggregators over different configurations cannot be merged.
    #[error("cannot merge aggregators: {0}")]
    MergeMismatch(String),
    /// An estimate was asked of an aggregator that accepted no report.
    #[error("no accepted reports to estimate from")]
    NoReports,
    /// Aggregator state bytes were refused: truncated, corrupted, of another
    /// format version or of another configuration.
    #[error("invalid aggregator state: {0}")]
    State(crate::state::StateError),
    /// The operating system's random source failed.
    #[error("secure random source unavailable: {0}")]
    Randomness(String),
}

/// Why a report was rejected; the aggregator counts each reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rejection {
    /// Not JSON, not an object, wrong field types, missing or unknown fields.
    Malformed,
    /// A report format version this build does not read.
    UnsupportedVersion,
    /// Made under another protocol, ε or domain than the aggregator's.
    ConfigMismatch,
    /// An index or hash value outside its range.
    OutOfRange,
    /// A bit vector of the wrong length, or with padding bits set.
    BadLength,
    /// A subset-selection report with the wrong number of values.
    BadSubsetSize,
}

impl Rejection {
    /// Every reason, in the order they are reported.
    pub const ALL: [Rejection; 6] = [
        Rejection::Malformed,
        Rejection::UnsupportedVersion,
        Rejection::ConfigMismatch,
        Rejection::OutOfRange,
        Rejection::BadLength,
        Rejection::BadSubsetSize,
    ];

    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::UnsupportedVersion => "unsupported_version",
            Rejection::ConfigMismatch => "config_mismatch",
            Rejection::OutOfRange => "out_of_range",
            Rejection::BadLength => "bad_length",
            Rejection::BadSubsetSize => "bad_subset_size",
        }
    }

    pub(crate) fn error(self, detail: impl Into<String>) -> Error {
        Error::Rejected { reason: self, detail: detail.into() }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
