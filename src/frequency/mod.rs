//! Frequency oracles: a categorical value is randomized on the client, and
//! its distribution is estimated from many reports on the server.
//!
//! Every protocol here is *pure* (Wang et al., USENIX Security 2017): a
//! report `y` supports a set of values, the true value is supported with
//! probability `p*` and any other value with probability `q* < p*`. One
//! [`FrequencyOracle`] holds a protocol's parameters, and both the client
//! ([`FrequencyOracle::randomize`]) and the aggregator
//! ([`crate::FrequencyAggregator`]) are made from it, so the two sides cannot
//! disagree about ε, `p*` or `q*`.
//!
//! The estimator of a value's count and its exact variance are
//!
//! ```text
//! ĉ_v = (S_v − n q*) / (p* − q*)
//! Var[ĉ_v] = n q*(1−q*)/(p*−q*)² + c_v (1 − p* − q*)/(p* − q*)
//! ```
//!
//! where `S_v` counts the reports that support `v`. `p*` and `q*` are the
//! *realized* probabilities of the integer-threshold coins, so the estimator is
//! exactly unbiased for the channel that actually runs.

mod dbitflip;
mod grr;
mod hadamard;
mod local_hashing;
mod subset;
mod unary;

use crate::domain::{Domain, DomainSpec};
use crate::error::{Error, Rejection, Result};
use crate::privacy::{number_text, validate_epsilon};
use crate::report::{Payload, Report, REPORT_VERSION};
use crate::rng::RngCore;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use dbitflip::DBitFlip;
pub use grr::GeneralizedRandomizedResponse;
pub use hadamard::HadamardResponse;
pub use local_hashing::LocalHashing;
pub use subset::SubsetSelection;
pub use unary::UnaryEncoding;

/// The largest ε accepted. Beyond it the randomization is negligible (and
/// `e^ε` approaches the limits of the integer-threshold coins).
pub const MAX_EPSILON: f64 = 30.0;

/// A frequency protocol, as named in configs and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Generalized randomized response (k-RR, direct encoding).
    Grr,
    /// Symmetric unary encoding (basic one-time RAPPOR).
    Sue,
    /// Optimized unary encoding.
    Oue,
    /// Binary local hashing (`g = 2`).
    Blh,
    /// Optimized local hashing (`g = round(e^ε) + 1`).
    Olh,
    /// Hadamard response.
    Hr,
    /// Subset selection.
    Ss,
    /// dBitFlip (never chosen by `auto`: it trades variance for repeated
    /// collection).
    #[serde(rename = "dbitflip")]
    DBitFlip,
}

impl Protocol {
    /// Every protocol, in the order `auto` considers them.
    pub const ALL: [Protocol; 7] = [
        Protocol::Grr,
        Protocol::Sue,
        Protocol::Oue,
        Protocol::Blh,
        Protocol::Olh,
        Protocol::Hr,
        Protocol::Ss,
    ];

    /// The name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grr => "grr",
            Protocol::Sue => "sue",
            Protocol::Oue => "oue",
            Protocol::Blh => "blh",
            Protocol::Olh => "olh",
            Protocol::Hr => "hr",
            Protocol::Ss => "ss",
            Protocol::DBitFlip => "dbitflip",
        }
    }
}

/// A protocol named in a config: one of the protocols, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolChoice {
    /// Generalized randomized response.
    Grr,
    /// Symmetric unary encoding.
    Sue,
    /// Optimized unary encoding.
    Oue,
    /// Binary local hashing.
    Blh,
    /// Optimized local hashing.
    Olh,
    /// Hadamard response.
    Hr,
    /// Subset selection.
    Ss,
    /// dBitFlip, with `"d"` buckets per report.
    #[serde(rename = "dbitflip")]
    DBitFlip,
    /// The protocol with the smallest variance for this ε and domain.
    Auto,
}

/// A frequency metric's configuration: `{"protocol": "olh", "epsilon": 1.0,
/// "domain": 1024}` or with `"domain": ["a", "b", …]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrequencyConfig {
    /// The protocol, or `auto`.
    pub protocol: ProtocolChoice,
    /// The privacy parameter of one report.
    pub epsilon: f64,
    /// The values.
    pub domain: DomainSpec,
    /// dBitFlip only: buckets sampled per report (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<u64>,
}

