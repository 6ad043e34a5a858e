//! The client-only keys of a config: memoization, the ledger's budget and
//! 1BitMean's α-point grid. The client acts on them; the aggregator checks
//! them (a config its clients would refuse is refused) and sets them aside.

use crate::accounting::bounds::{check_delta, MIN_DELTA};
use crate::error::{Error, Requirement, Result};
use crate::json::{ConfigObject, Field};
use crate::number::number_text;
use crate::text::text;

/// The keys of a config that only the client reads; the aggregator ignores
/// them. The first two are every family's; granularity is 1BitMean's.
pub const CLIENT_KEYS: [&str; 3] = ["memoize", "budget", "granularity"];

/// The largest α-point grid of memoized 1BitMean.
pub const MAX_GRANULARITY: u64 = 1 << 20;

/// A privacy budget: at most `epsilon` spent in any `window_ms`: the sum
/// of the reports' ε, or with a `delta`, their optimal composition at that
/// δ (`accounting::compose`, with the `delta` feature).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The most ε a window may hold.
    pub epsilon: f64,
    /// The window's length in milliseconds.
    pub window_ms: u64,
    /// The δ of an (ε, δ) budget, in `(MIN_DELTA, 1)`
    /// ([`crate::accounting::MIN_DELTA`]); `None` for a pure-ε budget.
    pub delta: Option<f64>,
}

/// The client-only settings of a config.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// Draw one permanent response per value and resend it.
    pub memoize: bool,
    /// The ledger's budget, if any.
    pub budget: Option<Budget>,
    /// Memoized 1BitMean: the range is cut into this many steps for
    /// α-point rounding (default 32; ignored by other protocols).
    pub granularity: Option<u64>,
}

/// A config's client-only keys as read, their shape checked (which keys,
/// which types) and their values not yet: what [`ClientSettings::new`]
/// checks. A page without wasm-bindgen reads them itself (js/raw.mjs).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientKeys {
    /// `"memoize"`.
    pub memoize: bool,
    /// `"budget"`: its ε, its window's text and its δ.
    pub budget: Option<(f64, String, Option<f64>)>,
    /// `"granularity"` if present: its value if a whole number (up to
    /// 2^53 − 1), `None` for any other value.
    pub granularity: Option<Option<u64>>,
}

impl ClientKeys {
    /// Reads the client-only keys of a config object: their shape only.
    fn read(config: &ConfigObject) -> Result<Self> {
        let memoize = match config.get("memoize") {
            Field::Missing => false,
            Field::Bool(b) => b,
            _ => return Err(Error::malformed_key("memoize", "\"memoize\" must be true or false")),
        };
        let budget = match config.get("budget") {
            Field::Missing => None,
            Field::Object(b) => {
                let Field::Number(epsilon, _) = b.get("epsilon") else {
                    return Err(Error::malformed_key(
                        "budget",
                        "\"budget\" needs \"epsilon\" (a number) and \"window\" (e.g. \"1d\")",
                    ));
                };
                let Field::Text(window) = b.get("window") else {
                    return Err(Error::malformed_key("budget", "\"budget\" needs \"window\", e.g. \"1d\", \"12h\", \"30m\""));
                };
                if b.keys().iter().any(|k| !["epsilon", "window", "delta"].contains(&k.as_str())) {
                    return Err(Error::malformed_key(
                        "budget",
                        "\"budget\" takes only \"epsilon\", \"window\" and \"delta\"",
                    ));
                }
                let delta = match b.get("delta") {
                    Field::Missing => None,
                    // JSON has no NaN or infinity: they arrive as null, a type error like text.
                    Field::Number(delta, _) => Some(delta),
                    _ => {
                        let detail = text!("\"budget.delta\" must be a number in (", number_text(MIN_DELTA), ", 1)");
                        return Err(Error::malformed_key("budget.delta", detail));
                    }
                };
                Some((epsilon, window, delta))
            }
            _ => return Err(Error::malformed_key("budget", "\"budget\" must be an object")),
        };
        let granularity = match config.get("granularity") {
            Field::Missing => None,
            g => Some(g.as_u64()),
        };
        Ok(ClientKeys { memoize, budget, granularity })
    }
}

impl ClientSettings {
    /// Reads and validates the client-only keys of a config object: every
    /// key's shape first, then the values ([`ClientSettings::new`]).
    pub(crate) fn from_config(config: &ConfigObject) -> Result<Self> {
        ClientSettings::new(ClientKeys::read(config)?)
    }

    /// Checks the values of a config's client-only keys: the budget's ε,
    /// window and δ, and the granularity's range.
    ///
    /// ```
    /// use localdp::client::{ClientKeys, ClientSettings};
    /// let keys = ClientKeys { memoize: true, budget: Some((4.0, "1d".into(), None)), granularity: None };
    /// let settings = ClientSettings::new(keys.clone())?;
    /// assert_eq!(settings.budget.map(|b| b.window_ms), Some(86_400_000));
    /// assert!(ClientSettings::new(ClientKeys { budget: Some((0.0, "1d".into(), None)), ..keys.clone() }).is_err());
    /// assert!(ClientSettings::new(ClientKeys { granularity: Some(None), ..keys }).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(keys: ClientKeys) -> Result<Self> {
        let ClientKeys { memoize, budget, granularity } = keys;
        let budget = match budget {
            None => None,
            Some((epsilon, window, delta)) => {
                if !(epsilon.is_finite() && epsilon > 0.0) {
                    return Err(Error::invalid("budget.epsilon", Requirement::Positive { found: epsilon }));
                }
                let window_ms = parse_window(&window)?;
                let delta = match delta {
                    None => None,
                    Some(delta) => Some(check_delta("budget.delta", delta)?),
                };
                // A build without the (ε, δ) charge (a module of one family)
                // refuses a δ it would not charge by.
                if cfg!(not(feature = "delta")) && delta.is_some() {
                    return Err(Error::ComposedBudget);
                }
                Some(Budget { epsilon, window_ms, delta })
            }
        };
        let granularity = match granularity {
            None => None,
            Some(Some(g)) if (1..=MAX_GRANULARITY).contains(&g) => Some(g),
            Some(found) => {
                let requirement = Requirement::IntegerRange { min: 1, max: MAX_GRANULARITY, found: found.unwrap_or(0) };
                return Err(Error::invalid("granularity", requirement));
            }
        };
        Ok(ClientSettings { memoize, budget, granularity })
    }
}

/// `"30s"`, `"15m"`, `"12h"`, `"1d"`, `"7d"` in milliseconds.
///
/// ```
/// use localdp::client::parse_window;
/// assert_eq!(parse_window("15m")?, 900_000);
/// assert_eq!(parse_window("1d")?, 86_400_000);
/// assert!(parse_window("0s").is_err() && parse_window("1w").is_err() && parse_window("d").is_err());
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn parse_window(text: &str) -> Result<u64> {
    let bad = || {
        Error::invalid("budget.window", Requirement::Format { expected: "a whole number of s, m, h or d, e.g. \"1d\"" })
    };
    // The unit is one ASCII byte; a multi-byte last character is no unit (and no char boundary).
    let (number, unit) = text.split_at_checked(text.len().checked_sub(1).ok_or_else(bad)?).ok_or_else(bad)?;
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_ms).filter(|&ms| ms > 0).ok_or_else(bad)
}

