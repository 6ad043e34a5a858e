//! Repeated collection on the device: memoized responses and a privacy
//! ledger, with the state that carries them from one session to the next.
//!
//! Fresh randomization on every report composes: `k` reports of one value
//! cost `kε`, and a majority vote over a few dozen of them recovers the value.
//! With `"memoize": true` the first report of a value draws a *permanent*
//! response, which is stored and sent again for every later report of the
//! same value (RAPPOR's permanent randomized response; for `one_bit_mean`
//! with α-point rounding, Ding, Kulkarni, Yekhanin, NeurIPS 2017). As long
//! as the value does not change, the long-run cost stays the permanent
//! response's ε; a changed value draws (and costs) a new one.
//!
//! * **Memo keys** are HMAC-SHA256 under a random 256-bit per-install secret
//!   of the metric's fingerprint and the value, so a stored key reveals
//!   nothing about the value without the secret. Secret, memos and ledger
//!   never leave the device; the stored memo is the (already randomized)
//!   report.
//! * **The ledger** records the ε each report spends (a memo hit spends
//!   nothing) with its time, and with `"budget": {"epsilon": E, "window":
//!   "1d"}` refuses, with [`Error::PrivacyBudgetExceeded`], a report that
//!   would take the ε spent in the last window above `E` (basic composition:
//!   ε's add). It fails closed: nothing is released when the budget is short.
//! * **Resets**: state that is corrupt is replaced by a fresh one, and the
//!   reset is counted ([`Client::resets`]). Every reset is a new secret and
//!   new permanent responses: the long-run ε of a value reported across `r`
//!   resets is `(r+1)·ε`, so resets should stay rare and be monitored.
//!
//! Memoization makes a user's repeated reports identical, hence linkable to
//! each other (not to the value); RAPPOR's instantaneous step exists to blur
//! that and is available with `"protocol": "rappor"`.

use crate::error::{Error, Result};
use crate::metric::Metric;
use crate::privacy::number_text;
use crate::report::{BitVector, Report};
use crate::rng::{uniform_below, RngCore};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::BTreeMap;

/// The keys of a config that only the client reads; the aggregator ignores
/// them.
pub const CLIENT_KEYS: [&str; 3] = ["memoize", "budget", "granularity"];

/// The format version of [`ClientState`].
pub const STATE_VERSION: u32 = 1;

/// The α-point grid of memoized 1BitMean: `α` is one of `2^16` offsets.
const ALPHA_STEPS: u64 = 1 << 16;

/// A privacy budget: at most `epsilon` spent in any `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The most ε a window may hold.
    pub epsilon: f64,
    /// The window's length in milliseconds.
    pub window_ms: u64,
}

/// The client-only settings of a config.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// Draw one permanent response per value and resend it.
    pub memoize: bool,
    /// The ledger's budget, if any.
    pub budget: Option<Budget>,
    /// Memoized 1BitMean: the range is cut into this many steps for α-point
    /// rounding (default 32).
    pub granularity: u64,
}

impl ClientSettings {
    /// Reads and validates the client-only keys of a config object.
    pub fn from_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        let memoize = match config.get("memoize") {
            None => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(_) => return Err(Error::MalformedConfig("\"memoize\" must be true or false".into())),
        };
        let budget = match config.get("budget") {
            None => None,
            Some(serde_json::Value::Object(b)) => {
                let epsilon = b.get("epsilon").and_then(serde_json::Value::as_f64).ok_or_else(|| {
                    Error::MalformedConfig("\"budget\" needs \"epsilon\" (a number) and \"window\" (e.g. \"1d\")".into())
                })?;
                if !(epsilon.is_finite() && epsilon > 0.0) {
                    return Err(Error::InvalidConfig(format!("budget epsilon must be > 0, got {}", number_text(epsilon))));
                }
                let window = b.get("window").and_then(serde_json::Value::as_str).ok_or_else(|| {
                    Error::MalformedConfig("\"budget\" needs \"window\", e.g. \"1d\", \"12h\", \"30m\"".into())
                })?;
                if b.keys().any(|k| k != "epsilon" && k != "window") {
                    return Err(Error::MalformedConfig("\"budget\" takes only \"epsilon\" and \"window\"".into()));
                }
                Some(Budget { epsilon, window_ms: parse_window(window)? })
            }
            Some(_) => return Err(Error::MalformedConfig("\"budget\" must be an object".into())),
        };
        let granularity = match config.get("granularity") {
            None => 32,
            Some(g) => g
                .as_u64()
                .filter(|g| (1..=1 << 20).contains(g))
                .ok_or_else(|| Error::InvalidConfig("\"granularity\" must be an integer in 1..=1048576".into()))?,
        };
        Ok(ClientSettings { memoize, budget, granularity })
    }
}

