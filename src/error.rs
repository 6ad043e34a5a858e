//! The one error type of the core.
//!
//! Every variant carries typed fields, so that a caller can act on an error
//! (which parameter, which bound, how much ε) without parsing its text; the
//! text (`Display`) is what the CLI prints and what JavaScript errors carry.
//!
//! Messages name the problem and never contain a user's raw value: a value
//! that is not in the domain is reported as such, not echoed back.

use crate::privacy::number_text;
use crate::report::Protocol;
use crate::text::{display_as_piece, put, text, Piece};

/// Everything that can go wrong in localdp.
#[cfg_attr(not(all(target_arch = "wasm32", target_os = "unknown")), derive(Debug))]
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A configuration has the wrong shape: not an object, a missing or
    /// unknown key, a value of the wrong type (a `TypeError` in JavaScript).
    MalformedConfig {
        /// The key at fault (`"protocol"`, `"budget"`…), where it is known;
        /// `None` for a config that is not a JSON object and for the
        /// parser's own messages.
        key: Option<String>,
        /// What is wrong, as the message says it (the parser's text for
        /// shape errors it finds).
        detail: String,
    },
    /// A configuration parameter is out of range (a `RangeError` in JavaScript).
    InvalidConfig {
        /// The parameter at fault: a config key (`"epsilon"`, `"domain"`,
        /// `"range"`, `"bits"`…), a nested key (`"budget.epsilon"`,
        /// `"budget.window"`, `"budget.delta"`), or an argument of the API (`"secret"`,
        /// `"post"`, `"steps"`, `"n"`, `"probability"`).
        parameter: &'static str,
        /// The constraint it fails, with the numbers involved.
        requirement: Requirement,
    },
    /// A value handed to a client is not in the configured domain (the
    /// value itself is never part of the error).
    ValueNotInDomain {
        /// What the values of the domain are.
        domain: DomainKind,
    },
    /// A numeric value handed to a client is not a finite number, or a
    /// record has the wrong number of values.
    InvalidValue {
        /// What a value must be.
        expected: ExpectedValue,
    },
    /// A field of a value given as an object (an event's attribute) is
    /// missing, not one of the metric's, or not a value it takes. The error
    /// names the field, a name from the config, never the value.
    InvalidField {
        /// The field, as the config names it.
        field: String,
        /// What is wrong with it.
        problem: FieldProblem,
    },
    /// A report would take the ε spent in the budget window above the
    /// budget; nothing was released (`PrivacyBudgetExceeded` in JavaScript).
    PrivacyBudgetExceeded {
        /// The ε the refused report would have spent.
        cost: f64,
        /// The ε already spent in the window (with a budget δ, the
        /// composition's ε at that δ).
        spent: f64,
        /// The most ε the window may hold.
        budget: f64,
    },
    /// A report was refused by the aggregator; the reason is also counted.
    Rejected {
        /// The counted reason.
        reason: Rejection,
        /// What exactly was wrong (never the reported payload itself).
        detail: String,
    },
    /// Two aggregators over different configurations cannot be merged.
    MergeMismatch {
        /// This aggregator's configuration, as reports and states name it
        /// (`protocol:ε:fingerprint`, [`crate::Metric::id`]).
        ours: String,
        /// The other aggregator's configuration.
        theirs: String,
        /// What differs.
        conflict: MergeConflict,
    },
    /// An estimate was asked of an aggregator that accepted no report.
    NoReports,
    /// Aggregator state bytes were refused: truncated, corrupted, of another
    /// format version or of another configuration.
    State(StateError),
    /// A permanent response a client stored for memoization does not parse;
    /// nothing was released (a `RangeError` in JavaScript).
    CorruptMemo,
    /// A client's state holds a number JSON cannot carry exactly (in wasm,
    /// an integer above 2^53); it was not stored.
    UnstorableState,
    /// The operating system's random source failed.
    Randomness {
        /// The platform's description of the failure.
        detail: String,
    },
}

