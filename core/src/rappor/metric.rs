//! RAPPOR's device half: the config, the Bloom filter, the permanent and
//! instantaneous responses, and the report's validation.

use crate::protocol::OpenDomainProtocol;
use crate::error::{Error, Rejection, Requirement, Result};
use crate::hash::{bucket, fingerprint, key64};
use crate::json::ConfigObject;
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, ValueKind};
use crate::names::ProtocolFamily;
use crate::privacy::epsilon_rounded_up;
use crate::{protocol::Protocol, report::{BitVector, Payload, Report, REPORT_VERSION}};
use crate::rng::{uniform_below, Bernoulli, CryptoRng, RngCore};
use crate::text::{text, Hex};
use std::any::Any;
use std::sync::Arc;


/// A RAPPOR metric's configuration (defaults: the paper's `k = 128`,
/// `h = 2`, `m = 64`, `f = 0.5`, `p = 0.5`, `q = 0.75`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RapporConfig {
    /// `"rappor"`.
    pub protocol: OpenDomainProtocol,
    /// `k`, the Bloom filter's bits.
    pub bits: u64,
    /// `h`, hash functions per value.
    pub hashes: u64,
    /// `m`, cohorts.
    pub cohorts: u64,
    /// PRR: probability of replacing a bit by a fair coin.
    pub f: f64,
    /// IRR: probability of sending 1 for a PRR bit 0.
    pub p: f64,
    /// IRR: probability of sending 1 for a PRR bit 1.
    pub q: f64,
    /// The values to decode against (the aggregator's; clients ignore it).
    pub candidates: Vec<String>,
}

impl RapporConfig {
    /// Reads a config object, refusing keys it does not know; absent keys
    /// take the paper's values.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "bits", "hashes", "cohorts", "f", "p", "q", "candidates"])?;
        Ok(RapporConfig {
            protocol: config.read("protocol")?,
            bits: config.read_or("bits", 128)?,
            hashes: config.read_or("hashes", 2)?,
            cohorts: config.read_or("cohorts", 64)?,
            f: config.read_or("f", 0.5)?,
            p: config.read_or("p", 0.5)?,
            q: config.read_or("q", 0.75)?,
            candidates: config.read_or("candidates", Vec::new())?,
        })
    }
}

crate::config::read_by_hand!(RapporConfig, RapporConfig::read);

/// The largest long-run ε (`ε_∞`) a RAPPOR config may give.
const MAX_EPSILON_INFINITY: f64 = 60.0;

/// A configured RAPPOR metric.
///
/// Its parameters (the getters), and one install's reports step by step:
///
/// ```
/// use localdp::{Metric, RapporMetric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"rappor","bits":32,"hashes":2,"cohorts":4,"candidates":["x","y"]}"#)?;
/// let rappor: &RapporMetric = metric.mechanism().unwrap();
/// assert_eq!((rappor.bits(), rappor.cohorts(), rappor.candidates().len()), (32, 4, 2));
/// assert_eq!(rappor.parameters(), (0.5, 0.5, 0.75)); // the paper's f, p, q
/// assert!((rappor.epsilon_infinity() - 4.0 * 3f64.ln()).abs() < 1e-9); // 2h·ln((1 − f/2)/(f/2))
/// assert!(rappor.epsilon_one() < rappor.epsilon_infinity());
/// let (q_star, p_star) = rappor.report_bit_probabilities();
/// assert!((q_star - 0.6875).abs() < 1e-12 && (p_star - 0.5625).abs() < 1e-12);
/// assert!(rappor.frequency_variance(0.1) > 0.0 && !rappor.fingerprint().is_empty());
/// // An install draws a cohort once, memoizes the permanent response of each value,
/// // and sends a fresh instantaneous response of it every time.
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let cohort = rappor.draw_cohort(&mut rng);
/// let bloom = rappor.bloom(cohort, "x");
/// assert!((1..=2).contains(&bloom.count_ones()));
/// let permanent = rappor.permanent(&bloom, &mut rng);
/// let report = rappor.instantaneous(cohort, &permanent, &mut rng);
/// rappor.validate(&report)?;
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RapporMetric {
    bits: usize,
    hashes: u64,
    cohorts: u64,
    replace: Bernoulli,
    irr_zero: Bernoulli,
    irr_one: Bernoulli,
    candidates: Vec<String>,
    fingerprint: String,
}

impl PartialEq for RapporMetric {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint && self.candidates == other.candidates
    }
}