/// `"30s"`, `"15m"`, `"12h"`, `"1d"`, `"7d"` in milliseconds.
pub fn parse_window(text: &str) -> Result<u64> {
    let bad = || Error::InvalidConfig("budget window must be a whole number of s, m, h or d, e.g. \"1d\"".into());
    let (number, unit) = text.split_at(text.len().checked_sub(1).ok_or_else(bad)?);
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

/// What a client keeps between sessions for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// The metric this state belongs to (protocol, ε and fingerprint).
    pub metric: String,
    /// Memo keys (hex HMACs) to the permanent response (a report's JSON).
    #[serde(default)]
    pub memos: BTreeMap<String, String>,
    /// `(time in ms, ε)` of every report that spent ε, oldest first.
    #[serde(default)]
    pub ledger: Vec<(u64, f64)>,
    /// Memoized 1BitMean: this install's α-point offset.
    #[serde(default)]
    pub alpha: Option<u64>,
    /// Memoized dBitFlip: this install's sampled buckets.
    #[serde(default)]
    pub buckets: Option<Vec<u32>>,
    /// RAPPOR: this install's cohort.
    #[serde(default)]
    pub cohort: Option<u32>,
}

/// One metric's client with memoization and a ledger. The per-install
/// secret and the state are handed in (the JS package keeps them in Web
/// Storage) and read back after every report.
#[derive(Debug, Clone)]
pub struct Client {
    metric: Metric,
    settings: ClientSettings,
    secret: [u8; 32],
    state: ClientState,
    resets: u64,
}

