//! Numeric values: the mean of a bounded number, estimated from reports that
//! lie on a public grid.
//!
//! A value `x` is clipped to the configured `[lo, hi]` (clipping is part of
//! the guarantee: whatever the device holds, only a number in the range is
//! randomized) and mapped to `t = 2(x − lo)/(hi − lo) − 1 ∈ [−1, 1]`. Then
//!
//! 1. `t` is rounded **at random** to one of its two neighbours on the
//!    mechanism's *input grid* `t_i = −1 + 2i/G`, up with probability equal to
//!    the fractional position: `E[t_i] = t`, so nothing is biased, and the
//!    rounding needs no privacy (any mixture of ε-DP rows is ε-DP);
//! 2. the grid point's row of a **finite channel** is sampled with exact
//!    integer coins ([`crate::rng::Bernoulli`], [`crate::rng::UniformBelow`]):
//!    the report is an integer *output index*, and every output index decodes
//!    to a public number.
//!
//! No floating-point sampling happens anywhere (Mironov, CCS 2012): the
//! released values form a finite public set, and the realized channel — rows
//! by grid input, columns by output index — can be enumerated and its
//! log-ratios checked exactly ([`NumericMetric::channel_probability`]).
//!
//! | protocol | output | grid | cost vs. the continuous mechanism |
//! |---|---|---|---|
//! | `duchi` (Duchi, Jordan, Wainwright, JASA 2018) | `±B` | `G = 1` (t is rounded to ±1, which *is* Duchi's channel) | none |
//! | `one_bit_mean` (Ding, Kulkarni, Yekhanin, NeurIPS 2017) | one bit | as `duchi`: the same channel written in `[0, m]` | none |
//! | `laplace` | `t_i + Δ·Z`, `Z` two-sided geometric | `G = max(2, ⌈16 ε⌉)`, step `Δ = 2/G` | discrete noise has variance `(a/2)²/sinh²(a/2)` ≥ 99.9% of `8/ε²` (`a = ε/G ≤ 1/16`); rounding adds at most `1/G²` |
//! | `piecewise` (Wang et al., ICDE 2019) | one of `G + m` cells | `G = max(256, ⌈64 e^{ε/2}⌉)` (≤ 2^20), window `m = round(G e^{−ε/2})` cells | window width rounded to a cell: below 1% at ε ≤ 8 |
//! | `hybrid` (same paper) | a piecewise cell w.p. `α = 1 − e^{−ε/2}` (ε > 0.61), else Duchi | as `piecewise` | as `piecewise` |
//!
//! The per-report variances are the *exact* ones of the discrete channels
//! ([`NumericMetric::variance`]); `tests/numeric.rs` prints them beside the
//! continuous closed forms of PROTOCOLS.md §3. The Laplace output is clamped
//! to a window of `M` grid steps beyond the range (clamping is
//! post-processing); `M` is chosen so that a clamp happens with probability
//! below `2^-40`, which bounds the bias it causes by `2^-40 · M · Δ`.
//!
//! **Vectors** (Wang et al., ICDE 2019): with `"range": [[lo, hi], …]` a
//! record of `D` attributes is reported by sampling `k = max(1, min(D,
//! ⌊ε/2.5⌋))` attributes uniformly without replacement, each randomized with
//! `ε/k`; the aggregator scales them by `D/k`, so every attribute's mean is
//! unbiased and the record costs ε in all.

mod duchi;
mod hybrid;
mod laplace;
mod piecewise;
#[doc(hidden)]
pub mod scalar;