/// A probability kept as `mantissa · 2^exponent`, so that the likelihood of a
/// thousand-bit report neither underflows nor loses more than an ulp per
/// factor. Used to enumerate realized channels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Likelihood {
    mantissa: f64,
    exponent: i64,
}

impl Likelihood {
    /// Probability `p`.
    pub fn new(p: f64) -> Self {
        Likelihood { mantissa: 1.0, exponent: 0 }.times(p)
    }

    /// This probability times `factor`.
    pub fn times(self, factor: f64) -> Self {
        let (m, e) = libm::frexp(self.mantissa * factor);
        Likelihood { mantissa: m, exponent: self.exponent + i64::from(e) }
    }

    /// `ln(self / other)`.
    pub fn log_ratio(self, other: Likelihood) -> f64 {
        libm::log(self.mantissa / other.mantissa)
            + (self.exponent - other.exponent) as f64 * std::f64::consts::LN_2
    }

    /// The probability as a plain number (0 if it underflows).
    pub fn probability(self) -> f64 {
        libm::ldexp(self.mantissa, self.exponent.clamp(-2000, 2000) as i32)
    }

    /// True for probability zero.
    pub fn is_zero(self) -> bool {
        self.mantissa == 0.0
    }
}

/// What every protocol provides; the oracle adds the config checks, the report
/// envelope and the estimator on top.
pub(crate) trait Mechanism: Send + Sync {
    /// The randomized payload for the value at `index`.
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload;
    /// Checks the payload's shape and ranges.
    fn validate(&self, payload: &Payload) -> Result<()>;
    /// Adds a validated payload to the running counts.
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]);
    /// The number of running counts (`d`, or `K` for Hadamard response).
    fn counts_len(&self) -> usize;
    /// `S_v` for every value from the running counts of `n` reports.
    fn support_counts(&self, counts: &[u64], _n: u64) -> Vec<f64> {
        counts.iter().map(|&c| c as f64).collect()
    }
    /// The realized `(p*, q*)`.
    fn support_probabilities(&self) -> (f64, f64);
    /// `P[payload | value at index]` under the realized channel.
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood;
    /// The payload's size in bits, for `auto`'s tie-break.
    fn report_bits(&self) -> u64;
}

/// A configured frequency protocol: the client's randomizer and the
/// aggregator's parameters in one value.
///
/// ```
/// use localdp::{FrequencyConfig, FrequencyOracle, FrequencyAggregator, SimulationRng};
/// let config: FrequencyConfig =
///     serde_json::from_str(r#"{"protocol":"auto","epsilon":1.0,"domain":["a","b","c"]}"#).unwrap();
/// let oracle = FrequencyOracle::new(&config).unwrap();
/// let mut rng = SimulationRng::from_seed(7); // simulation only; clients use SecureRng
/// let mut aggregator = FrequencyAggregator::new(oracle.clone());
/// for i in 0..3000 {
///     let report = oracle.randomize(["a", "b", "c"][i % 3], &mut rng).unwrap();
///     aggregator.add(&report).unwrap();
/// }
/// let estimate = aggregator.estimate(localdp::PostProcessing::None).unwrap();
/// assert_eq!(estimate.n, 3000);
/// ```
#[derive(Clone)]
pub struct FrequencyOracle {
    protocol: Protocol,
    epsilon: f64,
    domain: Domain,
    fingerprint: String,
    /// dBitFlip's `d` (1 for the others).
    sampled: usize,
    mechanism: Arc<dyn Mechanism>,
}

/// The config (the mechanism is kept out: debug output of trait objects
/// would add float formatting to the wasm build).
impl std::fmt::Debug for FrequencyOracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrequencyOracle")
            .field("protocol", &self.protocol)
            .field("d", &self.domain.len())
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl PartialEq for FrequencyOracle {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol
            && self.epsilon.to_bits() == other.epsilon.to_bits()
            && self.domain == other.domain
            && self.sampled == other.sampled
    }
}

