//! A configured distribution metric ([`DistributionMetric`]): its config,
//! its mechanism (Square Wave or a tree of frequency oracles), the device's
//! side and what the aggregator reads from it.

use crate::distribution::{hierarchical::Hierarchy, square_wave::SquareWave};
use crate::protocol::DistributionProtocol;
use crate::error::{Error, ExpectedValue, Rejection, Requirement, Result};
use crate::frequency::channel::Likelihood;
use crate::hash::fingerprint;
use crate::json::ConfigObject;
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, parse_numbers, ValueKind};
use crate::names::ProtocolFamily;
use crate::numeric::{MAX_EPSILON, MIN_EPSILON};
use crate::{number::number_text, privacy::validate_epsilon};
use crate::{protocol::Protocol, report::{memo_report, Payload, Report}};
use crate::rng::{uniform_below, CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::sync::Arc;


/// What a config names to let the library pick the mechanism.
pub const CHOOSE: &str = "distribution";

/// The bins when a config names none.
pub const DEFAULT_BINS: u64 = 64;

/// The most bins.
pub const MAX_BINS: u64 = 4096;

impl DistributionProtocol {
    /// The mechanism `"distribution"` resolves to: Square Wave, the more
    /// accurate in Wasserstein and KS distance and in quantile error at
    /// every ε (0.5 to 4), size (10^4 to 10^6) and population measured
    /// (`bench/distributions.py`).
    ///
    /// ```
    /// use localdp::DistributionProtocol;
    /// assert_eq!(DistributionProtocol::best(1.0, 64), DistributionProtocol::SquareWave);
    /// ```
    pub fn best(_epsilon: f64, _bins: u64) -> Self {
        DistributionProtocol::SquareWave
    }
}

/// A distribution metric's configuration: `{"protocol": "square_wave",
/// "epsilon": 1.0, "range": [0, 5000], "bins": 64}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DistributionConfig {
    /// `square_wave`, `hierarchical` or `distribution`.
    pub protocol: String,
    /// ε of one report.
    pub epsilon: f64,
    /// `[lo, hi]`: values are clipped to it.
    pub range: [f64; 2],
    /// The histogram's bins (default 64).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub bins: Option<u64>,
}

impl DistributionConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "range", "bins"])?;
        Ok(DistributionConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            range: config.read("range")?,
            bins: config.read_optional("bins")?,
        })
    }
}

crate::config::read_by_hand!(DistributionConfig, DistributionConfig::read);

/// The mechanism behind a distribution metric.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub enum Mechanism {
    SquareWave(SquareWave),
    Hierarchical(Hierarchy),
}