/// An error's message: what `Display` writes, the CLI prints and a
/// JavaScript error carries.
impl Piece for Error {
    fn put(&self, out: &mut String) {
        match self {
            Error::MalformedConfig { detail, .. } => put!(out, "malformed configuration: ", detail),
            Error::InvalidConfig { parameter, requirement } => {
                put!(out, "invalid configuration: ", ConfigMessage(parameter, requirement))
            }
            Error::ValueNotInDomain { domain } => put!(out, "value is not in the domain (", domain, ")"),
            Error::InvalidValue { expected } => put!(out, "invalid value: ", expected),
            Error::InvalidField { field, problem } => put!(out, "invalid value: field \"", field, "\" ", problem),
            Error::PrivacyBudgetExceeded { cost, spent, budget } => put!(
                out,
                "privacy budget exceeded: this report would spend ",
                number_text(*cost),
                " more, with ",
                number_text(*spent),
                " of ",
                number_text(*budget),
                " spent in the window"
            ),
            Error::Rejected { reason, detail } => put!(out, "report rejected (", reason, "): ", detail),
            Error::MergeMismatch { conflict, .. } => put!(out, "cannot merge aggregators: ", conflict),
            Error::NoReports => put!(out, "no accepted reports to estimate from"),
            Error::State(e) => put!(out, "invalid aggregator state: ", e),
            Error::CorruptMemo => put!(out, "invalid configuration: a stored memo is corrupt"),
            Error::UnstorableState => put!(out, "the client state cannot be stored as JSON"),
            Error::Randomness { detail } => put!(out, "secure random source unavailable: ", detail),
        }
    }
}

impl std::error::Error for Error {}

/// In the wasm build an error debugs as its message: the derived `Debug`
/// (which every `.expect` on a `Result` links) would bring core's float
/// formatting into the modules, where numbers are written by JS.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&text!(self))
    }
}

impl Error {
    /// A [`Error::MalformedConfig`] about `key`.
    pub(crate) fn malformed_key(key: &str, detail: impl Into<String>) -> Error {
        Error::MalformedConfig { key: Some(key.to_string()), detail: detail.into() }
    }

    /// A [`Error::MalformedConfig`] that names no key (the config is not an
    /// object, or the parser's own message).
    pub(crate) fn malformed(detail: impl Into<String>) -> Error {
        Error::MalformedConfig { key: None, detail: detail.into() }
    }

    /// An [`Error::InvalidConfig`].
    pub(crate) fn invalid(parameter: &'static str, requirement: Requirement) -> Error {
        Error::InvalidConfig { parameter, requirement }
    }
}

/// The constraint a configuration parameter fails, with the numbers
/// involved ([`Error::InvalidConfig`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Requirement {
    /// A finite number above 0 (ε, a budget's ε).
    Positive {
        /// The number given.
        found: f64,
    },
    /// A number in `[min, max]` (ε of a metric).
    Range {
        /// The least number allowed.
        min: f64,
        /// The greatest number allowed.
        max: f64,
        /// The number given.
        found: f64,
        /// The kind of metric whose bounds these are (`"frequency"`,
        /// `"numeric"`), where the bounds depend on it.
        metric: Option<&'static str>,
    },
    /// A number strictly between `min` and `max` (RAPPOR's `f`).
    ExclusiveRange {
        /// The bound from below (not allowed itself).
        min: f64,
        /// The bound from above (not allowed itself).
        max: f64,
        /// The number given.
        found: f64,
    },
    /// A probability: a number in `[0, 1]`.
    Probability {
        /// The number given.
        found: f64,
    },
    /// Two probabilities with `0 ≤ parameter < other ≤ 1` (RAPPOR's `p` and
    /// `q`).
    ProbabilityBelow {
        /// The parameter that must be the greater.
        other: &'static str,
        /// The parameter's value.
        found: f64,
        /// The other parameter's value.
        other_found: f64,
    },
    /// An integer in `min..=max` (a domain's size, `d`, `granularity`,
    /// RAPPOR's `bits`, `hashes`, `cohorts`, a grid's steps).
    IntegerRange {
        /// The least integer allowed.
        min: u64,
        /// The greatest integer allowed (for `d` the domain's size, for
        /// `hashes` `min(bits, 64)`).
        max: u64,
        /// The integer given.
        found: u64,
    },
    /// A list of `min..=max` entries (a domain's labels).
    Length {
        /// The fewest entries allowed.
        min: usize,
        /// The most entries allowed.
        max: usize,
        /// The entries given.
        found: usize,
    },
    /// A set that is not empty (the attributes of a range, the integers a
    /// uniform draw picks from).
    NonEmpty,
    /// A list whose entries are distinct (a domain's labels, RAPPOR's
    /// candidates).
    Distinct {
        /// The position of the first entry that repeats an earlier one.
        repeated: usize,
    },
    /// An interval `[lo, hi]` whose bounds are finite numbers.
    FiniteBounds {
        /// The attribute of a record's range (`range[i]`); `None` for a
        /// single number's.
        attribute: Option<usize>,
    },
    /// An interval `[lo, hi]` with `lo < hi` (and a finite width).
    NonEmptyRange {
        /// The attribute of a record's range (`range[i]`); `None` for a
        /// single number's.
        attribute: Option<usize>,
        /// The lower bound given.
        lo: f64,
        /// The upper bound given.
        hi: f64,
    },
    /// Not available for the configured protocol (`"d"` for anything but
    /// dbitflip, `memoize` for numeric mechanisms but one_bit_mean).
    NotFor {
        /// The configured (resolved) protocol.
        protocol: Protocol,
    },
    /// Available for one protocol or kind of metric only.
    OnlyFor {
        /// The protocol or kind of metric that takes the parameter
        /// (`"one_bit_mean"`, `"frequency"`).
        protocol: &'static str,
    },
    /// Text of a given form (a budget's window, the client secret).
    Format {
        /// The form expected.
        expected: &'static str,
    },
    /// Small enough a long-run ε (RAPPOR's `f`, which sets `ε_∞`).
    LongRunEpsilon {
        /// The greatest `ε_∞` allowed.
        max: f64,
        /// The `ε_∞` the parameters give.
        found: f64,
    },
    /// Present in the config, for an operation that needs it.
    Required {
        /// The operation (`"RAPPOR decoding"`).
        by: &'static str,
    },
}

