//! A configured key-value metric ([`KeyValueMetric`]): its config, PCKV's
//! padding-and-sampling and perturbation (the device's side), and the
//! channel's probabilities the aggregator reads.

use crate::domain::{Domain, DomainSpec};
use crate::error::{Error, ExpectedValue, Rejection, Requirement, Result};
use crate::hash::fingerprint;
use crate::json::{ConfigObject, Field};
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, ValueKind};
use crate::names::ProtocolFamily;
use crate::numeric::{MAX_EPSILON, MIN_EPSILON};
use crate::{number::{clamp, number_text}, privacy::{exp_epsilon_safe, validate_epsilon}};
use crate::protocol::KeyValueProtocol;
use crate::{protocol::Protocol, report::{memo_report, BitVector, Payload, Report}};
use crate::rng::{uniform_below, Bernoulli, CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::sync::Arc;

/// What a config names to let the library pick the mechanism by variance.
pub const CHOOSE: &str = "key_value";

/// The most keys a config may list (or count).
pub const MAX_KEYS: u64 = 1 << 16;

/// The largest padding length `ℓ`.
pub const MAX_PAD: u64 = 256;

impl KeyValueProtocol {
    /// The mechanism `"key_value"` resolves to: the one whose frequency
    /// estimate has the smaller variance for a key nobody holds (as
    /// frequency's `auto` chooses), with `d' = keys + pad` and the
    /// key's budget `e^{ε1} = (e^ε + 1)/2`: PCKV-GRR when
    /// `d' − 2 + e^{ε1} < 4e^{ε1}` (GRR's `(e^{ε1}+d'−2)/(e^{ε1}−1)²` against
    /// UE's `4e^{ε1}/(e^{ε1}−1)²`), PCKV-UE otherwise.
    ///
    /// ```
    /// use localdp::KeyValueProtocol;
    /// assert_eq!(KeyValueProtocol::best(2.0, 4, 1), KeyValueProtocol::PckvGrr);
    /// assert_eq!(KeyValueProtocol::best(2.0, 50, 2), KeyValueProtocol::PckvUe);
    /// ```
    pub fn best(epsilon: f64, keys: u64, pad: u64) -> Self {
        let e1 = (exp_epsilon_safe(epsilon) + 1.0) / 2.0;
        let d = (keys + pad) as f64;
        if e1 + d - 2.0 < 4.0 * e1 {
            KeyValueProtocol::PckvGrr
        } else {
            KeyValueProtocol::PckvUe
        }
    }
}

/// A key-value metric's configuration: `{"protocol": "key_value",
/// "epsilon": 2, "keys": ["search", "share", …] or a count, "range": [0,
/// 60], "pad": 2}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KeyValueConfig {
    /// `pckv_grr`, `pckv_ue` or `key_value`.
    pub protocol: String,
    /// ε of one report (of a whole map).
    pub epsilon: f64,
    /// The keys: labels, or a count `K` for the keys `"0"`…`"K−1"`.
    pub keys: DomainSpec,
    /// `[lo, hi]`: values are clipped to it.
    pub range: [f64; 2],
    /// The padding length `ℓ` (1 to [`MAX_PAD`]).
    pub pad: u64,
}

impl KeyValueConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "keys", "range", "pad"])?;
        Ok(KeyValueConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            keys: config.read("keys")?,
            range: config.read("range")?,
            pad: config.read("pad")?,
        })
    }
}

crate::config::read_by_hand!(KeyValueConfig, KeyValueConfig::read);

/// The realized probabilities of PCKV's perturbation of a sampled pair
/// `(k, s)`, `s = ±1` (the same three numbers describe PCKV-GRR and
/// PCKV-UE):
///
/// * `a`: the report supports `k` (GRR: reports key `k`; UE: symbol `k` is
///   non-zero);
/// * `b`: the report supports a key `j ≠ k`, each sign with `b/2`;
/// * `p`: given that it supports `k`, the sign it reports is `s`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PairChannel {
    /// `P[supports k | k sampled]`.
    pub a: f64,
    /// `P[supports j | k sampled]`, `j ≠ k`.
    pub b: f64,
    /// `P[sign kept | k supported]`.
    pub p: f64,
}

