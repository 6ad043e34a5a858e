//! A configured frequency protocol ([`FrequencyOracle`]): the config, the
//! choice of protocol, the report envelope and what the device and the
//! aggregator read from it.

use crate::protocol::FrequencyProtocol;
#[cfg(feature = "aggregate")]
use crate::report::ReportFields;
use crate::domain::{Domain, DomainSpec};
use crate::error::{DomainKind, Error, Requirement, Result};
use crate::hash::fingerprint;
use crate::json::ConfigObject;
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, ValueKind};
use crate::names::{ProtocolFamily, Selection};
use crate::privacy::validate_epsilon;
use crate::settings::ClientSettings;
use crate::{protocol::Protocol, report::{memo_report, Payload, Report}};
use super::channel::{ChannelOutputs, Likelihood, Mechanism};
use super::longitudinal::Longitudinal;
use super::hadamard_rr;
use crate::frequency::{dbitflip::DBitFlip, grr::GeneralizedRandomizedResponse, hadamard::HadamardResponse, local_hashing::LocalHashing, subset::SubsetSelection, unary::UnaryEncoding};
use crate::rng::{CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::sync::Arc;


/// The largest ε accepted. Beyond it the randomization is negligible (and
/// `e^ε` approaches the limits of the integer-threshold coins).
pub const MAX_EPSILON: f64 = 30.0;

/// The smallest ε accepted, as for numeric metrics: below it a report
/// carries almost nothing.
pub const MIN_EPSILON: f64 = 0.01;

/// The parameters every frequency protocol is built from: ε and the domain
/// validated, dBitFlip's `"d"`, which only the protocols that sample
/// buckets read ([`Mechanism::samples_buckets`]; the oracle checks it), and
/// the per-report ε of an instantaneous step, if any (then `epsilon` is the
/// permanent response's, the long-run ε).
pub(crate) struct Params<'a> {
    pub epsilon: f64,
    pub domain: &'a Domain,
    d: Option<u64>,
    instantaneous: Option<f64>,
}

impl Params<'_> {
    /// Buckets sampled per report: `"d"` within `1..=domain size`, default
    /// 1 (an out-of-range `d` is refused by the oracle).
    pub fn sampled(&self) -> usize {
        self.d.map_or(1, |d| d.clamp(1, self.domain.len() as u64) as usize)
    }

    /// Refuses a `"d"` the chosen protocol does not take, or out of range.
    fn check(&self, oracle: &FrequencyOracle) -> Result<()> {
        match self.d {
            Some(_) if !oracle.mechanism.samples_buckets() => {
                Err(Error::invalid("d", Requirement::NotFor { protocol: Protocol::Frequency(oracle.protocol) }))
            }
            Some(d) if d == 0 || d > self.domain.len() as u64 => {
                Err(Error::invalid("d", Requirement::IntegerRange { min: 1, max: self.domain.len() as u64, found: d }))
            }
            _ => Ok(()),
        }
    }
}

