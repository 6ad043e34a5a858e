//! What the two JS faces of the client share (the wasm-bindgen modules'
//! `ClientCore` in lib.rs, the GRR module's plain functions in raw.rs): a
//! core error as the JS error a caller expects, described without JS
//! values (its class, its name, the properties a caller may act on), and
//! the checks of a value and a clock that come before the core. The
//! wasm-bindgen modules write an error as a JS value (`convert`), the GRR
//! module as named values for its JS (`raw`), through one [`Sink`] each.

use localdp_core::error::{DomainKind, Error, ExpectedValue, FieldProblem, Rejection};
use localdp_core::text::text;

/// A JS error's class.
#[derive(Clone, Copy)]
pub enum Class {
    /// `TypeError`: a value of the wrong shape.
    Type,
    /// `RangeError`: a value out of range.
    Range,
    /// `Error`, of its own name when it has one.
    Error(Option<&'static str>),
}

/// Where an error's face is written: a JS error (`convert::js_error`), or
/// named values for the GRR module's JS (`raw`).
pub trait Sink {
    /// The error itself: its class and message. The full module writes the
    /// message (feature `messages`); the client modules leave it empty, and
    /// the JS `Client` writes it from `code` and `params` (js/messages.mjs),
    /// so that no message text is in the client's wasm.
    fn open(&mut self, class: Class, message: &str);
    /// A property that is a string.
    fn text(&mut self, key: &'static str, value: &str);
    /// A property that is a number.
    fn number(&mut self, key: &'static str, value: f64);
    /// The next of the `params` (before [`Sink::open`]).
    fn param(&mut self, text: &str);
    /// Sets the `params` given so far, as an array of strings: a core
    /// error's last property.
    fn params(&mut self);
}

/// Writes `error` as the JS error a caller expects, with its typed fields
/// as properties where a caller may act on them, in this order: `key`
/// (malformed configs), `parameter` (invalid configs), `reason` (rejected
/// reports), `field`, `cost`, `spent` and `budget`
/// (`PrivacyBudgetExceeded`); then on every one its stable `code` and its
/// `params` as text ([`Error::code`], [`Error::each_param`]), which
/// [`Failure::describe`] sets after this.
pub fn describe(error: Error, sink: &mut impl Sink) {
    #[cfg(feature = "messages")]
    let message = text!(error);
    #[cfg(not(feature = "messages"))]
    let message = String::new();
    let code = error.code();
    error.each_param(&mut |p| sink.param(&text!(p)));
    match error {
        Error::MalformedConfig { key, .. } => {
            sink.open(Class::Type, &message);
            if let Some(key) = key {
                sink.text("key", &key);
            }
        }
        Error::InvalidConfig { parameter, .. } => {
            sink.open(Class::Range, &message);
            sink.text("parameter", parameter);
        }
        Error::Rejected { reason, .. } => {
            sink.open(if reason == Rejection::Malformed { Class::Type } else { Class::Range }, &message);
            sink.text("reason", reason.as_str());
        }
        Error::InvalidField { field, problem } => {
            sink.open(if problem == FieldProblem::NotInDomain { Class::Range } else { Class::Type }, &message);
            sink.text("field", &field);
        }
        // An event with a key the metric lacks: a wrong shape, as a missing
        // field is (neither names the event's key).
        Error::InvalidValue { expected: ExpectedValue::KnownFields { .. } } => sink.open(Class::Type, &message),
        Error::ValueNotInDomain { .. }
        | Error::InvalidValue { .. }
        | Error::MergeMismatch { .. }
        | Error::CorruptMemo
        | Error::State(_) => sink.open(Class::Range, &message),
        Error::PrivacyBudgetExceeded { cost, spent, budget } => {
            sink.open(Class::Error(Some("PrivacyBudgetExceeded")), &message);
            sink.number("cost", cost);
            sink.number("spent", spent);
            sink.number("budget", budget);
        }
        Error::NoReports => {
            sink.open(Class::Error(Some("NoReports")), &message);
            sink.text("reason", "no_reports");
        }
        _ => sink.open(Class::Error(None), &message),
    }
    sink.number("code", code.into());
}

/// An error thrown before the core is asked: a JS value of the wrong type
/// (a `TypeError` with a message and no code), a clock out of range, or a
/// core error.
pub enum Failure {
    /// A `TypeError` with this message.
    Type(&'static str),
    /// The clock's `RangeError` ([`clock`]).
    Clock,
    /// A core error.
    Core(Error),
}

impl Failure {
    /// Writes the error.
    pub fn describe(self, sink: &mut impl Sink) {
        match self {
            Failure::Type(message) => sink.open(Class::Type, message),
            Failure::Clock => {
                sink.open(Class::Range, "the clock must give a time in ms since 1970, at most Number.MAX_SAFE_INTEGER");
                sink.text("parameter", "now");
            }
            Failure::Core(error) => {
                describe(error, sink);
                sink.params();
            }
        }
    }
}

/// A value given for a metric of indices (a frequency metric's domain).
pub enum Input {
    /// A string: a label, or an index's digits.
    Text(String),
    /// A number: an index.
    Number(f64),
    /// Anything else.
    Other,
}

/// The text the core randomizes for `input`, on a domain of `size` values
/// (`None`: of labels).
pub fn index_text(size: Option<usize>, input: Input) -> Result<String, Failure> {
    match input {
        Input::Text(s) => Ok(s),
        Input::Number(n) => {
            let Some(size) = size else {
                return Err(Failure::Type("this domain's values are strings"));
            };
            if n.fract() != 0.0 || n < 0.0 || !n.is_finite() {
                return Err(Failure::Core(Error::ValueNotInDomain { domain: DomainKind::Size(size) }));
            }
            Ok(text!(n as u64))
        }
        Input::Other => Err(Failure::Type("a value must be a string or a number")),
    }
}

/// JS's `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE_INTEGER: f64 = localdp_core::json::MAX_SAFE_INTEGER as f64;

/// A clock reading in ms since 1970, or a RangeError: a finite number from 0
/// to `Number.MAX_SAFE_INTEGER`, so that the ledger's times stay exact in
/// JS numbers (a clock in µs or ns would pass 2^53 ms).
pub fn clock(ms: f64) -> Result<u64, Failure> {
    if !(ms.is_finite() && (0.0..=MAX_SAFE_INTEGER).contains(&ms)) {
        return Err(Failure::Clock);
    }
    Ok(ms as u64)
}