pub use crate::protocol::NumericProtocol;
use crate::settings::MAX_GRANULARITY;
use crate::error::{Error, ExpectedValue, Rejection, Requirement, Result};
use crate::hash::fingerprint;
use crate::json::{ConfigObject, Field, FromField};
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, parse_numbers, ValueKind};
use crate::names::{Selection};
use crate::{number::number_text, privacy::validate_epsilon};
use crate::{protocol::Protocol, report::{memo_report, Payload, Report}};
use crate::rng::{uniform_below, Bernoulli, CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::sync::Arc;

pub use duchi::Duchi;
pub use hybrid::Hybrid;
pub use laplace::Laplace;
pub use piecewise::Piecewise;
use scalar::{Component, Scalar};

/// The largest ε accepted for a numeric metric (per record).
pub const MAX_EPSILON: f64 = 30.0;

/// The smallest ε accepted for a numeric metric (per record). Below it a
/// report carries almost nothing, and the discrete Laplace's geometric noise
/// would need about `1/ε` coins per report (fuzzing found ε = 1e-12 hanging
/// and ε < 5e-13 pushing `e^{ε/G}` below one).
pub const MIN_EPSILON: f64 = 0.01;

/// Memoized 1BitMean's default α-point grid: the range in 32 steps.
pub const DEFAULT_GRANULARITY: u64 = 32;

/// The α-point offsets of memoized 1BitMean: `α` is one of `2^16`.
const ALPHA_STEPS: u64 = 1 << 16;

impl NumericProtocol {
    /// The mechanism's one-attribute channel at ε `e`, on the default grid or
    /// on one of `g` steps: one arm per protocol (its name is in
    /// `protocol.rs`; a new mechanism is a module, its name there and an arm
    /// here, which the compiler asks for).
    fn scalar(self, e: f64, g: Option<u64>) -> Arc<dyn Scalar> {
        match self {
            NumericProtocol::Duchi => Arc::new(Duchi::new(e)),
            NumericProtocol::Laplace => Arc::new(g.map_or_else(|| Laplace::new(e), |g| Laplace::with_steps(e, g))),
            NumericProtocol::Piecewise => Arc::new(g.map_or_else(|| Piecewise::new(e), |g| Piecewise::with_steps(e, g))),
            NumericProtocol::Hybrid => Arc::new(g.map_or_else(|| Hybrid::new(e), |g| Hybrid::with_steps(e, g))),
            NumericProtocol::OneBitMean => Arc::new(Duchi::new(e)),
        }
    }
}

impl NumericProtocol {
    /// The protocols `auto` considers, smaller reports first (ties go to the
    /// first). 1BitMean is Duchi's channel and never wins over it.
    pub const AUTO: [NumericProtocol; 4] =
        [NumericProtocol::Duchi, NumericProtocol::Piecewise, NumericProtocol::Hybrid, NumericProtocol::Laplace];
}

/// `[lo, hi]` for a single number, or one such pair per attribute.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
#[non_exhaustive]
pub enum RangeSpec {
    /// One number in `[lo, hi]`.
    Scalar([f64; 2]),
    /// A record of numbers, attribute `i` in `ranges[i]`.
    Vector(Vec<[f64; 2]>),
}

/// What a config says of a range that is neither shape.
const RANGE_SHAPE: &str = "range must be [lo, hi] (two numbers) or a list of such pairs, one per attribute";

impl FromField for RangeSpec {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        let spec = match field {
            Field::List(list) => {
                let items = list.fields();
                match items.as_slice() {
                    [Field::Number(lo, _), Field::Number(hi, _)] => Some(RangeSpec::Scalar([*lo, *hi])),
                    _ => items.into_iter().map(<[f64; 2]>::from_field).collect::<std::result::Result<_, _>>().ok().map(RangeSpec::Vector),
                }
            }
            _ => None,
        };
        spec.ok_or_else(|| RANGE_SHAPE.to_string())
    }
    fn missing(_: &str) -> String {
        RANGE_SHAPE.to_string()
    }
}

crate::config::read_by_hand!(RangeSpec);

/// A numeric metric's configuration: `{"protocol": "piecewise", "epsilon":
/// 1.0, "range": [0, 100]}`, or `"range": [[0, 100], [0, 5]]` for records.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NumericConfig {
    /// The mechanism, or `auto`.
    pub protocol: Selection<NumericProtocol>,
    /// ε of one report (of one whole record for vectors).
    pub epsilon: f64,
    /// The range(s).
    pub range: RangeSpec,
    /// Memoized 1BitMean only: the range is cut into this many steps for
    /// α-point rounding (default 32). It changes what a memo means, so it
    /// belongs to the client state's identity.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub granularity: Option<u64>,
}

impl NumericConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "range", "granularity"])?;
        Ok(NumericConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            range: config.read("range")?,
            granularity: config.read_optional("granularity")?,
        })
    }
}

crate::config::read_by_hand!(NumericConfig, NumericConfig::read);

/// The decoded value (in `t` units) of an output index.
fn decode(scalar: &dyn Scalar, output: u64) -> f64 {
    let c = scalar.components().iter().find(|c| output < c.end).expect("output in range");
    c.scale * output as f64 + c.offset
}