impl FrequencyProtocol {
    /// The protocol's mechanism: one arm per protocol (its name is in
    /// `protocol.rs`; a new protocol is a module, its name there and an arm
    /// here, which the compiler asks for). `None` only in the module of GRR
    /// alone, for the others.
    fn mechanism(self, p: &Params<'_>) -> Option<Arc<dyn Mechanism>> {
        Some(match self {
            FrequencyProtocol::Grr => Arc::new(GeneralizedRandomizedResponse::new(p.epsilon, p.domain.len() as u64)),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Sue => Arc::new(UnaryEncoding::symmetric(p.epsilon, p.domain.len())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Oue => Arc::new(UnaryEncoding::optimized(p.epsilon, p.domain.len())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Blh => Arc::new(LocalHashing::new(p.epsilon, 2, p.domain.keys())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Olh => Arc::new(LocalHashing::new(p.epsilon, LocalHashing::optimal_g(p.epsilon), p.domain.keys())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Hr => Arc::new(HadamardResponse::new(p.epsilon, p.domain.len())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Hrr => Arc::new(hadamard_rr::HadamardRandomizedResponse::new(p.epsilon, p.domain.len())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::Ss => Arc::new(SubsetSelection::new(p.epsilon, p.domain.len())),
            #[cfg(feature = "oracles")]
            FrequencyProtocol::DBitFlip => Arc::new(DBitFlip::new(p.epsilon, p.domain.len(), p.sampled())),
            // The module of GRR alone (`grr` without `oracles`) has no
            // other oracle; its family claims no other protocol.
            #[cfg(not(feature = "oracles"))]
            _ => return None,
        })
    }
}

/// A frequency metric's configuration: `{"protocol": "olh", "epsilon": 1.0,
/// "domain": 1024}` or with `"domain": ["a", "b", …]`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FrequencyConfig {
    /// The protocol, or `auto`.
    pub protocol: Selection<FrequencyProtocol>,
    /// The privacy parameter of one report.
    pub epsilon: f64,
    /// The values.
    pub domain: DomainSpec,
    /// dBitFlip only: buckets sampled per report (default 1).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub d: Option<u64>,
    /// The ε of one report, `0.01 < ε_1 < epsilon`: each report randomizes the
    /// value's memoized permanent response (at `epsilon`, the long-run ε)
    /// afresh, so that equal or unequal reports no longer say without noise
    /// whether the value changed (grr, sue, oue, blh, olh; needs
    /// `"memoize": true`). See `longitudinal.rs`.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub instantaneous_epsilon: Option<f64>,
}

impl FrequencyConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "domain", "d", "instantaneous_epsilon"])?;
        Ok(FrequencyConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            domain: config.read("domain")?,
            d: config.read_optional("d")?,
            instantaneous_epsilon: config.read_optional("instantaneous_epsilon")?,
        })
    }
}

crate::config::read_by_hand!(FrequencyConfig, FrequencyConfig::read);

/// A configured frequency protocol: the client's randomizer and the
/// aggregator's parameters in one value.
///
/// ```
/// use localdp::{Aggregate, FrequencyConfig, FrequencyOracle, FrequencyAggregator, Randomizer, SimulationRng};
/// let config: FrequencyConfig =
///     serde_json::from_str(r#"{"protocol":"auto","epsilon":1.0,"domain":["a","b","c"]}"#).unwrap();
/// let oracle = FrequencyOracle::new(&config).unwrap();
/// let mut rng = SimulationRng::seed_from_u64(7); // simulation only; clients use SecureRng
/// let mut aggregator = FrequencyAggregator::new(oracle.clone());
/// for i in 0..3000 {
///     let report = oracle.randomize(["a", "b", "c"][i % 3], &mut rng).unwrap();
///     aggregator.add(&report).unwrap();
/// }
/// let estimate = aggregator.estimate().unwrap();
/// assert_eq!(estimate.n, 3000);
/// ```
///
/// Its parameters (the getters), and the exact variances the aggregator's
/// error bars come from:
///
/// ```
/// use localdp::{FrequencyOracle, FrequencyProtocol};
/// let oracle = FrequencyOracle::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b","c"]}"#)?;
/// assert_eq!((oracle.protocol(), oracle.epsilon(), oracle.long_run_epsilon()), (FrequencyProtocol::Grr, 1.0, 1.0));
/// assert_eq!(oracle.instantaneous_epsilon(), None);
/// assert_eq!((oracle.domain().len(), oracle.fingerprint()), (3, oracle.domain().fingerprint().as_str()));
/// assert_eq!(oracle.report_bits(), 2); // one of 3 values
/// let (p, q) = oracle.support_probabilities();
/// let e = 1f64.exp();
/// assert!((p - e / (e + 2.0)).abs() < 1e-9 && (q - 1.0 / (e + 2.0)).abs() < 1e-9);
/// // Σ_v Var[f̂_v] does not depend on the data; it is the sum of the values' variances.
/// let sum: f64 = [0.5, 0.3, 0.2].iter().map(|&f| oracle.variance(f, 1_000)).sum();
/// assert!((oracle.total_variance(1_000) - sum).abs() < 1e-12);
/// let memo = FrequencyOracle::from_json(r#"{"protocol":"oue","epsilon":2,"instantaneous_epsilon":1,"domain":8}"#)?;
/// assert_eq!((memo.epsilon(), memo.long_run_epsilon(), memo.instantaneous_epsilon()), (1.0, 2.0, Some(1.0)));
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Clone)]
pub struct FrequencyOracle {
    protocol: FrequencyProtocol,
    /// ε of one report (the envelope's).
    epsilon: f64,
    /// ε of the permanent response: `epsilon`, or above it with an
    /// instantaneous step.
    long_run: f64,
    domain: Arc<Domain>,
    fingerprint: String,
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
            && self.fingerprint == other.fingerprint
    }
}

