//! The one error type of the core.
//!
//! Every variant carries typed fields, so that a caller can act on an error
//! (which parameter, which bound, how much ε) without parsing its text; the
//! text (`Display`) is what the CLI prints and what JavaScript errors carry.
//!
//! Messages name the problem and never contain a user's raw value: a value
//! that is not in the domain is reported as such, not echoed back.
//!
//! Every message is a template of [`MESSAGES`] under the error's stable
//! [`Error::code`], filled with its [`Error::params`]. The client's wasm
//! module carries the code and parameters only: its JavaScript builds the
//! message from the same templates (`js/messages.mjs`, checked against these
//! by a test), so the module holds no message text.

use crate::number::number_text;
use crate::protocol::Protocol;
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
    /// missing or not a value it takes. The error names the field, a name
    /// from the config, never the value.
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
    /// A stored client state is the JSON text of an earlier release, and this
    /// build reads only the byte form: a client module of one family, which
    /// leaves the reader of earlier formats to the module of every family
    /// (the JS client loads that one to convert the state, once per device).
    /// Nothing was read and nothing changed.
    EarlierState,
    /// A config's budget has a `"delta"`, and this build does not charge by
    /// the (ε, δ) composition: a client module of one family, which leaves
    /// it to the module of every family (the JS client loads that one for
    /// such a config). Nothing was made.
    ComposedBudget,
    /// The operating system's random source failed.
    Randomness {
        /// The platform's description of the failure.
        detail: String,
    },
}

/// An error's message: what `Display` writes, the CLI prints and a
/// JavaScript error carries: its code's template filled with its
/// parameters, inside the words of its group ([`frame`]).
impl Piece for Error {
    fn put(&self, out: &mut String) {
        let (prefix, suffix) = frame(self.code());
        put!(out, prefix, Body(self), suffix);
    }
}

/// The words the messages of a group of codes start and end with, around
/// their template: what the error's part (a [`StateError`], an
/// [`ExpectedValue`]…) does not write itself.
fn frame(code: u16) -> (&'static str, &'static str) {
    match code {
        101..=199 | 310 | 440..=449 => ("invalid configuration: ", ""),
        200..=209 => ("value is not in the domain (", ")"),
        210..=229 => ("invalid value: ", ""),
        410..=419 => ("cannot merge aggregators: ", ""),
        430..=439 => ("invalid aggregator state: ", ""),
        _ => ("", ""),
    }
}

/// An error's template filled with its parameters (its message without
/// its group's words).
struct Body<'a>(&'a Error);

impl Piece for Body<'_> {
    fn put(&self, out: &mut String) {
        let template = MESSAGES.iter().find(|(code, _)| *code == self.0.code()).map_or("", |(_, template)| template);
        let params = self.0.params();
        let mut rest = template;
        // `{i}` is parameter i (templates have at most 10: one digit).
        while let Some(at) = rest.find('{') {
            put!(out, &rest[..at]);
            let index = rest.as_bytes().get(at + 1).map_or(0, |d| usize::from(d.wrapping_sub(b'0')));
            if let Some(param) = params.get(index) {
                param.put(out);
            }
            rest = rest.get(at + 3..).unwrap_or("");
        }
        put!(out, rest);
    }
}

impl std::error::Error for Error {}

/// In the wasm build an error debugs as its code: the derived `Debug`
/// (which every `.expect` on a `Result` links) would bring core's float
/// formatting into the modules, where numbers are written by JS, and its
/// message would bring the templates into the client's module.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&text!("localdp error ", u32::from(self.code())))
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
    pub fn invalid(parameter: &'static str, requirement: Requirement) -> Error {
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

/// What the values of a domain are, for [`Error::ValueNotInDomain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DomainKind {
    /// The integers `0..d` of a sized domain, given as text.
    Size(usize),
    /// The labels of a domain, as many as this.
    Labels(usize),
    /// The labels of a domain, as many as this, one of which the value
    /// matches but for ASCII letter case (which label is not said: that
    /// would tell the value).
    LabelsButCase(usize),
    /// The indices `0..d` of any domain (a value given by its index).
    Indices(usize),
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
    /// An event whose fields are all among the metric's `count` fields
    /// (an event's keys are the user's data: the error names none).
    KnownFields {
        /// The fields the metric has.
        count: usize,
    },
}