/// Rounds `t ∈ [−1, 1]` at random to a neighbouring grid input.
fn round_to_grid(steps: u64, t: f64, rng: &mut dyn RngCore) -> u64 {
    let (lower, up) = grid_position(steps, t);
    // Not privacy-critical (see the module docs); the coin is exact anyway.
    let coin = Bernoulli::rounded_up(up).expect("a fraction in [0, 1]");
    lower + u64::from(coin.sample(rng))
}

/// The grid input below `t` and the probability of rounding up from it.
fn grid_position(steps: u64, t: f64) -> (u64, f64) {
    let u = (t + 1.0) * 0.5 * steps as f64;
    let lower = (u.floor().max(0.0) as u64).min(steps - 1);
    (lower, crate::number::clamp(u - lower as f64, 0.0, 1.0))
}

/// Maps a finite `x` into `t ∈ [−1, 1]`, clipping to `[lo, hi]`.
fn to_unit(x: f64, [lo, hi]: [f64; 2]) -> f64 {
    let clipped = crate::number::clamp(x, lo, hi);
    crate::number::clamp(2.0 * ((clipped - lo) / (hi - lo)) - 1.0, -1.0, 1.0)
}

/// A configured numeric metric: the client's randomizer and the
/// aggregator's parameters in one value.
///
/// ```
/// use localdp::{Aggregate, NumericMetric, NumericAggregator, Randomizer, SimulationRng};
/// let metric = NumericMetric::from_json(r#"{"protocol":"auto","epsilon":1.0,"range":[0,100]}"#).unwrap();
/// let mut rng = SimulationRng::seed_from_u64(7); // simulation only; clients use SecureRng
/// let mut aggregator = NumericAggregator::new(metric.clone());
/// for i in 0..20_000 {
///     let report = metric.randomize(&[f64::from(i % 50)], &mut rng).unwrap();
///     aggregator.add(&report).unwrap();
/// }
/// let estimate = aggregator.estimate().unwrap();
/// let mean = &estimate.attributes[0];
/// assert!((mean.mean - 24.5).abs() < 5.0 * mean.std_error);
/// ```
#[derive(Clone)]
pub struct NumericMetric {
    protocol: NumericProtocol,
    epsilon: f64,
    ranges: Vec<[f64; 2]>,
    vector: bool,
    sampled: usize,
    fingerprint: String,
    scalar: Arc<dyn Scalar>,
    granularity: u64,
}

/// The config and grid (the channel itself is kept out: debug output of
/// trait objects would add float formatting to the wasm build).
impl std::fmt::Debug for NumericMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NumericMetric")
            .field("protocol", &self.protocol)
            .field("ranges", &self.ranges.len())
            .field("sampled", &self.sampled)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl PartialEq for NumericMetric {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol
            && self.epsilon.to_bits() == other.epsilon.to_bits()
            && self.fingerprint == other.fingerprint
    }
}