impl RapporMetric {
    /// Validates the parameters.
    ///
    /// ```
    /// use localdp::{OpenDomainProtocol, RapporConfig, RapporMetric};
    /// let config = RapporConfig {
    ///     protocol: OpenDomainProtocol::Rappor,
    ///     bits: 64, hashes: 2, cohorts: 8, f: 0.25, p: 0.5, q: 0.75,
    ///     candidates: vec!["home".into(), "search".into()],
    /// };
    /// assert_eq!(RapporMetric::new(&config)?.bits(), 64);
    /// assert!(RapporMetric::new(&RapporConfig { p: 0.8, ..config }).is_err()); // p must be below q
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(config: &RapporConfig) -> Result<Self> {
        let integers = |parameter, min, max, found| {
            if (min..=max).contains(&found) {
                Ok(())
            } else {
                Err(Error::invalid(parameter, Requirement::IntegerRange { min, max, found }))
            }
        };
        integers("bits", 1, 4096, config.bits)?;
        integers("hashes", 1, config.bits.min(64), config.hashes)?;
        integers("cohorts", 1, 1024, config.cohorts)?;
        if !(config.f > 0.0 && config.f < 1.0) {
            return Err(Error::invalid("f", Requirement::ExclusiveRange { min: 0.0, max: 1.0, found: config.f }));
        }
        if !(config.p >= 0.0 && config.p < config.q && config.q <= 1.0) {
            let requirement = Requirement::ProbabilityBelow { other: "q", found: config.p, other_found: config.q };
            return Err(Error::invalid("p", requirement));
        }
        if let Some(repeated) = crate::domain::first_repeat(&config.candidates) {
            return Err(Error::invalid("candidates", Requirement::Distinct { repeated }));
        }
        let coin = |x: f64| Bernoulli::rounded_up(x).expect("checked above");
        let mut metric = RapporMetric {
            bits: config.bits as usize,
            hashes: config.hashes,
            cohorts: config.cohorts,
            replace: coin(config.f),
            irr_zero: coin(config.p),
            irr_one: coin(config.q),
            candidates: config.candidates.clone(),
            fingerprint: String::new(),
        };
        let (f, p, q) = metric.parameters();
        let (bits, hashes, cohorts) = (config.bits, config.hashes, config.cohorts);
        let canonical = text!("rappor:", bits, ":", hashes, ":", cohorts, ":", Hex(f.to_bits()), ":", Hex(p.to_bits()), ":", Hex(q.to_bits()));
        metric.fingerprint = fingerprint(canonical.as_bytes());
        if metric.epsilon_infinity().is_nan() || metric.epsilon_infinity() > MAX_EPSILON_INFINITY {
            let requirement = Requirement::LongRunEpsilon { max: MAX_EPSILON_INFINITY, found: metric.epsilon_infinity() };
            return Err(Error::invalid("f", requirement));
        }
        Ok(metric)
    }

    /// The realized `(f, p, q)`.
    ///
    /// See the example on [`RapporMetric`].
    pub fn parameters(&self) -> (f64, f64, f64) {
        (self.replace.probability(), self.irr_zero.probability(), self.irr_one.probability())
    }

    /// `ε_∞ = 2h ln((1−f/2)/(f/2))`, the long-run guarantee of the PRR,
    /// rounded up ([`crate::privacy::epsilon_rounded_up`]).
    ///
    /// See the example on [`RapporMetric`].
    pub fn epsilon_infinity(&self) -> f64 {
        let (f, _, _) = self.parameters();
        epsilon_rounded_up(2.0 * self.hashes as f64 * crate::number::ln((1.0 - f / 2.0) / (f / 2.0)))
    }

    /// `ε_1`, the guarantee of one report (PRR then IRR), rounded up.
    ///
    /// See the example on [`RapporMetric`].
    pub fn epsilon_one(&self) -> f64 {
        epsilon_rounded_up(self.report_epsilon())
    }

    /// `ε_1` as computed, unrounded: the number reports carry in their
    /// envelope. It identifies the configuration (compared bit for bit, and
    /// part of the metric's id), so it keeps the bits earlier releases wrote;
    /// the guarantee claimed is [`Self::epsilon_one`], at most a relative
    /// `2^-42` above it.
    pub fn report_epsilon(&self) -> f64 {
        let (one, zero) = self.report_bit_probabilities();
        self.hashes as f64 * crate::number::ln(one * (1.0 - zero) / (zero * (1.0 - one)))
    }

    /// `(q*, p*)`: a report bit is 1 with `q*` where the Bloom bit is set and
    /// `p*` where it is not.
    ///
    /// See the example on [`RapporMetric`].
    pub fn report_bit_probabilities(&self) -> (f64, f64) {
        let (f, p, q) = self.parameters();
        (f * (p + q) / 2.0 + (1.0 - f) * q, f * (p + q) / 2.0 + (1.0 - f) * p)
    }