/// What is wrong with a field of an object value ([`Error::InvalidField`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldProblem {
    /// The value lacks a field the metric needs.
    Missing,
    /// The field's value is not in its domain.
    NotInDomain,
    /// The field's value is not a finite number.
    NotANumber,
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

    #[doc(hidden)]
    pub fn error(self, detail: impl Into<String>) -> Error {
        Error::Rejected { reason: self, detail: detail.into() }
    }
}

impl Piece for Rejection {
    fn put(&self, out: &mut String) {
        out.push_str(self.as_str());
    }
}

display_as_piece!(Error, Rejection);

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


impl From<StateError> for Error {
    fn from(e: StateError) -> Self {
        Error::State(e)
    }
}

/// One parameter of an error's message ([`Error::params`]): a name from the
/// config or the API, a count or a bound, never a user's raw value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Param<'a> {
    /// Text: a parameter's or field's name, a protocol, a reason, a detail.
    Text(&'a str),
    /// A whole number (a size, a count, a position, a version).
    Integer(u64),
    /// A number, written as JSON writes it (`1.0`, `0.5`).
    Number(f64),
}

impl Param<'_> {
    /// A bound: written without a fraction when it is whole (`60`, not
    /// `60.0`); the bounds written so are constants, never negative.
    fn bound(x: f64) -> Self {
        if x.fract() == 0.0 && (0.0..1e15).contains(&x) {
            Param::Integer(x as u64)
        } else {
            Param::Number(x)
        }
    }
}

impl Piece for Param<'_> {
    fn put(&self, out: &mut String) {
        match self {
            Param::Text(text) => put!(out, text),
            Param::Integer(n) => put!(out, n),
            Param::Number(x) => put!(out, number_text(*x)),
        }
    }
}

display_as_piece!(Param<'_>);

impl<'a> From<&'a str> for Param<'a> {
    fn from(text: &'a str) -> Self {
        Param::Text(text)
    }
}

impl From<usize> for Param<'_> {
    fn from(n: usize) -> Self {
        Param::Integer(n as u64)
    }
}