impl NumericMetric {
    /// Validates the config and resolves `auto`. The example shows the
    /// getters below it too.
    ///
    /// ```
    /// use localdp::{NumericConfig, NumericMetric, NumericProtocol, RangeSpec, Selection};
    /// let config = NumericConfig {
    ///     protocol: Selection::Fixed(NumericProtocol::Duchi),
    ///     epsilon: 2.0,
    ///     range: RangeSpec::Vector(vec![[0.0, 10.0], [0.0, 1.0]]),
    ///     granularity: None,
    /// };
    /// let metric = NumericMetric::new(&config)?;
    /// assert_eq!((metric.protocol(), metric.epsilon()), (NumericProtocol::Duchi, 2.0));
    /// assert_eq!(metric.ranges(), &[[0.0, 10.0], [0.0, 1.0]]);
    /// assert!(metric.is_vector() && metric.sampled() >= 1 && !metric.fingerprint().is_empty());
    /// // Duchi's two outputs stand for ±(e^ε + 1)/(e^ε − 1) in t units: public numbers.
    /// assert_eq!(metric.outputs(), 2);
    /// let c = (2f64.exp() + 1.0) / (2f64.exp() - 1.0);
    /// assert!((metric.grid_value(0, 1) - 5.0 * (1.0 + c)).abs() < 1e-9);
    /// // The channel's rows are distributions, and the worst case bounds every t.
    /// let g = metric.grid_steps();
    /// let row: f64 = (0..metric.outputs()).map(|o| metric.channel_probability(g / 2, o)).sum();
    /// assert!((row - 1.0).abs() < 1e-12);
    /// assert!([-1.0, -0.3, 0.0, 0.7, 1.0].iter().all(|&t| metric.variance(t) <= metric.worst_case_variance() + 1e-12));
    /// assert!((metric.variance_at(1, 0.5) - metric.variance(0.0) * 0.25).abs() < 1e-12);
    /// // Piecewise on a coarse grid, for exact tests, with a fingerprint of its own.
    /// let piecewise = NumericConfig { protocol: Selection::Fixed(NumericProtocol::Piecewise), ..config };
    /// let coarse = NumericMetric::with_grid_steps(&piecewise, 4)?;
    /// assert_eq!(coarse.grid_steps(), 4);
    /// assert_ne!(coarse.fingerprint(), NumericMetric::new(&piecewise)?.fingerprint());
    /// // A report of this metric validates; one of the coarse grid's does not.
    /// use localdp::{Randomizer, SimulationRng};
    /// let mut rng = SimulationRng::seed_from_u64(1); // simulation only, never for real reports
    /// assert!(metric.validate(&metric.randomize(&[5.0, 0.5], &mut rng)?).is_ok());
    /// assert!(NumericMetric::new(&piecewise)?.validate(&coarse.randomize(&[5.0, 0.5], &mut rng)?).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(config: &NumericConfig) -> Result<Self> {
        Self::build(config, None)
    }

    /// The metric on a grid of `steps` steps instead of the default, for
    /// tests that enumerate a coarse channel. Its reports carry another
    /// fingerprint, so they never mix with the default grid's.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn with_grid_steps(config: &NumericConfig, steps: u64) -> Result<Self> {
        if steps < 2 {
            return Err(Error::invalid("steps", Requirement::IntegerRange { min: 2, max: u64::MAX, found: steps }));
        }
        Self::build(config, Some(steps))
    }

    fn build(config: &NumericConfig, steps: Option<u64>) -> Result<Self> {
        let epsilon = validate_epsilon(config.epsilon)?;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            return Err(Error::invalid(
                "epsilon",
                Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric: Some("numeric") },
            ));
        }
        let (ranges, vector) = match &config.range {
            RangeSpec::Scalar(r) => (vec![*r], false),
            RangeSpec::Vector(rs) => (rs.clone(), true),
        };
        if ranges.is_empty() {
            return Err(Error::invalid("range", Requirement::NonEmpty));
        }
        for (i, &[lo, hi]) in ranges.iter().enumerate() {
            let attribute = vector.then_some(i);
            if !(lo.is_finite() && hi.is_finite()) {
                return Err(Error::invalid("range", Requirement::FiniteBounds { attribute }));
            }
            if lo >= hi || !(hi - lo).is_finite() {
                return Err(Error::invalid("range", Requirement::NonEmptyRange { attribute, lo, hi }));
            }
        }
        let d = ranges.len();
        let sampled = ((epsilon / 2.5).floor() as usize).clamp(1, d);
        let per_attribute = epsilon / sampled as f64;
        let protocol = match config.protocol {
            Selection::Fixed(protocol) => protocol,
            Selection::Auto => Self::best(per_attribute, steps),
        };
        // Only memoized 1BitMean uses it; other protocols accept and ignore
        // it, as they always have.
        let granularity = match config.granularity {
            None => DEFAULT_GRANULARITY,
            Some(g) if (1..=MAX_GRANULARITY).contains(&g) => g,
            Some(g) => {
                let requirement = Requirement::IntegerRange { min: 1, max: MAX_GRANULARITY, found: g };
                return Err(Error::invalid("granularity", requirement));
            }
        };
        let scalar = protocol.scalar(per_attribute, steps);
        let mut canonical = text!("numeric:", vector, ":", sampled, ":", scalar.steps(), ":", scalar.outputs()).into_bytes();
        for [lo, hi] in &ranges {
            canonical.extend_from_slice(&lo.to_bits().to_le_bytes());
            canonical.extend_from_slice(&hi.to_bits().to_le_bytes());
        }
        let fingerprint = fingerprint(&canonical);
        Ok(NumericMetric { protocol, epsilon, ranges, vector, sampled, fingerprint, scalar, granularity })
    }

    /// Parses a JSON config and builds the metric.
    ///
    /// ```
    /// use localdp::{NumericMetric, NumericProtocol};
    /// let metric = NumericMetric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[0,5000]}"#)?;
    /// assert_eq!(metric.protocol(), NumericProtocol::Hybrid); // Duchi's only up to ε = 0.61
    /// assert_eq!(metric.ranges(), &[[0.0, 5000.0]]);
    /// assert!(NumericMetric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[5,5]}"#).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&NumericConfig::read(&parse_config(text)?)?)
    }

    /// `auto`: the smallest worst-case per-report variance at ε.
    fn best(epsilon: f64, steps: Option<u64>) -> NumericProtocol {
        let mut best = (f64::INFINITY, NumericProtocol::Duchi);
        for protocol in NumericProtocol::AUTO {
            let v = worst_case_variance(&*protocol.scalar(epsilon, steps), 1.0);
            if v < best.0 * (1.0 - 1e-9) {
                best = (v, protocol);
            }
        }
        best.1
    }

    /// The resolved protocol.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn protocol(&self) -> NumericProtocol {
        self.protocol
    }

    /// ε of one report.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The attributes' ranges (one for a scalar metric).
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn ranges(&self) -> &[[f64; 2]] {
        &self.ranges
    }

    /// The fingerprint of the domain or range that reports carry.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// True for a record metric (`"range": [[lo, hi], …]`).
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn is_vector(&self) -> bool {
        self.vector
    }

    /// Attributes randomized per record (`k`), each with `ε/k`.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn sampled(&self) -> usize {
        self.sampled
    }

    /// The number of output indices of one attribute's channel.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn outputs(&self) -> u64 {
        self.scalar.outputs()
    }

    /// `G`, the number of steps of the input grid.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn grid_steps(&self) -> u64 {
        self.scalar.steps()
    }

    /// The public number (in the attribute's units) that output index
    /// `output` of attribute `attribute` stands for, before the `D/k` scaling
    /// of vectors. Every released value is one of these.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn grid_value(&self, attribute: usize, output: u64) -> f64 {
        from_unit(decode(&*self.scalar, output), self.ranges[attribute])
    }

    /// The exact variance (in `t` units, `t ∈ [−1, 1]`) of one report's
    /// unbiased estimate of one attribute whose value maps to `t`, including
    /// the random rounding to the grid and, for vectors, the attribute
    /// sampling.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn variance(&self, t: f64) -> f64 {
        let (lower, up) = grid_position(self.scalar.steps(), t);
        let second = (1.0 - up) * self.scalar.second_moment(lower) + up * self.scalar.second_moment(lower + 1);
        let scale = self.ranges.len() as f64 / self.sampled as f64;
        scale * second - t * t
    }

    /// The same variance in the attribute's own units for a value `x`.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn variance_at(&self, attribute: usize, x: f64) -> f64 {
        let [lo, hi] = self.ranges[attribute];
        let half = 0.5 * (hi - lo);
        self.variance(to_unit(x, [lo, hi])) * half * half
    }

    /// The largest per-report variance over `t ∈ [−1, 1]` (`t` units): the
    /// maximum of [`Self::variance`], the record's `D/k` scaling included.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn worst_case_variance(&self) -> f64 {
        worst_case_variance(&*self.scalar, self.ranges.len() as f64 / self.sampled as f64)
    }

    /// The realized channel of one attribute, for the exact tests:
    /// `P[output | grid input]`, for `input ≤ G` and `output <` [`Self::outputs`].
    /// Any value's output distribution is a mixture of two adjacent rows.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn channel_probability(&self, input: u64, output: u64) -> f64 {
        self.scalar.probability(input, output)
    }

    /// Randomizes one record (a single number for a scalar metric). Values
    /// are clipped to their range; NaN and infinities are refused.
    fn randomize_values(&self, values: &[f64], rng: &mut dyn RngCore) -> Result<Report> {
        if values.len() != self.ranges.len() {
            let expected = ExpectedValue::Numbers { count: self.ranges.len(), found: values.len() };
            return Err(Error::InvalidValue { expected });
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(Error::InvalidValue { expected: ExpectedValue::FiniteNumber });
        }
        let randomize = |attribute: usize, rng: &mut dyn RngCore| {
            let t = to_unit(values[attribute], self.ranges[attribute]);
            let input = round_to_grid(self.scalar.steps(), t, rng);
            self.scalar.sample(input, rng)
        };
        let payload = if self.vector {
            let attributes = crate::rng::sample_subset(self.ranges.len(), self.sampled, rng);
            let values = attributes.iter().map(|&a| randomize(a as usize, rng)).collect();
            Payload::Sampled { attributes, values }
        } else {
            Payload::Index(randomize(0, rng))
        };
        Ok(crate::metric::kind::envelope(self, payload))
    }

    /// Checks that a report was made under this configuration and is well
    /// formed; the error carries the counted reason.
    ///
    /// See the example on [`NumericMetric::new`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::Numeric(self.protocol), self.epsilon, &self.fingerprint)?;
        let outputs = self.scalar.outputs();
        let check = |v: u64| {
            if v < outputs {
                Ok(())
            } else {
                Err(Rejection::OutOfRange.error(text!("value must be below ", outputs)))
            }
        };
        match (&report.payload, self.vector) {
            (Payload::Index(v), false) => check(*v),
            (Payload::Sampled { attributes, values }, true) => {
                if attributes.len() != self.sampled || values.len() != self.sampled {
                    return Err(Rejection::BadSubsetSize
                        .error(text!("expected ", self.sampled, " sampled attributes and as many values")));
                }
                if attributes.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(Rejection::Malformed.error("attributes must be strictly increasing"));
                }
                if attributes.iter().any(|&a| a as usize >= self.ranges.len()) {
                    return Err(Rejection::OutOfRange
                        .error(text!("attributes must be below ", self.ranges.len())));
                }
                values.iter().try_for_each(|&v| check(v))
            }
            (_, false) => Err(Rejection::Malformed.error("expected a single value")),
            (_, true) => Err(Rejection::Malformed.error("expected attributes and values")),
        }
    }

    #[doc(hidden)]
    pub fn components(&self) -> &[Component] {
        self.scalar.components()
    }
}