    /// The fingerprint reports carry.
    ///
    /// See the example on [`RapporMetric`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// `n·Var` of a candidate's frequency estimate when it is held by a
    /// share `share` of the devices, no other value sets its bits, and it is
    /// decoded alone: each of its `h` bits per cohort is an unbiased count of
    /// its holders with variance `N_j[share·q*(1−q*) + (1−share)·p*(1−p*)]/δ²`
    /// (`δ = (1−f)(q−p)`), and least squares averages the `h·m` of them.
    ///
    /// See the example on [`RapporMetric`].
    pub fn frequency_variance(&self, share: f64) -> f64 {
        let (f, p, q) = self.parameters();
        let (one, zero) = self.report_bit_probabilities();
        let delta = (1.0 - f) * (q - p);
        (share * one * (1.0 - one) + (1.0 - share) * zero * (1.0 - zero)) / (self.hashes as f64 * delta * delta)
    }

    /// `k`, the Bloom filter's size.
    ///
    /// See the example on [`RapporMetric`].
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// `h`, the hash functions per value.
    pub fn hashes(&self) -> u64 {
        self.hashes
    }

    /// `m`, the number of cohorts.
    ///
    /// See the example on [`RapporMetric`].
    pub fn cohorts(&self) -> u64 {
        self.cohorts
    }

    /// The candidates decoded against.
    ///
    /// See the example on [`RapporMetric`].
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// The Bloom filter of `value` in `cohort`.
    ///
    /// See the example on [`RapporMetric`].
    pub fn bloom(&self, cohort: u32, value: &str) -> BitVector {
        let key = key64(value.as_bytes());
        let mut bloom = BitVector::zeros(self.bits);
        for i in 0..self.hashes as u32 {
            let seed = cohort.wrapping_mul(64).wrapping_add(i);
            bloom.set(bucket(seed, key, self.bits as u64) as usize);
        }
        bloom
    }

    /// A cohort for a new install.
    ///
    /// See the example on [`RapporMetric`].
    pub fn draw_cohort(&self, rng: &mut dyn RngCore) -> u32 {
        uniform_below(rng, self.cohorts) as u32
    }

    /// The permanent randomized response of a Bloom filter.
    ///
    /// See the example on [`RapporMetric`].
    pub fn permanent(&self, bloom: &BitVector, rng: &mut dyn RngCore) -> BitVector {
        let mut out = BitVector::zeros(self.bits);
        for i in 0..self.bits {
            let bit = if self.replace.sample(rng) { rng.next_u64() & 1 == 1 } else { bloom.get(i) };
            if bit {
                out.set(i);
            }
        }
        out
    }

    /// A report: the instantaneous randomized response of a PRR.
    ///
    /// See the example on [`RapporMetric`].
    pub fn instantaneous(&self, cohort: u32, permanent: &BitVector, rng: &mut dyn RngCore) -> Report {
        let mut out = BitVector::zeros(self.bits);
        for i in 0..self.bits {
            let coin = if permanent.get(i) { &self.irr_one } else { &self.irr_zero };
            if coin.sample(rng) {
                out.set(i);
            }
        }
        self.report(Payload::Cohort { cohort, bits: out })
    }

    /// A report of this configuration carrying `payload`.
    fn report(&self, payload: Payload) -> Report {
        Report {
            version: REPORT_VERSION,
            protocol: Protocol::OpenDomain(OpenDomainProtocol::Rappor),
            epsilon: self.report_epsilon(),
            domain: self.fingerprint.clone(),
            payload,
        }
    }

    /// A one-time report (fresh cohort, PRR and IRR), for simulation and for
    /// clients without memoization state.
    fn randomize_once(&self, value: &str, rng: &mut dyn RngCore) -> Report {
        let cohort = self.draw_cohort(rng);
        let permanent = self.permanent(&self.bloom(cohort, value), rng);
        self.instantaneous(cohort, &permanent, rng)
    }

    /// Checks a report against this configuration.
    ///
    /// See the example on [`RapporMetric`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::OpenDomain(OpenDomainProtocol::Rappor), self.report_epsilon(), &self.fingerprint)?;
        match &report.payload {
            Payload::Cohort { cohort, bits } => {
                if u64::from(*cohort) >= self.cohorts {
                    return Err(Rejection::OutOfRange.error(text!("cohort must be below ", self.cohorts)));
                }
                if !bits.fits(self.bits) {
                    return Err(Rejection::BadLength.error(text!("expected ", self.bits, " bits")));
                }
                Ok(())
            }
            _ => Err(Rejection::Malformed.error("expected cohort and bits")),
        }
    }
}