impl Error {
    /// The error's stable code: which template of [`MESSAGES`] its message
    /// fills. Codes are a contract: a code keeps its meaning and its
    /// parameters, is never renumbered, and is never reused for another
    /// message once released; a new message gets a new code in its group
    /// (1xx configs, 2xx values, 3xx the client's ledger and state, 4xx
    /// aggregation, its parameters included, 5xx the platform). The client's
    /// wasm module throws no 4xx code: its table (js/messages.mjs) holds the
    /// others. `docs/errors.md` lists them.
    ///
    /// ```
    /// use localdp::{error::Param, Error};
    /// let e = Error::PrivacyBudgetExceeded { cost: 1.0, spent: 1.0, budget: 1.5 };
    /// assert_eq!(e.code(), 300);
    /// assert_eq!(e.params(), [Param::Number(1.0), Param::Number(1.0), Param::Number(1.5)]);
    /// ```
    pub fn code(&self) -> u16 {
        match self {
            Error::MalformedConfig { .. } => 100,
            Error::InvalidConfig { parameter, requirement } => config_code(parameter, requirement),
            Error::ValueNotInDomain { domain } => match domain {
                DomainKind::Size(_) => 200,
                DomainKind::Labels(_) => 201,
                DomainKind::Indices(_) => 202,
                DomainKind::LabelsButCase(_) => 203,
            },
            Error::InvalidValue { expected } => match *expected {
                ExpectedValue::Number => 210,
                ExpectedValue::FiniteNumber => 211,
                ExpectedValue::Numbers { count: 1, .. } => 212,
                ExpectedValue::Numbers { .. } => 213,
                ExpectedValue::FiniteNumbers { count: 1 } => 214,
                ExpectedValue::FiniteNumbers { .. } => 215,
                ExpectedValue::Object => 216,
                ExpectedValue::DistinctKeys => 217,
                ExpectedValue::Text { .. } => 218,
                ExpectedValue::KnownFields { .. } => 219,
            },
            Error::InvalidField { problem, .. } => match problem {
                FieldProblem::Missing => 220,
                FieldProblem::NotInDomain => 222,
                FieldProblem::NotANumber => 223,
            },
            Error::PrivacyBudgetExceeded { .. } => 300,
            Error::CorruptMemo => 310,
            Error::EarlierState => 312,
            Error::ComposedBudget => 313,
            Error::Rejected { .. } => 400,
            Error::MergeMismatch { conflict, .. } => match conflict {
                MergeConflict::Configuration => 410,
                MergeConflict::Kind => 411,
            },
            Error::NoReports => 420,
            Error::State(e) => match e {
                StateError::Truncated => 430,
                StateError::NotAState => 431,
                StateError::UnsupportedVersion { .. } => 432,
                StateError::Checksum => 433,
                StateError::ConfigMismatch { .. } => 434,
                StateError::Malformed => 435,
                StateError::Inconsistent { .. } => 436,
                StateError::TrailingBytes => 437,
            },
            Error::Randomness { .. } => 500,
        }
    }

    /// The parameters [`Error::code`]'s template is filled with, in order.
    /// An invalid config's first parameter is always the name its message
    /// gives the parameter (`"budget epsilon"`, `"range[1]"`), whether or not
    /// its template writes it; then the requirement's numbers.
    ///
    /// ```
    /// use localdp::{error::Param, Error, Requirement};
    /// let e = Error::InvalidConfig { parameter: "bits", requirement: Requirement::IntegerRange { min: 1, max: 4096, found: 0 } };
    /// assert_eq!(e.code(), 117);
    /// assert_eq!(e.params(), [Param::from("bits"), Param::Integer(1), Param::Integer(4096), Param::Integer(0)]);
    /// assert_eq!(e.to_string(), "invalid configuration: bits must be in 1..=4096");
    /// ```
    pub fn params(&self) -> Vec<Param<'_>> {
        let mut params = Vec::new();
        self.each_param(&mut |p| params.push(p));
        params
    }

    /// Calls `f` on each of [`Error::params`] in order, collecting nothing
    /// (the wasm modules hand them to JS one by one).
    #[doc(hidden)]
    pub fn each_param<'a>(&'a self, f: &mut dyn FnMut(Param<'a>)) {
        match self {
            Error::MalformedConfig { detail, .. } | Error::Randomness { detail } => f(Param::Text(detail)),
            Error::InvalidConfig { parameter, requirement } => config_params(parameter, requirement, f),
            Error::ValueNotInDomain {
                domain: DomainKind::Size(n) | DomainKind::Labels(n) | DomainKind::Indices(n) | DomainKind::LabelsButCase(n),
            } => f((*n).into()),
            Error::InvalidValue { expected } => match *expected {
                ExpectedValue::Numbers { count, found } => {
                    f(count.into());
                    f(found.into());
                }
                ExpectedValue::FiniteNumbers { count: n }
                | ExpectedValue::Text { max_bytes: n }
                | ExpectedValue::KnownFields { count: n } => f(n.into()),
                _ => {}
            },
            Error::InvalidField { field, .. } => f(Param::Text(field)),
            Error::PrivacyBudgetExceeded { cost, spent, budget } => {
                for x in [cost, spent, budget] {
                    f(Param::Number(*x));
                }
            }
            Error::Rejected { reason, detail } => {
                f(Param::Text(reason.as_str()));
                f(Param::Text(detail));
            }
            Error::MergeMismatch { ours: a, theirs: b, .. } | Error::State(StateError::ConfigMismatch { found: a, expected: b }) => {
                f(Param::Text(a));
                f(Param::Text(b));
            }
            Error::State(StateError::UnsupportedVersion { found }) => f(Param::Integer(u64::from(*found))),
            Error::State(StateError::Inconsistent { what }) => f(Param::Text(what)),
            _ => {}
        }
    }
}