impl Randomizer for NumericMetric {
    /// One number per attribute (one for a scalar metric).
    type Value = [f64];

    fn randomize<R: CryptoRng + RngCore>(&self, values: &[f64], rng: &mut R) -> Result<Report> {
        self.randomize_values(values, rng)
    }
}

/// Numeric configs: a `"range"` and a `"protocol"` of this family (or `"auto"`).
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, config| config.contains_key("range") && protocol.parse::<Selection<NumericProtocol>>().is_ok(),
    build: |config, settings| {
        let mut config = NumericConfig::read(&config)?;
        config.granularity = config.granularity.or(settings.granularity);
        Ok(Arc::new(NumericMetric::new(&config)?))
    },
    protocols: Selection::<NumericProtocol>::names,
    shape: "range",
    label: "numeric (\"range\")",
};

impl Kind for NumericMetric {
    fn protocol(&self) -> Protocol {
        Protocol::Numeric(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_values(&parse_numbers(text)?, rng)
    }
    /// Memoization applies to scalar 1BitMean (α-point rounding).
    fn family(&self) -> &'static str {
        "numeric"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Numbers { attributes: self.ranges.len() }
    }
    fn memo(&self) -> Option<&dyn Memo> {
        (self.protocol == NumericProtocol::OneBitMean && !self.vector).then_some(self as &dyn Memo)
    }
    /// A record: sampled attributes and values; one number: a value.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        use crate::report::ReportFields;
        if self.vector {
            ReportFields::SAMPLED
        } else {
            ReportFields::INDEX
        }
    }
    #[cfg(feature = "aggregate")]
    /// The two ends of every range.
    fn neighbours(&self) -> [String; 2] {
        let ends = |end: usize| crate::text::join(self.ranges.iter().map(|r| number_text(r[end])), ",");
        [ends(0), ends(1)]
    }
    #[cfg(feature = "aggregate")]
    /// Each attribute's exact output, `output ≥ c` for a coarse set of cut
    /// points (16 of them keep the event count small), and the level of the
    /// likelihood ratio between the two ends (as for frequency metrics; a
    /// record's is the sum over its reported attributes): Laplace's top
    /// level is every output beyond the range, which no cut point need meet.
    fn events(&self, report: &Report) -> Vec<String> {
        let outputs = self.outputs();
        let step = (outputs / 16).max(1) as usize;
        let attribute_events = |attribute: u32, k: u64| {
            let cuts = (1..outputs).step_by(step).filter(move |&c| k >= c);
            std::iter::once(text!("attribute ", attribute, " output ", k))
                .chain(cuts.map(move |c| text!("attribute ", attribute, " output ≥ ", c)))
        };
        let reported: Vec<(u32, u64)> = match &report.payload {
            Payload::Index(k) => vec![(0, *k)],
            Payload::Sampled { attributes, values } => attributes.iter().copied().zip(values.iter().copied()).collect(),
            _ => return Vec::new(),
        };
        let mut events: Vec<String> = reported.iter().flat_map(|&(a, k)| attribute_events(a, k)).collect();
        let ends = [0, self.scalar.steps()];
        let ratios = reported.iter().map(|&(_, k)| match ends.map(|input| self.scalar.probability(input, k)) {
            [first, last] if first > 0.0 && last > 0.0 => Some((first / last).ln()),
            _ => None,
        });
        events.extend(ratios.sum::<Option<f64>>().map(crate::metric::kind::likelihood_level));
        events
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoized 1BitMean (Ding, Kulkarni, Yekhanin, NeurIPS 2017): α-point
/// rounding moves the value to one of `s + 1` points of the range, up with
/// probability equal to its position between them (exactly, over this
/// install's α, drawn once), and each point's response is memoized.
impl Memo for NumericMetric {
    /// A non-default grid (the default keeps the identity states had
    /// before the grid was part of it).
    fn identity(&self) -> String {
        if self.granularity == DEFAULT_GRANULARITY {
            String::new()
        } else {
            text!("granularity=", self.granularity)
        }
    }
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        vec![uniform_below(rng, ALPHA_STEPS)]
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        matches!(draws, [alpha] if *alpha < ALPHA_STEPS)
    }
    fn key(&self, value: &str, draws: &[u64]) -> Result<String> {
        Ok(text!(self.alpha_point(value, draws)?))
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        let point = self.alpha_point(value, draws)?;
        let [lo, hi] = self.ranges[0];
        let x = lo + (hi - lo) * point as f64 / self.granularity as f64;
        Ok(self.randomize_values(&[x], rng)?.to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], _rng: &mut dyn RngCore) -> Result<Report> {
        // A memo is a report of this metric's one number: an output of its grid.
        let output = |p: &Payload| matches!(*p, Payload::Index(v) if v < self.scalar.outputs());
        memo_report(permanent, Protocol::Numeric(self.protocol), self.epsilon, &self.fingerprint, output)
    }
}