/// The text of an [`Error::InvalidConfig`]: each site's message, made from
/// the parameter and its requirement.
struct ConfigMessage<'a>(&'a &'static str, &'a Requirement);

impl Piece for ConfigMessage<'_> {
    fn put(&self, out: &mut String) {
        let (&parameter, requirement) = (self.0, self.1);
        let name = match parameter {
            "budget.epsilon" => "budget epsilon",
            "budget.window" => "budget window",
            "budget.delta" => "budget delta",
            "secret" => "the client secret",
            p => p,
        };
        let attribute = |attribute: Option<usize>| match attribute {
            Some(i) => text!(name, '[', i, ']'),
            None => name.to_string(),
        };
        match *requirement {
            Requirement::Positive { found } => match parameter {
                "budget.epsilon" => put!(out, name, " must be > 0, got ", number_text(found)),
                _ => put!(out, name, " must be a finite number > 0, got ", number_text(found)),
            },
            Requirement::Range { min, max, found, metric } => {
                put!(out, name);
                if let Some(metric) = metric {
                    put!(out, " of a ", metric, " metric");
                }
                put!(out, " must be in [", number_text(min), ", ", number_text(max), "], got ", number_text(found))
            }
            Requirement::ExclusiveRange { min, max, .. } => {
                put!(out, name, " must be in (", short_number(min), ", ", short_number(max), ")")
            }
            Requirement::Probability { found } => put!(out, name, " ", number_text(found), " is outside [0, 1]"),
            Requirement::ProbabilityBelow { other, .. } => {
                put!(out, name, " and ", other, " must satisfy 0 ≤ ", name, " < ", other, " ≤ 1")
            }
            Requirement::IntegerRange { min, max, found } => match parameter {
                "domain" => put!(out, "domain size must be between ", min, " and ", max, ", got ", found),
                "cells" => put!(out, "the marginals would hold ", found, " cells, more than the ", max, " allowed (fewer attributes, smaller domains or a lower way)"),
                "d" => put!(out, "d must be in ", min, "..=", max, " (the domain's size)"),
                "granularity" => put!(out, "\"granularity\" must be an integer in ", min, "..=", max),
                "hashes" => put!(out, "hashes must be in ", min, "..=min(bits, 64)"),
                "steps" => put!(out, "a grid needs at least ", min, " steps"),
                // The accountant's (src/accounting.rs), not in the client's module.
                #[cfg(feature = "aggregate")]
                "count" => put!(out, "a count must be at least ", min),
                #[cfg(feature = "aggregate")]
                "n" => put!(out, "n must be in ", min, "..=", max, " (at most a million times e^epsilon)"),
                #[cfg(feature = "aggregate")]
                "support" => put!(out, "the privacy loss takes ", found, " values, more than the ", max, " the exact accountant enumerates"),
                _ => put!(out, name, " must be in ", min, "..=", max),
            },
            Requirement::Length { min, max, found } => match parameter {
                "domain" => put!(out, "a domain needs between ", min, " and ", max, " labels, got ", found),
                _ => put!(out, name, " needs between ", min, " and ", max, " entries, got ", found),
            },
            Requirement::NonEmpty => match parameter {
                "range" => put!(out, "range must list at least one attribute"),
                "n" => put!(out, "a uniform draw needs a non-empty range"),
                _ => put!(out, name, " must not be empty"),
            },
            Requirement::Distinct { repeated } => match parameter {
                "domain" => put!(out, "domain labels must be distinct (label #", repeated, " repeats an earlier one)"),
                _ => put!(out, name, " must be distinct"),
            },
            Requirement::FiniteBounds { attribute: a } => put!(out, attribute(a), " must hold two finite numbers"),
            Requirement::NonEmptyRange { attribute: a, lo, hi } => {
                put!(out, attribute(a), " is empty: lo ", number_text(lo), " must be below hi ", number_text(hi))
            }
            Requirement::NotFor { protocol } => match parameter {
                "memoize" => {
                    put!(out, "memoize is available for frequency protocols and one_bit_mean, not ", protocol.name())
                }
                _ => put!(out, "\"", name, "\" does not apply to ", protocol.name()),
            },
            Requirement::OnlyFor { protocol } => match parameter {
                "post" => put!(out, "post-processing applies to ", protocol, " estimates only"),
                _ => put!(out, "\"", name, "\" applies to ", protocol, " only"),
            },
            Requirement::Format { expected } => put!(out, name, " must be ", expected),
            Requirement::LongRunEpsilon { max, .. } => {
                put!(out, name, " is too small: the long-run epsilon exceeds ", short_number(max))
            }
            Requirement::Required { by } => put!(out, by, " needs \"", name, "\" in the config"),
        }
    }
}