/// A fresh 256-bit secret as hex.
pub fn new_secret(rng: &mut dyn RngCore) -> String {
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    secret.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_secret(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut secret = [0u8; 32];
    for (b, pair) in secret.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *b = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(secret)
}

impl Client {
    /// A client for `config` (the metric's config text, client-only keys
    /// included), with the install's `secret` (hex, from [`new_secret`]) and
    /// the `stored` state of an earlier session, if any. A stored state that
    /// does not parse or belongs to another metric is replaced by a fresh
    /// one and counted as a reset.
    pub fn new(config: &str, secret: &str, stored: Option<&str>) -> Result<Self> {
        let (metric, settings) = Metric::with_client_settings(config)?;
        let secret = parse_secret(secret)
            .ok_or_else(|| Error::InvalidConfig("the client secret must be 64 hex digits".into()))?;
        let id = metric.id();
        let fresh = ClientState { version: STATE_VERSION, metric: id.clone(), memos: BTreeMap::new(), ledger: Vec::new(), alpha: None, buckets: None, cohort: None };
        let (state, resets) = match stored.map(serde_json::from_str::<ClientState>) {
            None => (fresh, 0),
            Some(Ok(s)) if s.version == STATE_VERSION && s.metric == id && s.ledger.iter().all(|(_, e)| e.is_finite()) => (s, 0),
            Some(_) => (fresh, 1),
        };
        if settings.memoize && !metric.memoizable() {
            return Err(Error::InvalidConfig(format!(
                "memoize is available for frequency protocols and one_bit_mean, not {}",
                metric.protocol_name()
            )));
        }
        Ok(Client { metric, settings, secret, state, resets })
    }

    /// The metric.
    pub fn metric(&self) -> &Metric {
        &self.metric
    }

    /// The client-only settings.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Resets found when this client was made (0 or 1).
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The state to store after a report.
    pub fn state_json(&self) -> String {
        serde_json::to_string(&self.state).expect("a state serializes")
    }

    /// ε spent within the budget window ending at `now_ms`.
    pub fn spent(&self, now_ms: u64) -> f64 {
        let window = self.settings.budget.map_or(u64::MAX, |b| b.window_ms);
        self.state.ledger.iter().filter(|(t, _)| now_ms.saturating_sub(*t) < window).map(|(_, e)| e).sum()
    }

    /// Randomizes a value written as text (see [`Metric::randomize_text`]) at
    /// time `now_ms`: from the memo if memoized and seen before, else fresh
    /// (and charged to the ledger, or refused if the budget is short).
    pub fn randomize_text(&mut self, value: &str, now_ms: u64, rng: &mut dyn RngCore) -> Result<Report> {
        match &self.metric {
            Metric::Numeric(_) => {
                let numbers = crate::metric::parse_numbers(value)?;
                self.randomize_numbers(&numbers, now_ms, rng)
            }
            Metric::Rappor(r) => {
                // RAPPOR always memoizes: the memo holds the permanent
                // response (PRR); every report is a fresh IRR of it.
                let r = r.clone();
                let cohort = *self.state.cohort.get_or_insert_with(|| r.draw_cohort(rng));
                let key = self.memo_key(value);
                let permanent = match self.state.memos.get(&key) {
                    Some(hex) => BitVector::from_hex(hex).map_err(|_| Error::InvalidConfig("a stored memo is corrupt".into()))?,
                    None => {
                        self.charge(now_ms)?;
                        let permanent = r.permanent(&r.bloom(cohort, value), rng);
                        self.state.memos.insert(key, permanent.to_hex());
                        permanent
                    }
                };
                Ok(r.instantaneous(cohort, &permanent, rng))
            }
            Metric::Frequency(o) => {
                let o = o.clone();
                let index = o.domain().index_of(value)?;
                if let Some(dbitflip) = o.dbitflip().filter(|_| self.settings.memoize) {
                    // dBitFlip: permanent buckets, one response per pattern.
                    let buckets = self.state.buckets.get_or_insert_with(|| dbitflip.sample_buckets(rng)).clone();
                    let key = buckets.iter().position(|&j| j as usize == index).map_or("none".into(), |p| p.to_string());
                    let fresh = |rng: &mut dyn RngCore| Ok(o.report(dbitflip.randomize_with(index, buckets, rng)));
                    return self.release(&key, now_ms, rng, fresh);
                }
                self.release(&index.to_string(), now_ms, rng, |rng| Ok(o.randomize_index(index, rng)))
            }
        }
    }

    /// Randomizes a numeric record (one number for a scalar metric).
    pub fn randomize_numbers(&mut self, values: &[f64], now_ms: u64, rng: &mut dyn RngCore) -> Result<Report> {
        let Metric::Numeric(m) = self.metric.clone() else {
            return Err(Error::InvalidValue("this metric takes labels or integers, not numbers".into()));
        };
        if !self.settings.memoize {
            return self.release("", now_ms, rng, |rng| m.randomize(values, rng));
        }
        // α-point rounding: the value moves to one of `s + 1` points, up with
        // probability equal to its position between them (exactly, over this
        // install's α), and each point's response is memoized.
        if values.len() != 1 || !values[0].is_finite() {
            return Err(Error::InvalidValue("expected 1 finite number".into()));
        }
        let [lo, hi] = m.ranges()[0];
        let s = self.settings.granularity;
        let alpha = *self.state.alpha.get_or_insert_with(|| uniform_below(rng, ALPHA_STEPS));
        let u = ((values[0].clamp(lo, hi) - lo) / (hi - lo) * s as f64).clamp(0.0, s as f64);
        let below = (u.floor() as u64).min(s);
        let fraction = ((u - below as f64) * ALPHA_STEPS as f64).floor() as u64;
        let point = below + u64::from(fraction > alpha);
        let x = lo + (hi - lo) * point as f64 / s as f64;
        self.release(&point.to_string(), now_ms, rng, |rng| m.randomize(&[x], rng))
    }

    /// Draws (or recalls) the response for `key`, charging the ledger.
    fn release(
        &mut self,
        key: &str,
        now_ms: u64,
        rng: &mut dyn RngCore,
        fresh: impl FnOnce(&mut dyn RngCore) -> Result<Report>,
    ) -> Result<Report> {
        let memo_key = self.settings.memoize.then(|| self.memo_key(key));
        if let Some(stored) = memo_key.as_ref().and_then(|k| self.state.memos.get(k)) {
            return Report::from_json(stored).map_err(|_| Error::InvalidConfig("a stored memo is corrupt".into()));
        }
        self.charge(now_ms)?;
        let report = fresh(rng)?;
        if let Some(k) = memo_key {
            self.state.memos.insert(k, report.to_json());
        }
        Ok(report)
    }

    /// Records a fresh response's ε in the ledger, or refuses it.
    fn charge(&mut self, now_ms: u64) -> Result<()> {
        let Some(budget) = self.settings.budget else { return Ok(()) };
        let cost = self.metric.long_run_epsilon();
        let spent = self.spent(now_ms);
        if spent + cost > budget.epsilon * (1.0 + 1e-12) {
            return Err(Error::PrivacyBudgetExceeded(format!(
                "this report would spend {} more, with {} of {} spent in the window",
                number_text(cost),
                number_text(spent),
                number_text(budget.epsilon)
            )));
        }
        self.state.ledger.retain(|(t, _)| now_ms.saturating_sub(*t) < budget.window_ms);
        self.state.ledger.push((now_ms, cost));
        Ok(())
    }

    /// HMAC-SHA256(secret, metric id ‖ 0 ‖ key), first 128 bits, as hex.
    fn memo_key(&self, key: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret).expect("any key length");
        mac.update(self.state.metric.as_bytes());
        mac.update(&[0]);
        mac.update(key.as_bytes());
        mac.finalize().into_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}