/// A configured distribution metric: the client's randomizer and the
/// aggregator's parameters.
///
/// Its parameters (the getters) and its grids:
///
/// ```
/// use localdp::{DistributionMetric, DistributionProtocol};
/// let metric = DistributionMetric::from_json(r#"{"protocol":"square_wave","epsilon":1,"range":[0,100],"bins":10}"#)?;
/// assert_eq!((metric.protocol(), metric.epsilon()), (DistributionProtocol::SquareWave, 1.0));
/// assert_eq!((metric.range(), metric.bins()), ([0.0, 100.0], 10));
/// assert!(!metric.fingerprint().is_empty());
/// assert_eq!((metric.bin_of(35.0), metric.bin_of(-5.0), metric.edge(4), metric.edge(10)), (3, 0, 40.0, 100.0));
/// let sw = metric.square_wave().unwrap();
/// assert!(metric.hierarchy().is_none());
/// assert_eq!(metric.inputs(), sw.inputs()); // Square Wave's fine grid, a multiple of the bins
/// assert_eq!(metric.inputs() % 10, 0);
/// assert_eq!(metric.input_of(100.0), metric.inputs() - 1);
/// let (first, last) = (metric.cell_value(0).unwrap(), metric.cell_value(sw.cells() - 1).unwrap());
/// assert!(first < 0.0 && (first + last - 100.0).abs() < 1e-9); // the widened range, around [0, 100]
/// let tree = DistributionMetric::from_json(r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#)?;
/// assert_eq!((tree.inputs(), tree.cell_value(0)), (16, None)); // the tree randomizes the bins
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct DistributionMetric {
    pub(super) protocol: DistributionProtocol,
    pub(super) epsilon: f64,
    pub(super) range: [f64; 2],
    pub(super) bins: u64,
    pub(super) mechanism: Mechanism,
    pub(super) fingerprint: String,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl DistributionMetric {
    /// The `mechanism` field.
    pub fn mechanism(&self) -> &Mechanism {
        &self.mechanism
    }
}

impl DistributionMetric {
    /// Validates the configuration.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn new(config: &DistributionConfig) -> Result<Self> {
        let protocol = match config.protocol.as_str() {
            CHOOSE => None,
            name => Some(name.parse::<DistributionProtocol>().map_err(|e| Error::malformed_key("protocol", text!(e)))?),
        };
        let epsilon = validate_epsilon(config.epsilon)?;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            let metric = Some("distribution");
            return Err(Error::invalid("epsilon", Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric }));
        }
        let [lo, hi] = config.range;
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::invalid("range", Requirement::FiniteBounds { attribute: None }));
        }
        if lo >= hi || !(hi - lo).is_finite() {
            return Err(Error::invalid("range", Requirement::NonEmptyRange { attribute: None, lo, hi }));
        }
        let bins = config.bins.unwrap_or(DEFAULT_BINS);
        if !(2..=MAX_BINS).contains(&bins) {
            return Err(Error::invalid("bins", Requirement::IntegerRange { min: 2, max: MAX_BINS, found: bins }));
        }
        let protocol = protocol.unwrap_or_else(|| DistributionProtocol::best(epsilon, bins));
        let (mechanism, shape) = match protocol {
            DistributionProtocol::SquareWave => {
                let sw = SquareWave::new(epsilon, bins);
                let shape = text!("window=", sw.window());
                (Mechanism::SquareWave(sw), shape)
            }
            DistributionProtocol::Hierarchical => {
                let tree = Hierarchy::new(epsilon, bins);
                let shape = crate::text::join(tree.levels().iter().map(|l| l.oracle().protocol().name()), ",");
                (Mechanism::Hierarchical(tree), shape)
            }
        };
        let mut canonical = text!("distribution:", protocol.name(), ":", bins, ":", shape).into_bytes();
        canonical.extend_from_slice(&lo.to_bits().to_le_bytes());
        canonical.extend_from_slice(&hi.to_bits().to_le_bytes());
        let fingerprint = fingerprint(&canonical);
        Ok(DistributionMetric { protocol, epsilon, range: config.range, bins, mechanism, fingerprint })
    }

    /// Parses and validates a JSON config.
    ///
    /// ```
    /// use localdp::{DistributionMetric, DistributionProtocol};
    /// let metric = DistributionMetric::from_json(r#"{"protocol":"distribution","epsilon":1,"range":[0,5000],"bins":16}"#)?;
    /// assert_eq!(metric.protocol(), DistributionProtocol::SquareWave);
    /// assert_eq!((metric.bin_of(800.0), metric.edge(3)), (2, 937.5));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&DistributionConfig::read(&parse_config(text)?)?)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn protocol(&self) -> DistributionProtocol {
        self.protocol
    }

    /// ε of one report.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// `[lo, hi]`.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn range(&self) -> [f64; 2] {
        self.range
    }

    /// The histogram's bins.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn bins(&self) -> u64 {
        self.bins
    }

    /// The fingerprint reports carry.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Square Wave's channel, if that is the mechanism.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn square_wave(&self) -> Option<&SquareWave> {
        match &self.mechanism {
            Mechanism::SquareWave(sw) => Some(sw),
            Mechanism::Hierarchical(_) => None,
        }
    }

    /// The tree, if that is the mechanism.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn hierarchy(&self) -> Option<&Hierarchy> {
        match &self.mechanism {
            Mechanism::Hierarchical(tree) => Some(tree),
            Mechanism::SquareWave(_) => None,
        }
    }

    /// The bin of a finite value (clipped to the range).
    ///
    /// See the example on [`DistributionMetric`].
    pub fn bin_of(&self, x: f64) -> u64 {
        let [lo, hi] = self.range;
        let position = (crate::number::clamp(x, lo, hi) - lo) / (hi - lo) * self.bins as f64;
        (position.floor().max(0.0) as u64).min(self.bins - 1)
    }

    /// The edge `b` of the bins, `lo + b(hi − lo)/B` (`b = 0..=B`).
    ///
    /// See the example on [`DistributionMetric`].
    pub fn edge(&self, b: u64) -> f64 {
        let [lo, hi] = self.range;
        if b == self.bins {
            hi
        } else {
            lo + (hi - lo) * b as f64 / self.bins as f64
        }
    }

    /// The inputs a report randomizes: Square Wave's fine grid, or the bins.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn inputs(&self) -> u64 {
        self.square_wave().map_or(self.bins, SquareWave::inputs)
    }

    /// The input of a finite value (clipped to the range): its place on
    /// Square Wave's fine grid, or its bin.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn input_of(&self, x: f64) -> u64 {
        let [lo, hi] = self.range;
        let inputs = self.inputs();
        let position = (crate::number::clamp(x, lo, hi) - lo) / (hi - lo) * inputs as f64;
        (position.floor().max(0.0) as u64).min(inputs - 1)
    }

    /// The public number a Square Wave report's cell stands for (the centre
    /// of the cell in the widened range); `None` for the tree.
    ///
    /// See the example on [`DistributionMetric`].
    pub fn cell_value(&self, cell: u64) -> Option<f64> {
        let [lo, hi] = self.range;
        self.square_wave().map(|sw| lo + (hi - lo) * sw.cell_centre(cell) / sw.inputs() as f64)
    }

    /// The groups a device draws one of (the tree's levels; 1 for Square Wave).
    fn groups(&self) -> u64 {
        self.hierarchy().map_or(1, |t| t.levels().len() as u64)
    }

    fn parse_value(text: &str) -> Result<f64> {
        match parse_numbers(text)?.as_slice() {
            [x] if x.is_finite() => Ok(*x),
            [_] => Err(Error::InvalidValue { expected: ExpectedValue::FiniteNumber }),
            values => Err(Error::InvalidValue { expected: ExpectedValue::Numbers { count: 1, found: values.len() } }),
        }
    }

    /// A report of a value at `input` ([`Self::input_of`]) from the
    /// device's `group` (the tree's level).
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`DistributionMetric::likelihood`].")]
    pub fn randomize_input(&self, input: u64, group: u64, rng: &mut dyn RngCore) -> Report {
        let payload = match &self.mechanism {
            Mechanism::SquareWave(sw) => Payload::Index(sw.sample(input, rng)),
            Mechanism::Hierarchical(tree) => tree.randomize(input, (group % tree.levels().len() as u64) as usize, rng),
        };
        crate::metric::kind::envelope(self, payload)
    }

    fn randomize_value(&self, x: f64, rng: &mut dyn RngCore) -> Result<Report> {
        if !x.is_finite() {
            return Err(Error::InvalidValue { expected: ExpectedValue::FiniteNumber });
        }
        let group = uniform_below(rng, self.groups());
        Ok(self.randomize_input(self.input_of(x), group, rng))
    }

    /// Checks a report against this configuration.
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`DistributionMetric::likelihood`].")]
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::Distribution(self.protocol), self.epsilon, &self.fingerprint)?;
        self.validate_payload(&report.payload)
    }

    /// [`DistributionMetric::validate`]'s check of the payload.
    fn validate_payload(&self, payload: &Payload) -> Result<()> {
        match &self.mechanism {
            Mechanism::SquareWave(sw) => match *payload {
                Payload::Index(k) if k < sw.cells() => Ok(()),
                Payload::Index(_) => Err(Rejection::OutOfRange.error(text!("value must be below ", sw.cells()))),
                _ => Err(Rejection::Malformed.error("expected a single value")),
            },
            Mechanism::Hierarchical(tree) => tree.validate(payload).map(drop),
        }
    }

    /// `P[report | input]` of the realized channel (0 for a report this
    /// configuration refuses).
    ///
    /// With [`DistributionMetric::randomize_input`],
    /// [`DistributionMetric::validate`] and
    /// [`DistributionMetric::channel_outputs`], an exact check of the
    /// realized channel:
    ///
    /// ```
    /// use localdp::{DistributionMetric, SimulationRng};
    /// let metric = DistributionMetric::from_json(r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":4}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(6); // simulation only
    /// let report = metric.randomize_input(metric.input_of(0.6), 0, &mut rng);
    /// metric.validate(&report)?;
    /// let outputs = metric.channel_outputs(&mut rng);
    /// for input in 0..metric.inputs() {
    ///     let total: f64 = outputs.iter().map(|r| metric.likelihood(input, r).probability()).sum();
    ///     assert!((total - 1.0).abs() < 1e-9); // every output enumerated
    /// }
    /// assert!(metric.likelihood(metric.inputs(), &report).is_zero());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn likelihood(&self, input: u64, report: &Report) -> Likelihood {
        if self.validate(report).is_err() || input >= self.inputs() {
            return Likelihood::new(0.0);
        }
        match (&self.mechanism, &report.payload) {
            (Mechanism::SquareWave(sw), Payload::Index(k)) => Likelihood::new(sw.probability(input, *k)),
            (Mechanism::Hierarchical(tree), _) => tree.likelihood(input, report),
            _ => Likelihood::new(0.0),
        }
    }

    /// Reports that exercise the whole channel: every cell (Square Wave),
    /// every level's oracle outputs (all of them, or sampled).
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`DistributionMetric::likelihood`].")]
    #[cfg(feature = "aggregate")]
    pub fn channel_outputs(&self, rng: &mut dyn RngCore) -> Vec<Report> {
        let payloads = match &self.mechanism {
            Mechanism::SquareWave(sw) => (0..sw.cells()).map(Payload::Index).collect(),
            Mechanism::Hierarchical(tree) => tree.channel_outputs(rng),
        };
        payloads
            .into_iter()
            .map(|payload| crate::metric::kind::envelope(self, payload))
            .collect()
    }
}