/// A bound written in a message: a whole number without a fraction
/// (`60`, not `60.0`), anything else as [`number_text`] writes it.
fn short_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        text!(x as i64)
    } else {
        number_text(x)
    }
}

/// What the values of a domain are, for [`Error::ValueNotInDomain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DomainKind {
    /// The integers `0..d` of a sized domain, given as text.
    Size(usize),
    /// The labels of a domain, as many as this.
    Labels(usize),
    /// The indices `0..d` of any domain (a value given by its index).
    Indices(usize),
}

impl Piece for DomainKind {
    fn put(&self, out: &mut String) {
        match self {
            DomainKind::Size(d) => put!(out, "expected an integer in 0..", d),
            DomainKind::Labels(n) => put!(out, "not one of the ", n, " labels"),
            DomainKind::Indices(d) => put!(out, "expected an index below ", d),
        }
    }
}

/// What a numeric value must be, for [`Error::InvalidValue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpectedValue {
    /// A number (the text did not parse as one).
    Number,
    /// A finite number (not NaN nor an infinity).
    FiniteNumber,
    /// A record of `count` numbers.
    Numbers {
        /// The numbers a record holds (its attributes).
        count: usize,
        /// The numbers given.
        found: usize,
    },
    /// Exactly `count` finite numbers (a memoized one_bit_mean takes one).
    FiniteNumbers {
        /// The numbers expected.
        count: usize,
    },
    /// A JSON object (an event, a key-value map).
    Object,
    /// A key-value map that names each key at most once (with `"keys": K`,
    /// `"1"` and `"01"` are the same key).
    DistinctKeys,
    /// Text of at most `max_bytes` bytes of UTF-8 (a heavy-hitter metric's
    /// `"max_length"`, unless it says `"truncate": true`).
    Text {
        /// The longest value accepted, in bytes.
        max_bytes: usize,
    },
}