impl FrequencyOracle {
    /// Validates the config and resolves `auto`.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn new(config: &FrequencyConfig) -> Result<Self> {
        let epsilon = validate_epsilon(config.epsilon)?;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            return Err(Error::invalid(
                "epsilon",
                Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric: Some("frequency") },
            ));
        }
        if let Some(found) = config.instantaneous_epsilon {
            if !(found > MIN_EPSILON && found < epsilon) {
                let requirement = Requirement::ExclusiveRange { min: MIN_EPSILON, max: epsilon, found };
                return Err(Error::invalid("instantaneous_epsilon", requirement));
            }
        }
        let domain = Arc::new(Domain::new(&config.domain)?);
        let params = Params { epsilon, domain: &domain, d: config.d, instantaneous: config.instantaneous_epsilon };
        let oracle = match config.protocol {
            Selection::Fixed(protocol) => Self::with_protocol(protocol, &params, &domain).ok_or_else(|| {
                Error::invalid("instantaneous_epsilon", Requirement::NotFor { protocol: Protocol::Frequency(protocol) })
            })?,
            Selection::Auto => Self::best(&params, &domain),
        };
        params.check(&oracle)?;
        Ok(oracle)
    }

    /// [`FrequencyOracle::new`] for a client of these settings: an
    /// instantaneous step needs memos (`"memoize": true`).
    #[doc(hidden)]
    pub fn for_client(config: &FrequencyConfig, settings: &ClientSettings) -> Result<Self> {
        if config.instantaneous_epsilon.is_some() && !settings.memoize {
            // Without memos there is no permanent response to randomize again.
            let requirement = Requirement::OnlyFor { protocol: "memoized metrics (\"memoize\": true)" };
            return Err(Error::invalid("instantaneous_epsilon", requirement));
        }
        FrequencyOracle::new(config)
    }

    /// Parses a JSON config and builds the oracle.
    ///
    /// ```
    /// use localdp::{FrequencyOracle, FrequencyProtocol};
    /// let oracle = FrequencyOracle::from_json(r#"{"protocol":"auto","epsilon":1,"domain":4}"#)?;
    /// assert_eq!(oracle.protocol(), FrequencyProtocol::Grr); // the least variance for 4 values at ε = 1
    /// let (p, q) = oracle.support_probabilities(); // the realized channel's p* and q*
    /// assert!(p > q && ((p / q).ln() - 1.0).abs() < 1e-9);
    /// // The standard error of one value's frequency at 10,000 reports:
    /// assert!((oracle.variance(0.25, 10_000).sqrt() - 0.0137).abs() < 1e-3);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&FrequencyConfig::read(&parse_config(text)?)?)
    }

    /// The oracle of `protocol`; `None` if it has no instantaneous step and
    /// one is asked for.
    fn with_protocol(protocol: FrequencyProtocol, params: &Params<'_>, domain: &Arc<Domain>) -> Option<Self> {
        let (mechanism, epsilon): (Arc<dyn Mechanism>, f64) = match params.instantaneous {
            None => (protocol.mechanism(params)?, params.epsilon),
            Some(epsilon_1) => {
                (Arc::new(Longitudinal::new(protocol, params.epsilon, epsilon_1, domain)?), epsilon_1)
            }
        };
        let fingerprint = match mechanism.identity() {
            None => domain.fingerprint(),
            Some(extra) => fingerprint(text!(domain.fingerprint(), ":", extra).as_bytes()),
        };
        Some(FrequencyOracle { protocol, epsilon, long_run: params.epsilon, fingerprint, domain: domain.clone(), mechanism })
    }

    /// `auto`: the protocol whose total variance `Σ_v Var[f̂_v]` (which does
    /// not depend on the data, PROTOCOLS.md §7) is smallest; a smaller report
    /// breaks ties (relative difference below 1e-9). Protocols that trade
    /// variance for something else (dBitFlip) are not candidates.
    fn best(params: &Params<'_>, domain: &Arc<Domain>) -> Self {
        let mut best: Option<(f64, u64, FrequencyOracle)> = None;
        for &protocol in FrequencyProtocol::ALL {
            let Some(oracle) = Self::with_protocol(protocol, params, domain) else { continue };
            if !oracle.mechanism.chosen_by_auto() {
                continue;
            }
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
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn protocol(&self) -> FrequencyProtocol {
        self.protocol
    }

    /// ε of one report: the config's `epsilon`, or its
    /// `instantaneous_epsilon` (what the envelope carries).
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The most that all reports of one value reveal about it: the config's
    /// `epsilon` (the permanent response's, with memoization).
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn long_run_epsilon(&self) -> f64 {
        self.long_run
    }

    /// The per-report ε of the instantaneous step, if the config has one.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn instantaneous_epsilon(&self) -> Option<f64> {
        (self.epsilon < self.long_run).then_some(self.epsilon)
    }

    /// The fingerprint of the domain (and of any parameter that changes what
    /// a report means) that reports carry.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The domain.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    /// The realized `(p*, q*)`: the probabilities that a report supports its
    /// own value and any other value.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn support_probabilities(&self) -> (f64, f64) {
        self.mechanism.support_probabilities()
    }

    /// The report size in bits (payload only).
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn report_bits(&self) -> u64 {
        self.mechanism.report_bits()
    }

    /// The exact variance of the unbiased frequency estimate of a value whose
    /// true frequency is `f`, from `n` reports.
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn variance(&self, f: f64, n: u64) -> f64 {
        let (p, q) = self.support_probabilities();
        (q * (1.0 - q) / ((p - q) * (p - q)) + f * (1.0 - p - q) / (p - q)) / n as f64
    }

    /// `Σ_v Var[f̂_v]` for any distribution (it depends only on `Σ f_v = 1`).
    ///
    /// See the example on [`FrequencyOracle`].
    pub fn total_variance(&self, n: u64) -> f64 {
        let (p, q) = self.support_probabilities();
        let d = self.domain.len() as f64;
        (d * q * (1.0 - q) + (p - q) * (1.0 - p - q)) / ((p - q) * (p - q) * n as f64)
    }

    /// Randomizes the value at `index`; an index outside the domain is an
    /// error, never mapped.
    ///
    /// With [`FrequencyOracle::validate`] and `supported_values` (the
    /// `aggregate` feature's), the aggregator's view of it:
    ///
    /// ```
    /// use localdp::{FrequencyOracle, SimulationRng};
    /// let oracle = FrequencyOracle::from_json(r#"{"protocol":"oue","epsilon":1,"domain":6}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(8); // simulation only
    /// let report = oracle.randomize_index(4, &mut rng)?;
    /// oracle.validate(&report)?;
    /// assert!(oracle.supported_values(&report).iter().all(|&v| v < 6));
    /// assert!(oracle.randomize_index(6, &mut rng).is_err()); // outside the domain
    /// let other = FrequencyOracle::from_json(r#"{"protocol":"oue","epsilon":1,"domain":7}"#)?;
    /// assert!(other.validate(&report).is_err() && other.supported_values(&report).is_empty());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn randomize_index<R: CryptoRng + RngCore>(&self, index: usize, rng: &mut R) -> Result<Report> {
        self.check_index(index)?;
        Ok(self.envelope(self.mechanism.randomize(index, rng)))
    }

    fn check_index(&self, index: usize) -> Result<()> {
        if index < self.domain.len() {
            Ok(())
        } else {
            Err(Error::ValueNotInDomain { domain: DomainKind::Indices(self.domain.len()) })
        }
    }

    fn envelope(&self, payload: Payload) -> Report {
        crate::metric::kind::envelope(self, payload)
    }

    /// Checks that a report was made under this configuration and is well
    /// formed; the error carries the counted reason.
    ///
    /// See the example on [`FrequencyOracle::randomize_index`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::Frequency(self.protocol), self.epsilon, &self.fingerprint)?;
        self.mechanism.validate(&report.payload)
    }

    /// The values a report supports (counts toward), by the public decoding
    /// rule the aggregator applies; a report that does not validate supports
    /// nothing.
    ///
    /// See the example on [`FrequencyOracle::randomize_index`].
    #[cfg(feature = "aggregate")]
    pub fn supported_values(&self, report: &Report) -> Vec<usize> {
        if self.validate(report).is_err() {
            return Vec::new();
        }
        let mut counts = vec![0; self.mechanism.counts_len()];
        self.mechanism.accumulate(&report.payload, &mut counts);
        let support = self.mechanism.support_counts(&counts, 1);
        (0..self.domain.len()).filter(|&v| support[v] > 0.5).collect()
    }

    /// `P[report | value at index]` under the realized channel, for the
    /// exact channel tests (0 for an index outside the domain).
    ///
    /// With [`FrequencyOracle::channel_outputs`], an exact check of the
    /// realized channel:
    ///
    /// ```
    /// use localdp::{FrequencyOracle, SimulationRng};
    /// let oracle = FrequencyOracle::from_json(r#"{"protocol":"grr","epsilon":1,"domain":3}"#)?;
    /// let outputs = oracle.channel_outputs(&mut SimulationRng::seed_from_u64(1)).into_vec(); // simulation only
    /// assert_eq!(outputs.len(), 3); // GRR's every output
    /// for value in 0..3 {
    ///     let total: f64 = outputs.iter().map(|r| oracle.likelihood(value, r).probability()).sum();
    ///     assert!((total - 1.0).abs() < 1e-12);
    /// }
    /// // No two values' likelihoods of any output differ by more than e^ε.
    /// let worst = outputs.iter().map(|r| oracle.likelihood(0, r).log_ratio(oracle.likelihood(1, r)).abs());
    /// assert!(worst.fold(0.0, f64::max) <= 1.0 + 1e-9);
    /// assert!(oracle.likelihood(3, &outputs[0]).is_zero());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn likelihood(&self, index: usize, report: &Report) -> Likelihood {
        if index >= self.domain.len() {
            return Likelihood::new(0.0);
        }
        self.mechanism.likelihood(index, &report.payload)
    }

    /// The outputs to examine in an exact channel check (with
    /// [`Self::likelihood`]): all of them where that is feasible, otherwise
    /// outputs drawn from the mechanism on varied inputs with `rng`.
    ///
    /// See the example on [`FrequencyOracle::likelihood`].
    #[cfg(feature = "aggregate")]
    pub fn channel_outputs<R: RngCore>(&self, rng: &mut R) -> ChannelOutputs<Report> {
        match self.mechanism.channel_outputs(self.domain.len(), rng) {
            ChannelOutputs::Complete(v) => ChannelOutputs::Complete(v.into_iter().map(|p| self.envelope(p)).collect()),
            ChannelOutputs::Sampled(v) => ChannelOutputs::Sampled(v.into_iter().map(|p| self.envelope(p)).collect()),
        }
    }

    #[doc(hidden)]
    pub fn mechanism(&self) -> &dyn Mechanism {
        &*self.mechanism
    }
}