/// RAPPOR configs: `"protocol": "rappor"`.
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, _| protocol.parse::<OpenDomainProtocol>().is_ok(),
    build: |config, _| {
        let config = RapporConfig::read(&config)?;
        Ok(Arc::new(RapporMetric::new(&config)?))
    },
    protocols: OpenDomainProtocol::names,
    shape: "cohorts",
    label: "RAPPOR",
};

impl Kind for RapporMetric {
    fn protocol(&self) -> Protocol {
        Protocol::OpenDomain(OpenDomainProtocol::Rappor)
    }
    /// The envelope's `ε_1` (the configuration's identity).
    fn epsilon(&self) -> f64 {
        self.report_epsilon()
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn long_run_epsilon(&self) -> f64 {
        self.epsilon_infinity()
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        Ok(self.randomize_once(text, rng))
    }
    fn family(&self) -> &'static str {
        "rappor"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Text
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        crate::report::ReportFields::cohort_bits(self.bits)
    }
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        candidate_neighbours(self.candidates())
    }
    #[cfg(feature = "aggregate")]
    /// How many of the bits the two neighbours' Bloom filters (in the
    /// report's cohort) disagree on are as in the first's: the level of the
    /// permanent response's likelihood ratio, `((1−f/2)/(f/2))^(2·agree −
    /// differ)`. Its top level, all of them, is where the inputs differ by
    /// the whole `ε_∞` (when the filters differ on `2h` bits).
    fn events(&self, report: &Report) -> Vec<String> {
        let Payload::Cohort { cohort, bits } = &report.payload else { return Vec::new() };
        if u64::from(*cohort) >= self.cohorts || !bits.fits(self.bits) {
            return Vec::new();
        }
        let inputs = self.neighbours();
        let (a, b) = (self.bloom(*cohort, &inputs[0]), self.bloom(*cohort, &inputs[1]));
        let differ: Vec<usize> = (0..self.bits).filter(|&i| a.get(i) != b.get(i)).collect();
        let agree = differ.iter().filter(|&&i| bits.get(i) == a.get(i)).count();
        vec![text!(agree, " of the ", differ.len(), " bits the neighbours' filters differ on as in the first's")]
    }
    #[cfg(feature = "aggregate")]
    /// The permanent response (its claim is `ε_∞`; the instantaneous step is
    /// post-processing of it).
    fn audit_sample(&self, value: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let cohort = self.draw_cohort(rng);
        let bits = self.permanent(&self.bloom(cohort, value), rng);
        Ok(self.report(Payload::Cohort { cohort, bits }))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// RAPPOR always memoizes: the memo holds the permanent response (PRR) of
/// each value, in this install's cohort; every report is a fresh
/// instantaneous response (IRR) of it.
impl Memo for RapporMetric {
    fn always(&self) -> bool {
        true
    }
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        vec![u64::from(self.draw_cohort(rng))]
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        matches!(draws, [cohort] if *cohort < self.cohorts)
    }
    fn key(&self, value: &str, _draws: &[u64]) -> Result<String> {
        Ok(value.to_string())
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        Ok(self.permanent(&self.bloom(cohort_of(draws), value), rng).as_bytes().to_vec())
    }
    fn report(&self, permanent: &[u8], draws: &[u64], rng: &mut dyn RngCore) -> Result<Report> {
        let permanent = BitVector::from_bytes(permanent.to_vec());
        if !permanent.fits(self.bits) {
            return Err(Error::CorruptMemo);
        }
        Ok(self.instantaneous(cohort_of(draws), &permanent, rng))
    }
}

/// The cohort among an install's draws (validated by `draws_valid`).
fn cohort_of(draws: &[u64]) -> u32 {
    draws.first().map_or(0, |&c| c as u32)
}

impl Randomizer for RapporMetric {
    /// Any string.
    type Value = str;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &str, rng: &mut R) -> Result<Report> {
        Ok(self.randomize_once(value, rng))
    }
}

/// The two values an audit of an open-domain metric compares: its first two
/// candidates, else `"a"` and `"b"`.
#[cfg(feature = "aggregate")]
pub fn candidate_neighbours(candidates: &[String]) -> [String; 2] {
    match candidates {
        [a, b, ..] => [a.clone(), b.clone()],
        _ => ["a".into(), "b".into()],
    }
}