/// A configured key-value metric: PCKV (Gu, Li, Cheng, Xiong, Cao, USENIX
/// Security 2020). A user's whole map is one value, one report, charged ε
/// once (see the module docs).
///
/// ```
/// use localdp::{KeyValueMetric, KeyValueProtocol, SimulationRng};
/// let metric = KeyValueMetric::from_json(r#"{"protocol":"key_value","epsilon":2,"keys":["search","share","print"],"range":[0,60],"pad":2}"#)?;
/// assert_eq!((metric.protocol(), metric.epsilon(), metric.pad()), (KeyValueProtocol::PckvGrr, 2.0, 2));
/// assert_eq!((metric.keys().len(), metric.range(), metric.symbols()), (3, [0.0, 60.0], 5));
/// let channel = metric.channel();
/// assert!(channel.a > channel.b && channel.p > 0.5);
/// assert!(!metric.fingerprint().is_empty());
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let report = metric.randomize_map(r#"{"search": 12.5, "print": 60}"#, &mut rng)?;
/// metric.validate(&report)?;
/// assert!(metric.randomize_map(r#"{"scan": 1}"#, &mut rng).is_err()); // not a key: the error does not name it
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyValueMetric {
    pub(super) protocol: KeyValueProtocol,
    pub(super) epsilon: f64,
    pub(super) keys: Domain,
    pub(super) range: [f64; 2],
    pub(super) pad: u64,
    /// GRR: "report another key", `(d'−1)/(e^{ε1}+d'−1)` rounded up; UE:
    /// "symbol `j ≠ k` non-zero", `1/(e^{ε1}+1)` rounded up.
    key_coin: Bernoulli,
    /// "Flip the sign", `1/(e^ε+1)` rounded up.
    flip: Bernoulli,
    fingerprint: String,
}

impl KeyValueMetric {
    /// Validates the configuration.
    ///
    /// ```
    /// use localdp::{DomainSpec, Error, KeyValueConfig, KeyValueMetric};
    /// let config = KeyValueConfig { protocol: "pckv_ue".into(), epsilon: 1.0, keys: DomainSpec::Size(10), range: [0.0, 1.0], pad: 3 };
    /// assert_eq!(KeyValueMetric::new(&config)?.symbols(), 13);
    /// let Err(Error::InvalidConfig { parameter, .. }) = KeyValueMetric::new(&KeyValueConfig { pad: 0, ..config.clone() }) else { panic!() };
    /// assert_eq!(parameter, "pad");
    /// assert!(KeyValueMetric::new(&KeyValueConfig { keys: DomainSpec::Size(1), ..config.clone() }).is_err());
    /// assert!(KeyValueMetric::new(&KeyValueConfig { range: [1.0, 1.0], ..config }).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(config: &KeyValueConfig) -> Result<Self> {
        let protocol = match config.protocol.as_str() {
            CHOOSE => None,
            name => Some(name.parse::<KeyValueProtocol>().map_err(|e| Error::malformed_key("protocol", text!(e)))?),
        };
        let epsilon = validate_epsilon(config.epsilon)?;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            let metric = Some("key_value");
            return Err(Error::invalid("epsilon", Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric }));
        }
        let count = match &config.keys {
            DomainSpec::Size(k) => *k,
            DomainSpec::Labels(labels) => labels.len() as u64,
        };
        if !(2..=MAX_KEYS).contains(&count) {
            return Err(Error::invalid("keys", Requirement::IntegerRange { min: 2, max: MAX_KEYS, found: count }));
        }
        let keys = Domain::new(&config.keys).map_err(|e| match e {
            Error::InvalidConfig { requirement, .. } => Error::invalid("keys", requirement),
            e => e,
        })?;
        let [lo, hi] = config.range;
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::invalid("range", Requirement::FiniteBounds { attribute: None }));
        }
        if lo >= hi || !(hi - lo).is_finite() {
            return Err(Error::invalid("range", Requirement::NonEmptyRange { attribute: None, lo, hi }));
        }
        if !(1..=MAX_PAD).contains(&config.pad) {
            return Err(Error::invalid("pad", Requirement::IntegerRange { min: 1, max: MAX_PAD, found: config.pad }));
        }
        let pad = config.pad;
        let protocol = protocol.unwrap_or_else(|| KeyValueProtocol::best(epsilon, count, pad));
        // The budget split of PCKV's tight composition: the value's ε2 = ε,
        // the key's e^{ε1} = e^ε/(2p) with p the realized e^ε/(e^ε+1)
        // (so ε1 = ln((e^ε+1)/2)), making 2p·e^{ε1} = e^ε exactly.
        let e = exp_epsilon_safe(epsilon);
        let flip = Bernoulli::rounded_up(1.0 / (e + 1.0)).expect("a probability");
        let e1 = e / (2.0 * (1.0 - flip.probability()));
        let others = (count + pad - 1) as f64;
        let key_coin = match protocol {
            KeyValueProtocol::PckvGrr => Bernoulli::rounded_up(others / (e1 + others)),
            KeyValueProtocol::PckvUe => Bernoulli::rounded_up(1.0 / (e1 + 1.0)),
        }
        .expect("a probability");
        let mut canonical = text!("key_value:", protocol.name(), ":", pad, ":", keys.fingerprint()).into_bytes();
        canonical.extend_from_slice(&lo.to_bits().to_le_bytes());
        canonical.extend_from_slice(&hi.to_bits().to_le_bytes());
        let fingerprint = fingerprint(&canonical);
        Ok(KeyValueMetric { protocol, epsilon, keys, range: config.range, pad, key_coin, flip, fingerprint })
    }

    /// Parses and validates a JSON config.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&KeyValueConfig::read(&parse_config(text)?)?)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn protocol(&self) -> KeyValueProtocol {
        self.protocol
    }

    /// ε of one report.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The keys (labels, or `0..K`).
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn keys(&self) -> &Domain {
        &self.keys
    }

    /// `[lo, hi]`.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn range(&self) -> [f64; 2] {
        self.range
    }

    /// The padding length `ℓ`.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn pad(&self) -> u64 {
        self.pad
    }

    /// `d' = K + ℓ`: the keys and the dummy keys `K..K+ℓ` a report perturbs over.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn symbols(&self) -> u64 {
        self.keys.len() as u64 + self.pad
    }

    /// The fingerprint reports carry.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The realized perturbation probabilities.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn channel(&self) -> PairChannel {
        let p = 1.0 - self.flip.probability();
        match self.protocol {
            KeyValueProtocol::PckvGrr => {
                let change = self.key_coin.probability();
                PairChannel { a: 1.0 - change, b: change / (self.symbols() - 1) as f64, p }
            }
            KeyValueProtocol::PckvUe => PairChannel { a: 0.5, b: self.key_coin.probability(), p },
        }
    }

    /// The expected shares of reports that support a key with `+1` and
    /// with `−1`, when a share `frequency` of `n` users hold it with a mean
    /// `mean` in `[−1, 1]` (the range mapped to `[−1, 1]`) and every user
    /// holds at most `ℓ` keys: what PCKV's estimators invert.
    ///
    /// ```
    /// use localdp::KeyValueMetric;
    /// let metric = KeyValueMetric::from_json(r#"{"protocol":"pckv_ue","epsilon":1,"keys":8,"range":[0,1],"pad":2}"#)?;
    /// let [plus, minus] = metric.expected_shares(0.0, 0.0);
    /// assert_eq!(plus, metric.channel().b / 2.0); // nobody holds it: noise only
    /// assert!(metric.expected_shares(0.5, 1.0)[0] > metric.expected_shares(0.5, -1.0)[0]);
    /// # let _ = minus;
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn expected_shares(&self, frequency: f64, mean: f64) -> [f64; 2] {
        let PairChannel { a, b, p } = self.channel();
        let sampled = frequency / self.pad as f64;
        let (up, down) = ((1.0 + mean) / 2.0, (1.0 - mean) / 2.0);
        let noise = (1.0 - sampled) * b / 2.0;
        [sampled * a * (up * p + down * (1.0 - p)) + noise, sampled * a * (down * p + up * (1.0 - p)) + noise]
    }

    /// A map's pairs as key indices and values clipped to the range, in key
    /// order. Neither a key nor a value is ever part of an error.
    fn parse_map(&self, text: &str) -> Result<Vec<(u64, f64)>> {
        let object = crate::json::parse_object(text).ok_or(Error::InvalidValue { expected: ExpectedValue::Object })?;
        let [lo, hi] = self.range;
        let mut pairs = object
            .fields()
            .into_iter()
            .map(|(key, field)| {
                let index = self.keys.index_of(&key)? as u64;
                match field {
                    Field::Number(x, _) if x.is_finite() => Ok((index, clamp(x, lo, hi))),
                    _ => Err(Error::InvalidValue { expected: ExpectedValue::FiniteNumber }),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        pairs.sort_unstable_by_key(|&(k, _)| k);
        // Two spellings of one key would weigh its holder twice.
        if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::InvalidValue { expected: ExpectedValue::DistinctKeys });
        }
        Ok(pairs)
    }

    /// The coin that discretizes a clipped value to `+1`: `(1 + x)/2`, `x`
    /// the value mapped to `[−1, 1]`.
    fn plus_coin(&self, value: f64) -> Bernoulli {
        let [lo, hi] = self.range;
        Bernoulli::rounded_up(clamp((value - lo) / (hi - lo), 0.0, 1.0)).expect("a probability")
    }

    /// The exact distribution of the pair a report of `map` perturbs:
    /// `((key, +1?), probability)`, padding to `ℓ` with the dummy keys
    /// `K..K+ℓ` (value 0, so a fair sign) and sampling one of
    /// `max(|map|, ℓ)` uniformly. For the channel check.
    ///
    /// ```
    /// use localdp::KeyValueMetric;
    /// let metric = KeyValueMetric::from_json(r#"{"protocol":"pckv_grr","epsilon":1,"keys":["a","b"],"range":[0,1],"pad":2}"#)?;
    /// let pairs = metric.sampled_pairs(r#"{"b": 1}"#)?;
    /// assert!(pairs.contains(&((1, true), 0.5)) && pairs.contains(&((2, false), 0.125)));
    /// assert_eq!(pairs.iter().map(|(_, p)| p).sum::<f64>(), 1.0);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn sampled_pairs(&self, map: &str) -> Result<Vec<((u64, bool), f64)>> {
        Ok(self.pair_shares(&self.parse_map(map)?))
    }

    /// [`KeyValueMetric::sampled_pairs`] of a parsed map.
    fn pair_shares(&self, pairs: &[(u64, f64)]) -> Vec<((u64, bool), f64)> {
        let slots = (pairs.len() as u64).max(self.pad) as f64;
        let dummy = (self.pad as f64 - pairs.len() as f64).max(0.0) / slots / self.pad as f64 / 2.0;
        let real = pairs.iter().flat_map(|&(k, v)| {
            let plus = self.plus_coin(v).probability();
            [((k, true), plus / slots), ((k, false), (1.0 - plus) / slots)]
        });
        let dummies = (self.keys.len() as u64..self.symbols()).flat_map(|k| [((k, true), dummy), ((k, false), dummy)]);
        real.chain(dummies).filter(|(_, p)| *p > 0.0).collect()
    }

    /// Randomizes a user's whole map (`{"key": value, …}`, any number of
    /// the config's keys, none included) into one report.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn randomize_map(&self, map: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let pairs = self.parse_map(map)?;
        Ok(self.randomize_pairs(&pairs, rng))
    }

    fn randomize_pairs(&self, pairs: &[(u64, f64)], rng: &mut dyn RngCore) -> Report {
        let slot = uniform_below(rng, (pairs.len() as u64).max(self.pad));
        let (key, plus) = match pairs.get(slot as usize) {
            Some(&(key, value)) => (key, self.plus_coin(value).sample(rng)),
            None => (self.keys.len() as u64 + uniform_below(rng, self.pad), rng.next_u32() & 1 == 1),
        };
        self.perturb(key, plus, rng)
    }

    /// A report of the sampled pair `(key, ±1)` (`key < d'`).
    ///
    /// See the example on [`KeyValueMetric::pair_likelihood`].
    pub fn perturb(&self, key: u64, plus: bool, rng: &mut dyn RngCore) -> Report {
        let d = self.symbols();
        let payload = match self.protocol {
            KeyValueProtocol::PckvGrr => {
                let (key, plus) = if self.key_coin.sample(rng) {
                    let other = uniform_below(rng, d - 1);
                    (other + u64::from(other >= key), rng.next_u32() & 1 == 1)
                } else {
                    (key, plus != self.flip.sample(rng))
                };
                Payload::Index(2 * key + u64::from(plus))
            }
            KeyValueProtocol::PckvUe => {
                // Bits 0..d': the symbol is non-zero; bits d'..2d': its sign is +1.
                let d = d as usize;
                let mut bits = BitVector::zeros(2 * d);
                for start in (0..d).step_by(64) {
                    let lanes = (d - start).min(64) as u32;
                    let support = self.key_coin.sample_bits(lanes, rng);
                    let signs = rng.next_u64() & support;
                    for i in 0..lanes as usize {
                        if support >> i & 1 == 1 && start + i != key as usize {
                            bits.set(start + i);
                            if signs >> i & 1 == 1 {
                                bits.set(d + start + i);
                            }
                        }
                    }
                }
                if rng.next_u32() & 1 == 1 {
                    bits.set(key as usize);
                    if plus != self.flip.sample(rng) {
                        bits.set(d + key as usize);
                    }
                }
                Payload::Bits(bits)
            }
        };
        crate::metric::kind::envelope(self, payload)
    }

    /// The (key, +1?) pairs a valid report supports: GRR's one, UE's
    /// non-zero symbols. `None` for a payload this configuration refuses.
    #[doc(hidden)]
    pub fn supported(&self, payload: &Payload) -> Option<Vec<(u64, bool)>> {
        let d = self.symbols();
        match (self.protocol, payload) {
            (KeyValueProtocol::PckvGrr, Payload::Index(i)) if *i < 2 * d => Some(vec![(i / 2, i % 2 == 1)]),
            (KeyValueProtocol::PckvUe, Payload::Bits(bits)) if bits.fits(2 * d as usize) => {
                let d = d as usize;
                let mut supported = Vec::new();
                for k in 0..d {
                    match (bits.get(k), bits.get(d + k)) {
                        (true, plus) => supported.push((k as u64, plus)),
                        // A sign only on a non-zero symbol.
                        (false, true) => return None,
                        (false, false) => {}
                    }
                }
                Some(supported)
            }
            _ => None,
        }
    }

    /// Checks a report against this configuration.
    ///
    /// See the example on [`KeyValueMetric`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::KeyValue(self.protocol), self.epsilon, &self.fingerprint)?;
        let d = self.symbols();
        match (self.protocol, &report.payload) {
            (_, payload) if self.supported(payload).is_some() => Ok(()),
            (KeyValueProtocol::PckvGrr, Payload::Index(_)) => Err(Rejection::OutOfRange.error(text!("value must be below ", 2 * d))),
            (KeyValueProtocol::PckvUe, Payload::Bits(bits)) if bits.fits(2 * d as usize) => {
                Err(Rejection::Malformed.error("a sign bit is set on a zero symbol"))
            }
            (KeyValueProtocol::PckvUe, Payload::Bits(_)) => Err(Rejection::BadLength.error(text!("expected ", 2 * d, " bits"))),
            _ => Err(Rejection::Malformed.error("unexpected payload")),
        }
    }

    /// `P[report | the sampled pair is (key, ±1)]` of the realized channel
    /// (0 for a report this configuration refuses).
    ///
    /// With [`KeyValueMetric::sampled_pairs`] and
    /// [`KeyValueMetric::channel_outputs`], an exact check of the realized
    /// channel:
    ///
    /// ```
    /// use localdp::{KeyValueMetric, SimulationRng};
    /// let metric = KeyValueMetric::from_json(r#"{"protocol":"pckv_ue","epsilon":1,"keys":2,"range":[0,1],"pad":1}"#)?;
    /// let outputs = metric.channel_outputs().expect("a small channel");
    /// assert_eq!(outputs.len(), 27); // 3 symbols, each 0, +1 or −1
    /// let total: f64 = outputs.iter().map(|r| metric.pair_likelihood(0, true, r)).sum();
    /// assert!((total - 1.0).abs() < 1e-12);
    /// let report = metric.perturb(2, false, &mut SimulationRng::seed_from_u64(2)); // simulation only
    /// assert!(metric.pair_likelihood(2, false, &report) > 0.0);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn pair_likelihood(&self, key: u64, plus: bool, report: &Report) -> f64 {
        let Some(supported) = self.validate(report).ok().and_then(|()| self.supported(&report.payload)) else { return 0.0 };
        self.likelihood_given(key, plus, &supported)
    }

    /// [`KeyValueMetric::pair_likelihood`] of a valid report that supports
    /// the pairs `supported`.
    fn likelihood_given(&self, key: u64, plus: bool, supported: &[(u64, bool)]) -> f64 {
        let PairChannel { a, b, p } = self.channel();
        let sign = |agrees: bool| if agrees { p } else { 1.0 - p };
        match self.protocol {
            KeyValueProtocol::PckvGrr => match *supported {
                [(k, s)] if k == key => a * sign(s == plus),
                _ => b / 2.0,
            },
            KeyValueProtocol::PckvUe => {
                let own = match supported.iter().find(|(k, _)| *k == key) {
                    Some(&(_, s)) => a * sign(s == plus),
                    None => 1.0 - a,
                };
                let others = supported.iter().filter(|(k, _)| *k != key).count() as i32;
                own * (b / 2.0).powi(others) * (1.0 - b).powi((self.symbols() - 1) as i32 - others)
            }
        }
    }

    /// Every report the channel can output (GRR: `2d'`; UE: `3^{d'}`), or
    /// `None` for a UE channel of more than 12 symbols (531,441 outputs),
    /// too many to enumerate.
    ///
    /// See the example on [`KeyValueMetric::pair_likelihood`].
    pub fn channel_outputs(&self) -> Option<Vec<Report>> {
        let d = self.symbols();
        if self.protocol == KeyValueProtocol::PckvUe && d > 12 {
            return None;
        }
        let payloads: Vec<Payload> = match self.protocol {
            KeyValueProtocol::PckvGrr => (0..2 * d).map(Payload::Index).collect(),
            KeyValueProtocol::PckvUe => (0..3u64.pow(d as u32))
                .map(|code| {
                    let digits = (0..d).map(|i| code / 3u64.pow(i as u32) % 3);
                    let (mut support, mut signs) = (Vec::new(), Vec::new());
                    for (i, digit) in digits.enumerate() {
                        if digit > 0 {
                            support.push(i);
                        }
                        if digit == 2 {
                            signs.push(d as usize + i);
                        }
                    }
                    Payload::Bits(BitVector::with_ones(2 * d as usize, support.into_iter().chain(signs)).expect("below 2d'"))
                })
                .collect(),
        };
        Some(payloads.into_iter().map(|payload| crate::metric::kind::envelope(self, payload)).collect())
    }

    /// The canonical text of a map (its memo key): key indices in order,
    /// each with its clipped value.
    fn canonical(&self, map: &str) -> Result<String> {
        let pairs = self.parse_map(map)?;
        Ok(crate::text::join(pairs.iter().map(|&(k, v)| text!(k, ":", number_text(v))), ","))
    }

    /// The auditor's neighbours, parsed: the first `min(K, ℓ)` keys, all at
    /// the range's low end, then all at its high end. They fill every slot
    /// the sampling draws from with a key of their own.
    #[cfg(feature = "aggregate")]
    fn filled(&self) -> [Vec<(u64, f64)>; 2] {
        let held = (self.keys.len() as u64).min(self.pad);
        self.range.map(|end| (0..held).map(|k| (k, end)).collect())
    }
}