impl Randomizer for FrequencyOracle {
    /// A label, or a decimal integer for a sized domain.
    type Value = str;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &str, rng: &mut R) -> Result<Report> {
        self.randomize_index(self.domain.index_of(value)?, rng)
    }
}

/// Frequency configs: a `"protocol"` of this family (or `"auto"`) without a
/// `"range"`.
pub(crate) static FAMILY: Family = Family {
    #[cfg(feature = "oracles")]
    claims: |protocol, config| {
        !config.contains_key("range") && protocol.parse::<Selection<FrequencyProtocol>>().is_ok()
    },
    // The module of GRR alone: "grr" only (a page of any other frequency
    // protocol, or of "auto", loads the family's module).
    #[cfg(not(feature = "oracles"))]
    claims: |protocol, config| !config.contains_key("range") && protocol == "grr",
    build: |config, settings| {
        if !matches!(config.get("instantaneous_epsilon"), crate::json::Field::Missing | crate::json::Field::Number(..)) {
            return Err(Error::malformed_key("instantaneous_epsilon", "\"instantaneous_epsilon\" must be a number"));
        }
        Ok(Arc::new(FrequencyOracle::for_client(&FrequencyConfig::read(&config)?, settings)?))
    },
    #[cfg(feature = "oracles")]
    protocols: Selection::<FrequencyProtocol>::names,
    #[cfg(not(feature = "oracles"))]
    protocols: || "grr".into(),
    shape: "domain",
    label: "frequency (\"domain\")",
};