impl FrequencyOracle {
    /// Validates the config and resolves `auto`.
    pub fn new(config: &FrequencyConfig) -> Result<Self> {
        let epsilon = validate_epsilon(config.epsilon)?;
        if epsilon > MAX_EPSILON {
            return Err(Error::InvalidConfig(format!(
                "epsilon must be at most {}, got {}",
                number_text(MAX_EPSILON),
                number_text(epsilon)
            )));
        }
        let domain = Domain::new(&config.domain)?;
        let sampled = match (config.protocol, config.d) {
            (ProtocolChoice::DBitFlip, d) => {
                let d = d.unwrap_or(1);
                if d == 0 || d > domain.len() as u64 {
                    return Err(Error::InvalidConfig(format!("d must be in 1..={} (the domain's size)", domain.len())));
                }
                d as usize
            }
            (_, None) => 1,
            (_, Some(_)) => return Err(Error::InvalidConfig("\"d\" applies to dbitflip only".into())),
        };
        let protocol = match config.protocol {
            ProtocolChoice::Grr => Protocol::Grr,
            ProtocolChoice::Sue => Protocol::Sue,
            ProtocolChoice::Oue => Protocol::Oue,
            ProtocolChoice::Blh => Protocol::Blh,
            ProtocolChoice::Olh => Protocol::Olh,
            ProtocolChoice::Hr => Protocol::Hr,
            ProtocolChoice::Ss => Protocol::Ss,
            ProtocolChoice::DBitFlip => Protocol::DBitFlip,
            ProtocolChoice::Auto => return Ok(Self::best(epsilon, &domain)),
        };
        Ok(Self::with_protocol(protocol, epsilon, domain, sampled))
    }

    /// Parses a JSON config and builds the oracle.
    pub fn from_json(text: &str) -> Result<Self> {
        let config: FrequencyConfig =
            serde_json::from_str(text).map_err(|e| Error::MalformedConfig(e.to_string()))?;
        Self::new(&config)
    }

    fn with_protocol(protocol: Protocol, epsilon: f64, domain: Domain, sampled: usize) -> Self {
        let d = domain.len();
        let mechanism: Arc<dyn Mechanism> = match protocol {
            Protocol::Grr => Arc::new(GeneralizedRandomizedResponse::new(epsilon, d)),
            Protocol::Sue => Arc::new(UnaryEncoding::symmetric(epsilon, d)),
            Protocol::Oue => Arc::new(UnaryEncoding::optimized(epsilon, d)),
            Protocol::Blh => Arc::new(LocalHashing::new(epsilon, 2, domain.keys())),
            Protocol::Olh => Arc::new(LocalHashing::new(epsilon, LocalHashing::optimal_g(epsilon), domain.keys())),
            Protocol::Hr => Arc::new(HadamardResponse::new(epsilon, d)),
            Protocol::Ss => Arc::new(SubsetSelection::new(epsilon, d)),
            Protocol::DBitFlip => Arc::new(DBitFlip::new(epsilon, d, sampled)),
        };
        FrequencyOracle { protocol, epsilon, fingerprint: domain.fingerprint(), domain, sampled, mechanism }
    }

    /// `auto`: the protocol whose total variance `Σ_v Var[f̂_v]` (which does
    /// not depend on the data, PROTOCOLS.md §7) is smallest; a smaller report
    /// breaks ties (relative difference below 1e-9).
    fn best(epsilon: f64, domain: &Domain) -> Self {
        let mut best: Option<(f64, u64, FrequencyOracle)> = None;
        for protocol in Protocol::ALL {
            let oracle = Self::with_protocol(protocol, epsilon, domain.clone(), 1);
            let variance = oracle.total_variance(1);
            let bits = oracle.mechanism.report_bits();
            let better = match &best {
                None => true,
                Some((v, b, _)) => {
                    variance < v * (1.0 - 1e-9) || (variance <= v * (1.0 + 1e-9) && bits < *b)
                }
            };
            if better {
                best = Some((variance, bits, oracle));
            }
        }
        best.expect("at least one protocol").2
    }

    /// The resolved protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// ε of one report.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The fingerprint of the domain or range that reports carry.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The domain.
    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    /// The realized `(p*, q*)`: the probabilities that a report supports its
    /// own value and any other value.
    pub fn support_probabilities(&self) -> (f64, f64) {
        self.mechanism.support_probabilities()
    }

    /// The report size in bits (payload only).
    pub fn report_bits(&self) -> u64 {
        self.mechanism.report_bits()
    }