impl Randomizer for DistributionMetric {
    /// A number (clipped to the range).
    type Value = f64;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &f64, rng: &mut R) -> Result<Report> {
        self.randomize_value(*value, rng)
    }
}

/// Distribution configs: `"protocol"` one of [`DistributionProtocol`] or
/// `"distribution"`.
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, _| protocol == CHOOSE || protocol.parse::<DistributionProtocol>().is_ok(),
    build: |config, _| {
        let config = DistributionConfig::read(&config)?;
        Ok(Arc::new(DistributionMetric::new(&config)?))
    },
    protocols: || text!(DistributionProtocol::names(), ", ", CHOOSE),
    shape: "bins",
    label: "distribution",
};

impl Kind for DistributionMetric {
    fn protocol(&self) -> Protocol {
        Protocol::Distribution(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_value(Self::parse_value(text)?, rng)
    }
    fn family(&self) -> &'static str {
        "distribution"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Numbers { attributes: 1 }
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    /// Square Wave: a cell; the tree: the level and its oracle's fields.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        use crate::report::{Presence, ReportFields};
        match &self.mechanism {
            Mechanism::SquareWave(_) => ReportFields::INDEX,
            Mechanism::Hierarchical(tree) => {
                let levels = tree.levels().iter().map(|l| Kind::report_fields(l.oracle()));
                let fields = levels.reduce(ReportFields::either).unwrap_or(ReportFields::NONE);
                ReportFields { cohort: Presence::Always, ..fields }
            }
        }
    }
    /// The two ends of the range.
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        [number_text(self.range[0]), number_text(self.range[1])]
    }
    /// The level of the likelihood ratio between the range's ends (as for
    /// frequency metrics): its top level gathers the reports that favour one
    /// end by the whole ε (Square Wave: the cells near one end and far from
    /// the other; the tree: over all its levels, a report that supports one
    /// end's node and not the other's).
    #[cfg(feature = "aggregate")]
    fn events(&self, report: &Report) -> Vec<String> {
        let [first, last] = self.range.map(|end| self.likelihood(self.input_of(end), report));
        if first.is_zero() || last.is_zero() {
            return Vec::new();
        }
        vec![crate::metric::kind::likelihood_level(first.log_ratio(last))]
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoization keeps one permanent report per input of the grid (the memo
/// key is the input, so values that share it share a report), and for the
/// tree the level drawn once per install.
impl Memo for DistributionMetric {
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        self.hierarchy().map(|_| vec![uniform_below(rng, self.groups())]).unwrap_or_default()
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        match self.hierarchy() {
            Some(_) => matches!(draws, [level] if *level < self.groups()),
            None => draws.is_empty(),
        }
    }
    fn key(&self, value: &str, _draws: &[u64]) -> Result<String> {
        Ok(text!(self.input_of(Self::parse_value(value)?)))
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        let input = self.input_of(Self::parse_value(value)?);
        Ok(self.randomize_input(input, draws.first().copied().unwrap_or(0), rng).to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], _rng: &mut dyn RngCore) -> Result<Report> {
        memo_report(permanent, Protocol::Distribution(self.protocol), self.epsilon, &self.fingerprint, |p| self.validate_payload(p).is_ok())
    }
}