/// The code of an invalid config: its requirement's, or for a few
/// parameters a message of their own.
fn config_code(parameter: &str, requirement: &Requirement) -> u16 {
    match (requirement, parameter) {
        (Requirement::Positive { .. }, "budget.epsilon") => 101,
        (Requirement::Positive { .. }, _) => 102,
        (Requirement::Range { metric: None, .. }, _) => 103,
        (Requirement::Range { .. }, _) => 104,
        (Requirement::ExclusiveRange { .. }, _) => 105,
        (Requirement::Probability { .. }, _) => 106,
        (Requirement::ProbabilityBelow { .. }, _) => 107,
        (Requirement::IntegerRange { .. }, "domain") => 108,
        (Requirement::IntegerRange { .. }, "cells") => 109,
        (Requirement::IntegerRange { .. }, "d") => 110,
        (Requirement::IntegerRange { .. }, "granularity") => 111,
        (Requirement::IntegerRange { .. }, "hashes") => 112,
        (Requirement::IntegerRange { .. }, "steps") => 113,
        (Requirement::IntegerRange { .. }, "count") => 440,
        (Requirement::IntegerRange { .. }, "n") => 441,
        (Requirement::IntegerRange { .. }, "support") => 442,
        (Requirement::IntegerRange { .. }, _) => 117,
        (Requirement::Length { .. }, "domain") => 118,
        (Requirement::Length { .. }, _) => 119,
        (Requirement::NonEmpty, "range") => 120,
        (Requirement::NonEmpty, "n") => 121,
        (Requirement::NonEmpty, _) => 122,
        (Requirement::Distinct { .. }, "domain") => 123,
        (Requirement::Distinct { .. }, _) => 124,
        (Requirement::FiniteBounds { attribute: None }, _) => 125,
        (Requirement::FiniteBounds { .. }, _) => 134,
        (Requirement::NonEmptyRange { attribute: None, .. }, _) => 126,
        (Requirement::NonEmptyRange { .. }, _) => 135,
        (Requirement::NotFor { .. }, "memoize") => 127,
        (Requirement::NotFor { .. }, _) => 128,
        (Requirement::OnlyFor { .. }, "post") => 443,
        (Requirement::OnlyFor { .. }, _) => 130,
        (Requirement::Format { .. }, _) => 131,
        (Requirement::LongRunEpsilon { .. }, _) => 132,
        (Requirement::Required { .. }, _) => 133,
    }
}