impl Kind for FrequencyOracle {
    fn protocol(&self) -> Protocol {
        Protocol::Frequency(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn long_run_epsilon(&self) -> f64 {
        self.long_run
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let index = self.domain.index_of(text)?;
        Ok(self.envelope(self.mechanism.randomize(index, rng)))
    }
    fn family(&self) -> &'static str {
        "frequency"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Index { size: self.domain.is_sized().then(|| self.domain.len()) }
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> ReportFields {
        self.mechanism.kernel().report_fields()
    }
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        [0, self.domain.len() - 1].map(|i| self.domain.value_text(i).unwrap_or_default())
    }
    /// The permanent response's (what the auditor samples).
    #[cfg(feature = "aggregate")]
    fn realized_epsilon(&self) -> f64 {
        self.mechanism.realized_epsilon(self.long_run)
    }
    #[cfg(feature = "aggregate")]
    /// With an instantaneous step, the permanent response (its claim is the
    /// long-run ε; the step is post-processing of it).
    fn audit_sample(&self, value: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let index = self.domain.index_of(value)?;
        Ok(self.envelope(match self.instantaneous_epsilon() {
            None => self.mechanism.randomize(index, rng),
            Some(_) => self.mechanism.randomize_memoized(index, &self.mechanism.memo_draws(rng), rng),
        }))
    }
    #[cfg(feature = "aggregate")]
    /// The level of the likelihood ratio between the two neighbours,
    /// `ln(P[report | first] / P[report | last])` under the claimed channel
    /// (to 1e-6): its top level is the event on which the two inputs differ
    /// by the whole ε, the likeliest such event (Neyman–Pearson), whatever
    /// the domain's size. By protocol: GRR "the output is the first", unary
    /// encodings "the first's bit set and the last's clear", local hashing
    /// "the reported bucket is the first's hash and not the last's", subset
    /// selection "the subset holds the first and not the last", Hadamard
    /// response "the column is the first's and not the last's", Hadamard
    /// randomized response "the coefficient's sign is the first's, and the
    /// last's differs", dBitFlip "the first's bucket sampled with bit 1 and
    /// the last's with bit 0" (with `d = 1` one of them: ε/2).
    fn events(&self, report: &Report) -> Vec<String> {
        if self.validate(report).is_err() {
            return Vec::new();
        }
        let ratio = self.likelihood(0, report).log_ratio(self.likelihood(self.domain.len() - 1, report));
        vec![crate::metric::kind::likelihood_level(ratio)]
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoized frequency reports: one permanent report per memo key (the
/// value, or for dBitFlip the pattern of its buckets, or with an
/// instantaneous step for local hashing the value's bucket), sent as it is or
/// through the instantaneous step.
impl Memo for FrequencyOracle {
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        self.mechanism.memo_draws(rng)
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        self.mechanism.memo_draws_valid(draws)
    }
    fn key(&self, value: &str, draws: &[u64]) -> Result<String> {
        Ok(self.mechanism.memo_key(self.domain.index_of(value)?, draws))
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        let index = self.domain.index_of(value)?;
        Ok(self.envelope(self.mechanism.randomize_memoized(index, draws, rng)).to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], rng: &mut dyn RngCore) -> Result<Report> {
        let stored = memo_report(permanent, Protocol::Frequency(self.protocol), self.epsilon, &self.fingerprint, |p| self.mechanism.validate(p).is_ok())?;
        Ok(self.envelope(self.mechanism.instantaneous(&stored.payload, rng)))
    }
    fn instantaneous_epsilon(&self) -> Option<f64> {
        FrequencyOracle::instantaneous_epsilon(self)
    }
    fn memo_epsilon(&self, reports: u64) -> Option<f64> {
        self.mechanism.memo_epsilon(reports)
    }
}