/// The mean, over a map's slots, of a report's likelihood ratio `r` per
/// slot (its likelihood given the slot's pair, over its likelihood given
/// a pair it does not depend on), at its largest (`most`) or smallest
/// over all maps: `keys` lists how many keys have each ratio, `dummy` is a
/// padding slot's (the mean over the `ℓ` dummy keys). A map of `n ≤ ℓ` keys
/// fills `ℓ` slots, `ℓ − n` with padding; one of more keys draws from all
/// of them, which only averages its ratios: so the extreme map holds the
/// (at most `ℓ`) keys whose ratio beats padding's.
#[cfg(feature = "aggregate")]
fn extreme_mean(keys: &[(f64, usize)], dummy: f64, slots: usize, most: bool) -> f64 {
    let mut ratios: Vec<(f64, usize)> = keys.to_vec();
    ratios.sort_by(|x, y| if most { y.0.total_cmp(&x.0) } else { x.0.total_cmp(&y.0) });
    let (mut sum, mut taken) = (0.0, 0);
    for (r, count) in ratios {
        let beats = if most { r > dummy } else { r < dummy };
        let take = if beats { count.min(slots - taken) } else { 0 };
        sum += r * take as f64;
        taken += take;
    }
    (sum + (slots - taken) as f64 * dummy) / slots as f64
}