/// The parameters of an invalid config, to `f`: the name its message
/// gives the parameter, then the requirement's (a range's attribute: its
/// position).
fn config_params<'a>(parameter: &'static str, requirement: &Requirement, f: &mut dyn FnMut(Param<'a>)) {
    f(Param::Text(match parameter {
        "budget.epsilon" => "budget epsilon",
        "budget.window" => "budget window",
        "budget.delta" => "budget delta",
        "secret" => "the client secret",
        p => p,
    }));
    let (int, number) = (Param::Integer, Param::Number);
    let mut all = |params: &[Param<'a>]| params.iter().for_each(|p| f(*p));
    match *requirement {
        Requirement::Positive { found } | Requirement::Probability { found } => all(&[number(found)]),
        Requirement::Range { min, max, found, metric } => {
            all(&[number(min), number(max), number(found)]);
            metric.into_iter().for_each(|m| all(&[Param::Text(m)]));
        }
        Requirement::ExclusiveRange { min, max, found } => all(&[Param::bound(min), Param::bound(max), number(found)]),
        Requirement::ProbabilityBelow { other, found, other_found } => all(&[Param::Text(other), number(found), number(other_found)]),
        Requirement::IntegerRange { min, max, found } => all(&[int(min), int(max), int(found)]),
        Requirement::Length { min, max, found } => all(&[min.into(), max.into(), found.into()]),
        Requirement::NonEmpty => {}
        Requirement::Distinct { repeated: n } | Requirement::FiniteBounds { attribute: Some(n) } => all(&[n.into()]),
        Requirement::FiniteBounds { attribute: None } => {}
        Requirement::NonEmptyRange { attribute, lo, hi } => {
            all(&[number(lo), number(hi)]);
            attribute.into_iter().for_each(|i| all(&[i.into()]));
        }
        Requirement::NotFor { protocol } => all(&[Param::Text(protocol.name())]),
        Requirement::OnlyFor { protocol: other } | Requirement::Format { expected: other } | Requirement::Required { by: other } => {
            all(&[Param::Text(other)])
        }
        Requirement::LongRunEpsilon { max, found } => all(&[Param::bound(max), number(found)]),
    }
}

/// Every message: its code ([`Error::code`]) and its template, where `{i}`
/// is parameter `i` of [`Error::params`]. The message is the template
/// inside the words of its code's group: `invalid configuration: …` (1xx
/// but 100, 310, 44x), `value is not in the domain (…)` (20x), `invalid
/// value: …` (21x, 22x), `cannot merge aggregators: …` (41x), `invalid
/// aggregator state: …` (43x); a part of an error (a [`StateError`], an
/// [`ExpectedValue`]…) displays as its template alone. `js/messages.mjs` holds the same
/// table for the client's wasm module, whose errors carry no text; a test
/// (`error_catalogue`, then tests/js/error-codes.test.mjs) checks that the
/// two write the same message for every code.
pub const MESSAGES: &[(u16, &str)] = &[
    (100, "malformed configuration: {0}"),
    (101, "{0} must be > 0, got {1}"),
    (102, "{0} must be a finite number > 0, got {1}"),
    (103, "{0} must be in [{1}, {2}], got {3}"),
    (104, "{0} of a {4} metric must be in [{1}, {2}], got {3}"),
    (105, "{0} must be in ({1}, {2})"),
    (106, "{0} {1} is outside [0, 1]"),
    (107, "{0} and {1} must satisfy 0 ≤ {0} < {1} ≤ 1"),
    (108, "domain size must be between {1} and {2}, got {3}"),
    (109, "the marginals would hold {3} cells, more than the {2} allowed (fewer attributes, smaller domains or a lower way)"),
    (110, "d must be in {1}..={2} (the domain's size)"),
    (111, "\"granularity\" must be an integer in {1}..={2}"),
    (112, "hashes must be in {1}..=min(bits, 64)"),
    (113, "a grid needs at least {1} steps"),
    (117, "{0} must be in {1}..={2}"),
    (118, "a domain needs between {1} and {2} labels, got {3}"),
    (119, "{0} needs between {1} and {2} entries, got {3}"),
    (120, "range must list at least one attribute"),
    (121, "a uniform draw needs a non-empty range"),
    (122, "{0} must not be empty"),
    (123, "domain labels must be distinct (label #{1} repeats an earlier one)"),
    (124, "{0} must be distinct"),
    (125, "{0} must hold two finite numbers"),
    (126, "{0} is empty: lo {1} must be below hi {2}"),
    (127, "memoize applies to a numeric metric only through one_bit_mean of one number, not {1}"),
    (128, "\"{0}\" does not apply to {1}"),
    (130, "\"{0}\" applies to {1} only"),
    (131, "{0} must be {1}"),
    (132, "{0} is too small: the long-run epsilon exceeds {1}"),
    (133, "{1} needs \"{0}\" in the config"),
    (134, "{0}[{1}] must hold two finite numbers"),
    (135, "{0}[{3}] is empty: lo {1} must be below hi {2}"),
    (200, "expected an integer in 0..{0}"),
    (201, "not one of the {0} labels"),
    (202, "expected an index below {0}"),
    (203, "not one of the {0} labels, though it matches one but for letter case: labels compare exactly"),
    (210, "not a number"),
    (211, "a value must be a finite number"),
    (212, "expected {0} number, got {1}"),
    (213, "expected {0} numbers, got {1}"),
    (214, "expected {0} finite number"),
    (215, "expected {0} finite numbers"),
    (216, "a value of this metric must be a JSON object"),
    (217, "a map must name each key at most once"),
    (218, "a value must be at most {0} bytes of UTF-8 (or set \"truncate\": true)"),
    (219, "an event may hold only the metric's {0} fields"),
    (220, "field \"{0}\" is missing"),
    // 221 (an unknown field, named) is retired: it echoed an event's key.
    (222, "field \"{0}\" is not in its domain"),
    (223, "field \"{0}\" must be a finite number"),
    (300, "privacy budget exceeded: this report would spend {0} more, with {1} of {2} spent in the window"),
    (310, "a stored memo is corrupt"),
    (312, "the stored state is of an earlier release: the module of every family reads it"),
    (313, "a budget with \"delta\" is charged by the module of every family, which Client.open and Client.load import (where import() is refused, as in a service worker, import localdp/client/web instead)"),
    (400, "report rejected ({0}): {1}"),
    (410, "the aggregators have different configurations"),
    (411, "aggregators of different kinds of metric"),
    (420, "no accepted reports to estimate from"),
    (430, "the state is truncated"),
    (431, "not a localdp aggregator state"),
    (432, "state format version {0} is not supported"),
    (433, "the state's checksum does not match (corrupted bytes)"),
    (434, "the state was made for configuration {0}, not {1}"),
    (435, "the state holds a malformed number"),
    (436, "the state is inconsistent: {0}"),
    (437, "bytes follow the end of the state"),
    (440, "a count must be at least {1}"),
    (441, "n must be in {1}..={2} (at most a million times e^epsilon)"),
    (442, "the privacy loss takes {3} values, more than the {2} the exact accountant enumerates"),
    (443, "post-processing applies to {1} estimates only"),
    (500, "secure random source unavailable: {0}"),
];

/// `Display` for the parts of an error: the template of the error that
/// holds them, without its group's words.
macro_rules! display_as_body {
    ($($t:ty => |$part:ident| $error:expr),+ $(,)?) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let $part = self;
                f.write_str(&text!(Body(&$error)))
            }
        }
    )+};
}