impl Piece for ExpectedValue {
    fn put(&self, out: &mut String) {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match *self {
            ExpectedValue::Number => put!(out, "not a number"),
            ExpectedValue::FiniteNumber => put!(out, "a value must be a finite number"),
            ExpectedValue::Numbers { count, found } => put!(out, "expected ", count, " number", plural(count), ", got ", found),
            ExpectedValue::FiniteNumbers { count } => put!(out, "expected ", count, " finite number", plural(count)),
            ExpectedValue::Object => put!(out, "a value of this metric must be a JSON object"),
            ExpectedValue::DistinctKeys => put!(out, "a map must name each key at most once"),
            ExpectedValue::Text { max_bytes } => {
                put!(out, "a value must be at most ", max_bytes, " bytes of UTF-8 (or set \"truncate\": true)")
            }
        }
    }
}

/// What is wrong with a field of an object value ([`Error::InvalidField`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldProblem {
    /// The value lacks a field the metric needs.
    Missing,
    /// The metric has no such field.
    Unknown,
    /// The field's value is not in its domain.
    NotInDomain,
    /// The field's value is not a finite number.
    NotANumber,
}

impl Piece for FieldProblem {
    fn put(&self, out: &mut String) {
        put!(out, match self {
            FieldProblem::Missing => "is missing",
            FieldProblem::Unknown => "is not one of the metric's",
            FieldProblem::NotInDomain => "is not in its domain",
            FieldProblem::NotANumber => "must be a finite number",
        })
    }
}

/// What differs between two aggregators that cannot be merged
/// ([`Error::MergeMismatch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeConflict {
    /// The same kind of metric under another configuration (protocol, ε,
    /// domain or range).
    Configuration,
    /// Different kinds of metric (e.g. a frequency and a numeric one).
    Kind,
}

impl Piece for MergeConflict {
    fn put(&self, out: &mut String) {
        out.push_str(match self {
            MergeConflict::Configuration => "the aggregators have different configurations",
            MergeConflict::Kind => "aggregators of different kinds of metric",
        })
    }
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
    ///
    /// ```
    /// use localdp::Rejection;
    /// assert_eq!(Rejection::ConfigMismatch.as_str(), "config_mismatch");
    /// assert!(Rejection::ALL.iter().all(|r| r.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
    /// ```
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

impl Piece for Rejection {
    fn put(&self, out: &mut String) {
        out.push_str(self.as_str());
    }
}

display_as_piece!(Error, DomainKind, ExpectedValue, MergeConflict, Rejection);

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why state bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The bytes end before the state does.
    Truncated,
    /// Not a localdp state (wrong magic).
    NotAState,
    /// A state format version this build does not read.
    UnsupportedVersion {
        /// The version found.
        found: u8,
    },
    /// The checksum does not match: the bytes were corrupted.
    Checksum,
    /// The state belongs to another configuration (protocol, ε or domain).
    ConfigMismatch {
        /// The configuration the state was made for.
        found: String,
        /// This aggregator's configuration.
        expected: String,
    },
    /// A number is not a valid varint, or is out of its range.
    Malformed,
    /// The counts contradict each other or the configuration.
    Inconsistent {
        /// What does not add up.
        what: &'static str,
    },
    /// Bytes follow the end of the state.
    TrailingBytes,
}

impl Piece for StateError {
    fn put(&self, out: &mut String) {
        match self {
            StateError::Truncated => put!(out, "the state is truncated"),
            StateError::NotAState => put!(out, "not a localdp aggregator state"),
            StateError::UnsupportedVersion { found } => put!(out, "state format version ", found, " is not supported"),
            StateError::Checksum => put!(out, "the state's checksum does not match (corrupted bytes)"),
            StateError::ConfigMismatch { found, expected } => {
                put!(out, "the state was made for configuration ", found, ", not ", expected)
            }
            StateError::Malformed => put!(out, "the state holds a malformed number"),
            StateError::Inconsistent { what } => put!(out, "the state is inconsistent: ", what),
            StateError::TrailingBytes => put!(out, "bytes follow the end of the state"),
        }
    }
}

display_as_piece!(StateError);

impl From<StateError> for Error {
    fn from(e: StateError) -> Self {
        Error::State(e)
    }
}