    /// The exact variance of the unbiased frequency estimate of a value whose
    /// true frequency is `f`, from `n` reports.
    pub fn variance(&self, f: f64, n: u64) -> f64 {
        let (p, q) = self.support_probabilities();
        (q * (1.0 - q) / ((p - q) * (p - q)) + f * (1.0 - p - q) / (p - q)) / n as f64
    }

    /// `Σ_v Var[f̂_v]` for any distribution (it depends only on `Σ f_v = 1`).
    pub fn total_variance(&self, n: u64) -> f64 {
        let (p, q) = self.support_probabilities();
        let d = self.domain.len() as f64;
        (d * q * (1.0 - q) + (p - q) * (1.0 - p - q)) / ((p - q) * (p - q) * n as f64)
    }

    /// Randomizes a value given as text (a decimal integer for a sized
    /// domain). A value outside the domain is an error, never mapped.
    pub fn randomize(&self, value: &str, rng: &mut dyn RngCore) -> Result<Report> {
        Ok(self.randomize_index(self.domain.index_of(value)?, rng))
    }

    /// Randomizes the value at `index` (`< d`).
    pub fn randomize_index(&self, index: usize, rng: &mut dyn RngCore) -> Report {
        assert!(index < self.domain.len(), "index out of the domain");
        self.envelope(self.mechanism.randomize(index, rng))
    }

    fn envelope(&self, payload: Payload) -> Report {
        Report {
            version: REPORT_VERSION,
            protocol: self.protocol.name().to_string(),
            epsilon: self.epsilon,
            domain: self.fingerprint.clone(),
            payload,
        }
    }

    /// Checks that a report was made under this configuration and is well
    /// formed; the error carries the counted reason.
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, self.protocol.name(), self.epsilon, &self.fingerprint)?;
        self.mechanism.validate(&report.payload)
    }

    /// dBitFlip's mechanism, for clients that keep their buckets.
    pub fn dbitflip(&self) -> Option<DBitFlip> {
        (self.protocol == Protocol::DBitFlip).then(|| DBitFlip::new(self.epsilon, self.domain.len(), self.sampled))
    }

    /// The report around a payload drawn by this oracle's mechanism.
    pub fn report(&self, payload: Payload) -> Report {
        self.envelope(payload)
    }

    /// The values a valid report supports (counts toward), by the public
    /// decoding rule the aggregator applies.
    pub fn supported_values(&self, report: &Report) -> Vec<usize> {
        let mut counts = vec![0; self.mechanism.counts_len()];
        self.mechanism.accumulate(&report.payload, &mut counts);
        let support = self.mechanism.support_counts(&counts, 1);
        (0..self.domain.len()).filter(|&v| support[v] > 0.5).collect()
    }

    /// `P[report | value at index]` under the realized channel, for the
    /// exact channel tests.
    pub fn likelihood(&self, index: usize, report: &Report) -> Likelihood {
        self.mechanism.likelihood(index, &report.payload)
    }

    pub(crate) fn mechanism(&self) -> &dyn Mechanism {
        &*self.mechanism
    }
}

/// `⌈log2 n⌉` for `n ≥ 2`, in integers (so native and wasm agree).
fn ceil_log2(n: u64) -> u64 {
    u64::from(64 - (n - 1).leading_zeros())
}

/// Checks a bit-vector payload's length and padding.
fn validate_bits(payload: &Payload, d: usize) -> Result<&crate::report::BitVector> {
    match payload {
        Payload::Bits(bits) if bits.fits(d) => Ok(bits),
        Payload::Bits(_) => Err(Rejection::BadLength
            .error(format!("expected {d} bits as {} hex digits with clean padding", d.div_ceil(8) * 2))),
        _ => Err(Rejection::Malformed.error("expected bits")),
    }
}

/// Adds one to the count of every set bit.
fn count_bits(payload: &Payload, counts: &mut [u64]) {
    if let Payload::Bits(bits) = payload {
        for i in bits.ones() {
            counts[i] += 1;
        }
    }
}

/// Checks an index payload against its range.
fn validate_index(payload: &Payload, range: u64) -> Result<u64> {
    match payload {
        Payload::Index(v) if *v < range => Ok(*v),
        Payload::Index(_) => Err(Rejection::OutOfRange.error(format!("value must be below {range}"))),
        _ => Err(Rejection::Malformed.error("expected a single value")),
    }
}