impl NumericMetric {
    /// The α-point a value rounds to, for this install's α.
    fn alpha_point(&self, value: &str, draws: &[u64]) -> Result<u64> {
        let values = parse_numbers(value)?;
        let one = Error::InvalidValue { expected: ExpectedValue::FiniteNumbers { count: 1 } };
        let (&[x], &[alpha]) = (values.as_slice(), draws) else { return Err(one) };
        if !x.is_finite() {
            return Err(one);
        }
        let [lo, hi] = self.ranges[0];
        let s = self.granularity;
        let u = crate::number::clamp((crate::number::clamp(x, lo, hi) - lo) / (hi - lo) * s as f64, 0.0, s as f64);
        let below = (u.floor() as u64).min(s);
        let fraction = ((u - below as f64) * ALPHA_STEPS as f64).floor() as u64;
        Ok(below + u64::from(fraction > alpha))
    }
}

/// Maps `t` back to the range's units.
fn from_unit(t: f64, [lo, hi]: [f64; 2]) -> f64 {
    lo + (hi - lo) * (t + 1.0) * 0.5
}

/// The largest per-report variance over `t ∈ [−1, 1]` of one channel whose
/// estimates are scaled by `scale` (`D/k` for a record, 1 for one number).
/// Between grid inputs `t0 < t1` the variance is
/// `scale·((1−u)·m0 + u·m1) − t²` (`m` the second moments, `u` the
/// position): concave, so its maximum is at
/// `t* = scale·(m1 − m0)/(2(t1 − t0))` clamped to the interval.
fn worst_case_variance(s: &dyn Scalar, scale: f64) -> f64 {
    let g = s.steps();
    let grid = |i: u64| -1.0 + 2.0 * i as f64 / g as f64;
    let mut worst = f64::NEG_INFINITY;
    for i in 0..g {
        let (t0, t1, m0, m1) = (grid(i), grid(i + 1), s.second_moment(i), s.second_moment(i + 1));
        let t = crate::number::clamp(scale * (m1 - m0) / (2.0 * (t1 - t0)), t0, t1);
        let u = (t - t0) / (t1 - t0);
        worst = worst.max(scale * ((1.0 - u) * m0 + u * m1) - t * t);
    }
    worst
}