display_as_body!(
    DomainKind => |d| Error::ValueNotInDomain { domain: *d },
    ExpectedValue => |e| Error::InvalidValue { expected: *e },
    MergeConflict => |c| Error::MergeMismatch { ours: String::new(), theirs: String::new(), conflict: *c },
    StateError => |e| Error::State(e.clone()),
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::NumericProtocol;
    use crate::FrequencyProtocol;

    /// One error of every code, with parameters that tell each other apart.
    fn samples() -> Vec<Error> {
        let config = |parameter, requirement| Error::InvalidConfig { parameter, requirement };
        let integers = Requirement::IntegerRange { min: 2, max: 4096, found: 5000 };
        let field = |problem| Error::InvalidField { field: "browser".into(), problem };
        let value = |expected| Error::InvalidValue { expected };
        vec![
            Error::malformed_key("domain", "expected a list"),
            config("budget.epsilon", Requirement::Positive { found: -0.5 }),
            config("epsilon", Requirement::Positive { found: 0.0 }),
            config("budget.delta", Requirement::Range { min: 1e-200, max: 0.75, found: 1.5, metric: None }),
            config("epsilon", Requirement::Range { min: 0.01, max: 30.0, found: 31.25, metric: Some("frequency") }),
            config("f", Requirement::ExclusiveRange { min: 0.0, max: 1.0, found: 1.0 }),
            config("probability", Requirement::Probability { found: 1.25 }),
            config("p", Requirement::ProbabilityBelow { other: "q", found: 0.75, other_found: 0.5 }),
            config("domain", integers.clone()),
            config("cells", integers.clone()),
            config("d", integers.clone()),
            config("granularity", integers.clone()),
            config("hashes", integers.clone()),
            config("steps", integers.clone()),
            config("bits", integers.clone()),
            config("domain", Requirement::Length { min: 2, max: 1024, found: 1 }),
            config("candidates", Requirement::Length { min: 1, max: 512, found: 600 }),
            config("range", Requirement::NonEmpty),
            config("n", Requirement::NonEmpty),
            config("attributes", Requirement::NonEmpty),
            config("domain", Requirement::Distinct { repeated: 3 }),
            config("candidates", Requirement::Distinct { repeated: 4 }),
            config("range", Requirement::FiniteBounds { attribute: None }),
            config("range", Requirement::NonEmptyRange { attribute: None, lo: 5.5, hi: -1.0 }),
            config("memoize", Requirement::NotFor { protocol: Protocol::Numeric(NumericProtocol::Duchi) }),
            config("d", Requirement::NotFor { protocol: Protocol::Frequency(FrequencyProtocol::Grr) }),
            config("granularity", Requirement::OnlyFor { protocol: "one_bit_mean" }),
            config("secret", Requirement::Format { expected: "64 hexadecimal digits" }),
            config("f", Requirement::LongRunEpsilon { max: 60.0, found: 61.5 }),
            config("candidates", Requirement::Required { by: "RAPPOR decoding" }),
            config("range", Requirement::FiniteBounds { attribute: Some(2) }),
            config("range", Requirement::NonEmptyRange { attribute: Some(1), lo: 3.0, hi: 3.0 }),
            Error::ValueNotInDomain { domain: DomainKind::Size(6) },
            Error::ValueNotInDomain { domain: DomainKind::Labels(7) },
            Error::ValueNotInDomain { domain: DomainKind::Indices(8) },
            Error::ValueNotInDomain { domain: DomainKind::LabelsButCase(9) },
            value(ExpectedValue::Number),
            value(ExpectedValue::FiniteNumber),
            value(ExpectedValue::Numbers { count: 1, found: 3 }),
            value(ExpectedValue::Numbers { count: 2, found: 3 }),
            value(ExpectedValue::FiniteNumbers { count: 1 }),
            value(ExpectedValue::FiniteNumbers { count: 4 }),
            value(ExpectedValue::Object),
            value(ExpectedValue::DistinctKeys),
            value(ExpectedValue::Text { max_bytes: 16 }),
            value(ExpectedValue::KnownFields { count: 3 }),
            field(FieldProblem::Missing),
            field(FieldProblem::NotInDomain),
            field(FieldProblem::NotANumber),
            Error::PrivacyBudgetExceeded { cost: 1.0, spent: 0.25, budget: 1e-7 },
            Error::CorruptMemo,
            Error::EarlierState,
            Error::ComposedBudget,
            Rejection::BadLength.error("expected 8 bits"),
            Error::MergeMismatch { ours: "grr:1:a".into(), theirs: "grr:2:a".into(), conflict: MergeConflict::Configuration },
            Error::MergeMismatch { ours: "grr:1:a".into(), theirs: "duchi:1:b".into(), conflict: MergeConflict::Kind },
            Error::NoReports,
            StateError::Truncated.into(),
            StateError::NotAState.into(),
            StateError::UnsupportedVersion { found: 9 }.into(),
            StateError::Checksum.into(),
            StateError::ConfigMismatch { found: "grr:1:a".into(), expected: "grr:2:b".into() }.into(),
            StateError::Malformed.into(),
            StateError::Inconsistent { what: "counts exceed n" }.into(),
            StateError::TrailingBytes.into(),
            config("count", integers.clone()),
            config("n", integers.clone()),
            config("support", integers),
            config("post", Requirement::OnlyFor { protocol: "frequency" }),
            Error::Randomness { detail: "no entropy".into() },
        ]
    }

    /// Every code has one template, one sample, and a message whose
    /// placeholders are all filled.
    #[test]
    fn every_code_has_a_template_and_a_sample() {
        let codes: Vec<u16> = MESSAGES.iter().map(|(code, _)| *code).collect();
        let sampled: Vec<u16> = samples().iter().map(Error::code).collect();
        assert_eq!(sampled, codes, "one sample per code, in the table's order");
        for error in samples() {
            let message = error.to_string();
            assert!(!message.contains('{') && !message.is_empty(), "{}: {message}", error.code());
        }
    }

    /// The messages are the text they were before codes: a few, written out.
    #[test]
    fn messages_are_unchanged() {
        let samples = samples();
        let message = |code: u16| samples.iter().find(|e| e.code() == code).map(Error::to_string).unwrap_or_default();
        assert_eq!(message(101), "invalid configuration: budget epsilon must be > 0, got -0.5");
        assert_eq!(message(104), "invalid configuration: epsilon of a frequency metric must be in [0.01, 30.0], got 31.25");
        assert_eq!(message(105), "invalid configuration: f must be in (0, 1)");
        assert_eq!(message(107), "invalid configuration: p and q must satisfy 0 ≤ p < q ≤ 1");
        assert_eq!(message(134), "invalid configuration: range[2] must hold two finite numbers");
        assert_eq!(message(135), "invalid configuration: range[1] is empty: lo 3.0 must be below hi 3.0");
        assert_eq!(message(126), "invalid configuration: range is empty: lo 5.5 must be below hi -1.0");
        assert_eq!(message(131), "invalid configuration: the client secret must be 64 hexadecimal digits");
        assert_eq!(message(132), "invalid configuration: f is too small: the long-run epsilon exceeds 60");
        assert_eq!(message(212), "invalid value: expected 1 number, got 3");
        assert_eq!(message(300), "privacy budget exceeded: this report would spend 1.0 more, with 0.25 of 1e-7 spent in the window");
        assert_eq!(message(400), "report rejected (bad_length): expected 8 bits");
        assert_eq!(DomainKind::Size(6).to_string(), "expected an integer in 0..6");
        assert_eq!(ExpectedValue::Object.to_string(), "a value of this metric must be a JSON object");
        assert_eq!(MergeConflict::Kind.to_string(), "aggregators of different kinds of metric");
        assert_eq!(StateError::UnsupportedVersion { found: 9 }.to_string(), "state format version 9 is not supported");
    }

    /// The catalogue the JS table is checked against
    /// (tests/js/error-codes.test.mjs): every code's sample, its parameters
    /// as the wasm modules hand them to JS (text), and its message. It must
    /// be what these messages write: after changing one, rewrite it with
    /// `LOCALDP_WRITE_CATALOGUE=1 cargo test -p localdp-core --lib error_catalogue`
    /// and change js/messages.mjs to match.
    #[test]
    fn error_catalogue() {
        let entries: Vec<serde_json::Value> = samples()
            .iter()
            .map(|e| {
                let params: Vec<String> = e.params().iter().map(Param::to_string).collect();
                serde_json::json!({ "code": e.code(), "params": params, "message": e.to_string() })
            })
            .collect();
        let text = serde_json::to_string_pretty(&entries).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/js/fixtures/error-messages.json");
        if std::env::var_os("LOCALDP_WRITE_CATALOGUE").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let stored = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            stored == text,
            "tests/js/fixtures/error-messages.json is not what the messages write: rewrite it with \
             LOCALDP_WRITE_CATALOGUE=1 cargo test -p localdp-core --lib error_catalogue, and change js/messages.mjs to match"
        );
    }
}