impl Randomizer for KeyValueMetric {
    /// A user's map as JSON text: `{"key": value, …}`.
    type Value = str;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &str, rng: &mut R) -> Result<Report> {
        self.randomize_map(value, rng)
    }
}

/// Key-value configs: `"protocol"` one of [`KeyValueProtocol`] or `"key_value"`.
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, _| protocol == CHOOSE || protocol.parse::<KeyValueProtocol>().is_ok(),
    build: |config, _| {
        let config = KeyValueConfig::read(&config)?;
        Ok(Arc::new(KeyValueMetric::new(&config)?))
    },
    protocols: || text!(KeyValueProtocol::names(), ", ", CHOOSE),
    shape: "keys",
    label: "key-value",
};

impl Kind for KeyValueMetric {
    fn protocol(&self) -> Protocol {
        Protocol::KeyValue(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_map(text, rng)
    }
    fn family(&self) -> &'static str {
        "key_value"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Object
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    /// GRR: one index; UE: `2d'` bits.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        use crate::report::ReportFields;
        match self.protocol {
            KeyValueProtocol::PckvGrr => ReportFields::INDEX,
            KeyValueProtocol::PckvUe => ReportFields::bits(2 * self.symbols() as usize),
        }
    }
    /// The first `min(K, ℓ)` keys, all at the range's low end, then all at
    /// its high end: every pair differs, and no slot is left to padding
    /// (a map of one key is sampled one time in `ℓ`, which dilutes it).
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        self.filled().map(|pairs| {
            let pairs = pairs.iter().map(|&(k, value)| {
                let label = self.keys.value_text(k as usize).expect("a key of the config");
                text!(crate::json::write::to_string(&label).unwrap_or_default(), ":", number_text(value))
            });
            text!("{", crate::text::join(pairs, ","), "}")
        })
    }
    /// The level of the likelihood ratio between the two neighbours,
    /// `ln(P[report | first] / P[report | last])` (to 1e-6), as for
    /// frequency metrics: its top level holds the reports that tell the
    /// maps apart the most (PCKV-GRR: a neighbour's key with its sign;
    /// PCKV-UE: every one of their keys non-zero with one map's signs).
    #[cfg(feature = "aggregate")]
    fn events(&self, report: &Report) -> Vec<String> {
        let Some(supported) = self.validate(report).ok().and_then(|()| self.supported(&report.payload)) else { return Vec::new() };
        let [first, last] = self.filled().map(|pairs| {
            let shares = self.pair_shares(&pairs);
            shares.iter().map(|&((key, plus), share)| share * self.likelihood_given(key, plus, &supported)).sum::<f64>()
        });
        if first == 0.0 || last == 0.0 {
            return Vec::new();
        }
        vec![crate::metric::kind::likelihood_level((first / last).ln())]
    }
    /// Exact, from the realized `a`, `b`, `p`: a report's likelihood given a
    /// map, over its likelihood given a pair it does not depend on, is the
    /// mean over the map's slots of each slot's ratio ([`extreme_mean`]).
    /// With `m = 2ap/b` (the slot's key, its sign), `o = 2a(1−p)/b` (the
    /// other sign), `z = (1−a)/(1−b)` (UE: the key's symbol zero) and `u =
    /// a/b` (a padding key reported), the largest ratio of two maps' means
    /// over all outputs is PCKV-GRR's `(m + ℓ − 1)/(o + ℓ − 1)`, that is
    /// `ln(1 + (e^ε − 1)/ℓ)`, and PCKV-UE's `ln(m/o) = ε` once `K ≥ ℓ` (its
    /// maps fill every slot: `ln(1 + K(e^ε − 1)/ℓ)` below). `tests/key_value.rs`
    /// checks it against every pair of maps over two keys.
    #[cfg(feature = "aggregate")]
    fn realized_epsilon(&self) -> f64 {
        let PairChannel { a, b, p } = self.channel();
        let (slots, keys) = (self.pad as usize, self.keys.len());
        let (m, o, u) = (2.0 * a * p / b, 2.0 * a * (1.0 - p) / b, a / b);
        let ratio = |keys_most: &[(f64, usize)], keys_least: &[(f64, usize)], dummy: f64| {
            extreme_mean(keys_most, dummy, slots, true) / extreme_mean(keys_least, dummy, slots, false)
        };
        let worst = match self.protocol {
            // The report names one key (the others' ratio is 1), or a
            // padding key (every real key's ratio is 1).
            KeyValueProtocol::PckvGrr => {
                let padding = (u + (slots - 1) as f64) / slots as f64;
                let named = ratio(&[(m, 1), (1.0, keys - 1)], &[(o, 1), (1.0, keys - 1)], 1.0);
                named.max(ratio(&[(1.0, keys)], &[(1.0, keys)], padding))
            }
            // `held` of the keys' symbols non-zero, `shown` of the padding
            // keys' (more than ℓ of either changes nothing).
            KeyValueProtocol::PckvUe => {
                let z = (1.0 - a) / (1.0 - b);
                let mut worst = 1.0f64;
                for held in 0..=keys.min(slots + 1) {
                    for shown in 0..=slots {
                        let padding = (shown as f64 * u + (slots - shown) as f64 * z) / slots as f64;
                        let rest = keys - held;
                        worst = worst.max(ratio(&[(m, held), (z, rest)], &[(o, held), (z, rest)], padding));
                    }
                }
                worst
            }
        };
        worst.ln()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoization keeps one permanent report per distinct map (its keys and
/// clipped values): the map is one value, as the ledger charges it once.
impl Memo for KeyValueMetric {
    fn key(&self, value: &str, _draws: &[u64]) -> Result<String> {
        self.canonical(value)
    }
    fn permanent(&self, value: &str, _draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        Ok(self.randomize_map(value, rng)?.to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], _rng: &mut dyn RngCore) -> Result<Report> {
        memo_report(permanent, Protocol::KeyValue(self.protocol), self.epsilon, &self.fingerprint, |p| self.supported(p).is_some())
    }
}
