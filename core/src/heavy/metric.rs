//! Heavy hitters' device half: the config, the choice of mechanism, the
//! group a device draws, and the report's validation.


use super::discovery::{Discovery, Pruning};
use super::sfp::Fragments;
use super::sketch::{Sketch, SketchKind};
use crate::protocol::HeavyHitterProtocol;
use crate::error::{Error, ExpectedValue, Requirement, Result};
use crate::frequency::{channel::Likelihood, oracle::{MAX_EPSILON, MIN_EPSILON}};
use crate::hash::{fingerprint, key64};
use crate::json::{ConfigObject, Field};
use crate::randomizer::Randomizer;
use crate::metric::kind::{Family, Kind, Memo, parse_config, ValueKind};
use crate::names::ProtocolFamily;
use crate::{protocol::Protocol, report::{memo_report, Payload, Report}};
use crate::rng::{uniform_below, CryptoRng, RngCore};
use crate::text::text;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;


/// What a config names to let the library pick the discovery protocol.
pub const CHOOSE: &str = "heavy_hitters";

impl HeavyHitterProtocol {
    /// True for the protocols that find values (the others score candidates).
    ///
    /// ```
    /// use localdp::HeavyHitterProtocol;
    /// assert!(HeavyHitterProtocol::Pem.discovers() && !HeavyHitterProtocol::Cms.discovers());
    /// assert_eq!(HeavyHitterProtocol::best_discovery(1.0, 16), HeavyHitterProtocol::Pem);
    /// ```
    pub fn discovers(self) -> bool {
        matches!(self, HeavyHitterProtocol::Pem | HeavyHitterProtocol::TreeHist | HeavyHitterProtocol::Sfp)
    }

    /// The discovery protocol `"heavy_hitters"` resolves to: PEM, which was
    /// the most accurate at every ε and size measured (`bench/heavy_hitters.py`,
    /// docs/performance.md): TreeHist spreads the devices over eight times as many levels,
    /// and SFP's fragments go through a sketch (HCMS's variance, which OLH's
    /// beats at every ε).
    ///
    /// See the example on [`HeavyHitterProtocol::discovers`].
    pub fn best_discovery(_epsilon: f64, _max_length: u32) -> Self {
        HeavyHitterProtocol::Pem
    }
}

/// A sketch's shape.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SketchConfig {
    /// `k`, the hash functions (rows); default 256 (SFP: 32, one sketch per
    /// position).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub hashes: Option<u64>,
    /// `m`, the columns, a power of two; default 1024.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub width: Option<u64>,
}

/// A heavy-hitter metric's configuration, e.g. `{"protocol": "pem",
/// "epsilon": 4, "max_length": 16, "top": 20}` or `{"protocol": "hcms",
/// "epsilon": 4, "sketch": {"hashes": 256, "width": 1024}, "candidates":
/// ["/home", "/checkout"]}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HeavyHitterConfig {
    /// `cms`, `hcms`, `pem`, `treehist` or `heavy_hitters`.
    pub protocol: String,
    /// The privacy parameter of one report.
    pub epsilon: f64,
    /// Discovery: the longest value in bytes of UTF-8 (default 16).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub max_length: Option<u64>,
    /// Discovery: cut longer values (at a character boundary) instead of
    /// refusing them (default false).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub truncate: Option<bool>,
    /// Discovery: how many values the aggregator reports (1 to [`MAX_TOP`],
    /// default 20). PEM and TreeHist score `2·top·2^s` prefixes per report
    /// (`s` bits per level: 8 or 1), so estimating costs about `n·2·top·2^s`
    /// hashes: at `top` = 100 and 10^6 PEM reports, about 5·10^10.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub top: Option<u64>,
    /// Sketches and SFP: the shape, `hashes × width` with `width` a power
    /// of two up to 65,536; at most [`MAX_CELLS`] cells in all (SFP has `L
    /// + 1` sketches) and, for SFP, at most [`MAX_SFP_HASHES`] hashes.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub sketch: Option<SketchConfig>,
    /// Sketches: the values to score (the aggregator's; clients ignore it).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub candidates: Option<Vec<String>>,
}

impl SketchConfig {
    /// Reads `"sketch"`'s object; errors name the key as `"sketch.width"`.
    fn read(sketch: &ConfigObject) -> Result<Self> {
        let read = || -> Result<Self> {
            sketch.only(&["hashes", "width"])?;
            Ok(SketchConfig { hashes: sketch.read_optional("hashes")?, width: sketch.read_optional("width")? })
        };
        read().map_err(|e| match e {
            Error::MalformedConfig { key: Some(key), detail } => {
                Error::MalformedConfig { key: Some(["sketch.", &key].concat()), detail }
            }
            other => other,
        })
    }
}

impl HeavyHitterConfig {
    /// Reads a config object, refusing keys it does not know.
    pub(crate) fn read(config: &ConfigObject) -> Result<Self> {
        config.only_config(&["protocol", "epsilon", "max_length", "truncate", "top", "sketch", "candidates"])?;
        Ok(HeavyHitterConfig {
            protocol: config.read("protocol")?,
            epsilon: config.read("epsilon")?,
            max_length: config.read_optional("max_length")?,
            truncate: config.read_optional("truncate")?,
            top: config.read_optional("top")?,
            sketch: match config.get("sketch") {
                Field::Missing | Field::Null => None,
                Field::Object(sketch) => Some(SketchConfig::read(&sketch)?),
                other => return Err(Error::malformed_key("sketch", other.invalid("an object"))),
            },
            candidates: config.read_optional("candidates")?,
        })
    }
}

crate::config::read_by_hand!(SketchConfig, SketchConfig::read);
crate::config::read_by_hand!(HeavyHitterConfig, HeavyHitterConfig::read);

/// The most values a discovery estimate lists (`"top"`): the aggregator's
/// work grows with it (see [`HeavyHitterConfig::top`]).
pub const MAX_TOP: u64 = 100;

/// The most cells a metric's sketches hold in all (SFP: `(L + 1)` sketches
/// of `hashes × width`): 2^22, about 100 MB for the aggregator's counts and
/// table.
pub const MAX_CELLS: u64 = 1 << 22;

/// The most hashes (rows) of SFP's sketches: the aggregator scores 65,536
/// fragments per position, each over every row.
pub const MAX_SFP_HASHES: u64 = 256;

mod defaults {
    pub const HASHES: u64 = 256;
    pub const SFP_HASHES: u64 = 32;
    pub const WIDTH: u64 = 1024;
    pub const MAX_LENGTH: u64 = 16;
    pub const TOP: u64 = 20;
}

/// The mechanism behind a heavy-hitter metric.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub enum Mechanism {
    Sketch(Sketch),
    Discovery(Discovery),
    Fragments(Fragments),
}

/// A configured heavy-hitter metric.
///
/// Its parameters (the getters), per kind of protocol:
///
/// ```
/// use localdp::{HeavyHitterMetric, HeavyHitterProtocol};
/// let cms = HeavyHitterMetric::from_json(
///     r#"{"protocol":"cms","epsilon":2,"sketch":{"hashes":16,"width":1024},"candidates":["a","b"]}"#,
/// )?;
/// assert_eq!((cms.protocol(), cms.candidates()), (HeavyHitterProtocol::Cms, &["a".to_string(), "b".to_string()][..]));
/// assert_eq!((cms.sketch().map(|s| s.rows()), cms.groups()), (Some(16), 16)); // a device reports one row
/// assert!(cms.discovery().is_none() && cms.fragments().is_none());
/// let pem = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":2,"max_length":4}"#)?;
/// let discovery = pem.discovery().unwrap();
/// assert_eq!((discovery.max_length(), discovery.levels(), pem.groups()), (4, 4, 4)); // a byte per level
/// assert_eq!(discovery.buckets(), localdp::frequency::LocalHashing::optimal_g(2.0));
/// assert_ne!(discovery.prefix_key("abcd", 0), discovery.prefix_key("xbcd", 0));
/// assert_eq!(discovery.prefix_key("abcd", 1), discovery.prefix_key("abxy", 1)); // the first two bytes
/// let sfp = HeavyHitterMetric::from_json(r#"{"protocol":"sfp","epsilon":2,"max_length":8}"#)?;
/// let fragments = sfp.fragments().unwrap();
/// assert_eq!((fragments.max_length(), fragments.slots(), sfp.groups()), (8, 16, 16));
/// assert_eq!(fragments.key("abc", 8), localdp::hash::key64(b"abc")); // the whole value's slot
/// assert!(fragments.sketch().width().is_power_of_two());
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct HeavyHitterMetric {
    pub(super) protocol: HeavyHitterProtocol,
    pub(super) epsilon: f64,
    pub(super) mechanism: Mechanism,
    truncate: bool,
    pub(super) candidates: Vec<String>,
    fingerprint: String,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl HeavyHitterMetric {
    /// The `mechanism` field.
    pub fn mechanism(&self) -> &Mechanism {
        &self.mechanism
    }
}

impl HeavyHitterMetric {
    /// Validates the configuration.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn new(config: &HeavyHitterConfig) -> Result<Self> {
        let protocol = match config.protocol.as_str() {
            CHOOSE => None,
            name => Some(name.parse::<HeavyHitterProtocol>().map_err(|e| Error::malformed_key("protocol", text!(e)))?),
        };
        let epsilon = config.epsilon;
        if !(MIN_EPSILON..=MAX_EPSILON).contains(&epsilon) {
            return Err(Error::invalid("epsilon", Requirement::Range { min: MIN_EPSILON, max: MAX_EPSILON, found: epsilon, metric: Some("heavy-hitter") }));
        }
        let max_length = config.max_length.unwrap_or(defaults::MAX_LENGTH);
        let protocol = protocol.unwrap_or_else(|| HeavyHitterProtocol::best_discovery(epsilon, max_length as u32));
        let not_for = |key: &'static str, given: bool| {
            if given {
                Err(Error::invalid(key, Requirement::NotFor { protocol: Protocol::HeavyHitter(protocol) }))
            } else {
                Ok(())
            }
        };
        let integers = |parameter, min, max, found| {
            if (min..=max).contains(&found) {
                Ok(())
            } else {
                Err(Error::invalid(parameter, Requirement::IntegerRange { min, max, found }))
            }
        };
        // `parts` sketches of `hashes × width` cells, at most MAX_CELLS in all
        // (memory, and the aggregator's work per report and per value scored).
        let sketch = |kind, default_hashes, max_hashes: u64, parts: u64| -> Result<Sketch> {
            let shape = config.sketch.clone().unwrap_or(SketchConfig { hashes: None, width: None });
            let (hashes, width) = (shape.hashes.unwrap_or(default_hashes), shape.width.unwrap_or(defaults::WIDTH));
            if !(2..=65_536).contains(&width) || !width.is_power_of_two() {
                return Err(Error::invalid("sketch.width", Requirement::Format { expected: "a power of two in 2..=65536" }));
            }
            integers("sketch.width", 2, MAX_CELLS / parts, width)?;
            integers("sketch.hashes", 1, max_hashes.min(MAX_CELLS / (parts * width)), hashes)?;
            Ok(Sketch::new(kind, epsilon, hashes, width))
        };
        let mechanism = if protocol.discovers() {
            not_for("candidates", config.candidates.is_some())?;
            integers("max_length", 1, 64, max_length)?;
            let top = config.top.unwrap_or(defaults::TOP);
            integers("top", 1, MAX_TOP, top)?;
            let (max_length, top) = (max_length as u32, top as usize);
            match protocol {
                HeavyHitterProtocol::Sfp => {
                    let parts = u64::from(max_length) + 1;
                    let sketch = sketch(SketchKind::Hcms, defaults::SFP_HASHES, MAX_SFP_HASHES, parts)?;
                    Mechanism::Fragments(Fragments::new(sketch, max_length, top))
                }
                HeavyHitterProtocol::TreeHist => {
                    not_for("sketch", config.sketch.is_some())?;
                    Mechanism::Discovery(Discovery::new(epsilon, 1, max_length, top, Pruning::Significant))
                }
                _ => {
                    not_for("sketch", config.sketch.is_some())?;
                    Mechanism::Discovery(Discovery::new(epsilon, 8, max_length, top, Pruning::Best))
                }
            }
        } else {
            not_for("max_length", config.max_length.is_some())?;
            not_for("truncate", config.truncate.is_some())?;
            not_for("top", config.top.is_some())?;
            let kind = if protocol == HeavyHitterProtocol::Cms { SketchKind::Cms } else { SketchKind::Hcms };
            Mechanism::Sketch(sketch(kind, defaults::HASHES, MAX_CELLS, 1)?)
        };
        let candidates = config.candidates.clone().unwrap_or_default();
        if let Some(repeated) = crate::domain::first_repeat(&candidates) {
            return Err(Error::invalid("candidates", Requirement::Distinct { repeated }));
        }
        let canonical = match &mechanism {
            Mechanism::Sketch(s) => text!(protocol.name(), ":", s.rows(), ":", s.width()),
            Mechanism::Discovery(d) => text!(protocol.name(), ":", d.max_length()),
            Mechanism::Fragments(f) => {
                text!(protocol.name(), ":", f.max_length(), ":", f.sketch().rows(), ":", f.sketch().width())
            }
        };
        Ok(HeavyHitterMetric {
            protocol,
            epsilon,
            mechanism,
            truncate: config.truncate.unwrap_or(false),
            candidates,
            fingerprint: fingerprint(canonical.as_bytes()),
        })
    }

    /// Parses and validates a JSON config.
    ///
    /// ```
    /// use localdp::{HeavyHitterMetric, HeavyHitterProtocol};
    /// let metric = HeavyHitterMetric::from_json(r#"{"protocol":"heavy_hitters","epsilon":4,"max_length":16}"#)?;
    /// assert_eq!(metric.protocol(), HeavyHitterProtocol::Pem);
    /// assert!(metric.protocol().discovers() && metric.candidates().is_empty());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(&HeavyHitterConfig::read(&parse_config(text)?)?)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn protocol(&self) -> HeavyHitterProtocol {
        self.protocol
    }

    /// The sketch, for CMS and HCMS.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn sketch(&self) -> Option<&Sketch> {
        match &self.mechanism {
            Mechanism::Sketch(s) => Some(s),
            _ => None,
        }
    }

    /// The discovery mechanism, for PEM and TreeHist.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn discovery(&self) -> Option<&Discovery> {
        match &self.mechanism {
            Mechanism::Discovery(d) => Some(d),
            _ => None,
        }
    }

    /// The fragment mechanism, for SFP.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn fragments(&self) -> Option<&Fragments> {
        match &self.mechanism {
            Mechanism::Fragments(f) => Some(f),
            _ => None,
        }
    }

    /// The sketch whose counts the aggregator keeps (CMS, HCMS; SFP: one per
    /// part, of this shape).
    #[doc(hidden)]
    pub fn counting_sketch(&self) -> Option<&Sketch> {
        match &self.mechanism {
            Mechanism::Sketch(s) => Some(s),
            Mechanism::Fragments(f) => Some(f.sketch()),
            Mechanism::Discovery(_) => None,
        }
    }

    /// The candidates scored by a sketch.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// The groups a device draws one of: sketch rows, prefix levels or SFP
    /// slots.
    ///
    /// See the example on [`HeavyHitterMetric`].
    pub fn groups(&self) -> u64 {
        match &self.mechanism {
            Mechanism::Sketch(s) => s.rows(),
            Mechanism::Discovery(d) => u64::from(d.levels()),
            Mechanism::Fragments(f) => f.slots(),
        }
    }

    /// The value as reported: discovery refuses a value longer than
    /// `max_length` bytes (the error does not contain it), or cuts it at a
    /// character boundary with `"truncate": true`.
    ///
    /// ```
    /// use localdp::HeavyHitterMetric;
    /// let strict = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4}"#)?;
    /// assert_eq!(strict.prepare("dog")?, "dog");
    /// assert!(strict.prepare("horse").is_err());
    /// let cut = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4,"truncate":true}"#)?;
    /// assert_eq!(cut.prepare("horse")?, "hors");
    /// assert_eq!(cut.prepare("caf\u{e9}s")?, "caf"); // never inside a character
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn prepare<'a>(&self, value: &'a str) -> Result<Cow<'a, str>> {
        let max = match &self.mechanism {
            Mechanism::Sketch(_) => return Ok(Cow::Borrowed(value)),
            Mechanism::Discovery(d) => d.max_length(),
            Mechanism::Fragments(f) => f.max_length(),
        };
        if value.len() <= max {
            return Ok(Cow::Borrowed(value));
        }
        if !self.truncate {
            return Err(Error::InvalidValue { expected: ExpectedValue::Text { max_bytes: max } });
        }
        let end = (0..=max).rev().find(|&i| value.is_char_boundary(i)).unwrap_or(0);
        Ok(Cow::Owned(value[..end].to_string()))
    }

    /// A report of `value` from the device's group `group`.
    ///
    /// With [`HeavyHitterMetric::validate`],
    /// [`HeavyHitterMetric::likelihood`] and
    /// [`HeavyHitterMetric::channel_outputs`]:
    ///
    /// ```
    /// use localdp::{HeavyHitterMetric, SimulationRng};
    /// let metric = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(4); // simulation only
    /// let report = metric.randomize_in_group("dog", 2, &mut rng)?;
    /// metric.validate(&report)?;
    /// assert!(metric.randomize_in_group("horse", 0, &mut rng).is_err()); // longer than max_length
    /// // Every output's likelihoods under two values are within e^ε of each other.
    /// for output in metric.channel_outputs(&["dog", "cat"], &mut rng) {
    ///     let ratio = metric.likelihood("dog", &output).log_ratio(metric.likelihood("cat", &output));
    ///     assert!(ratio.abs() <= 1.0 + 1e-9);
    /// }
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn randomize_in_group(&self, value: &str, group: u64, rng: &mut dyn RngCore) -> Result<Report> {
        let value = self.prepare(value)?;
        let payload = match &self.mechanism {
            Mechanism::Sketch(s) => s.randomize(key64(value.as_bytes()), group % s.rows(), rng),
            Mechanism::Discovery(d) => d.randomize(&value, (group % u64::from(d.levels())) as u32, rng),
            Mechanism::Fragments(f) => f.randomize(&value, group % f.slots(), rng),
        };
        Ok(self.envelope(payload))
    }

    fn envelope(&self, payload: Payload) -> Report {
        crate::metric::kind::envelope(self, payload)
    }

    fn randomize_once(&self, value: &str, rng: &mut dyn RngCore) -> Result<Report> {
        let group = uniform_below(rng, self.groups());
        self.randomize_in_group(value, group, rng)
    }

    /// Checks a report against this configuration.
    ///
    /// See the example on [`HeavyHitterMetric::randomize_in_group`].
    pub fn validate(&self, report: &Report) -> Result<()> {
        crate::report::check_envelope(report, Protocol::HeavyHitter(self.protocol), self.epsilon, &self.fingerprint)?;
        self.validate_payload(&report.payload)
    }

    /// [`HeavyHitterMetric::validate`]'s check of the payload.
    fn validate_payload(&self, payload: &Payload) -> Result<()> {
        match &self.mechanism {
            Mechanism::Sketch(s) => s.validate(payload),
            Mechanism::Discovery(d) => d.validate(payload),
            Mechanism::Fragments(f) => f.validate(payload),
        }
    }

    /// `P[report | value]` of the realized channel (0 for a report this
    /// configuration would refuse).
    ///
    /// See the example on [`HeavyHitterMetric::randomize_in_group`].
    pub fn likelihood(&self, value: &str, report: &Report) -> Likelihood {
        let Ok(value) = self.prepare(value) else { return Likelihood::new(0.0) };
        match &self.mechanism {
            Mechanism::Sketch(s) => s.likelihood(key64(value.as_bytes()), &report.payload),
            Mechanism::Discovery(d) => d.likelihood(&value, &report.payload),
            Mechanism::Fragments(f) => f.likelihood(&value, &report.payload),
        }
    }

    /// Reports that exercise the channel of `values`: sampled groups and
    /// seeds with the outputs that differ between values.
    ///
    /// See the example on [`HeavyHitterMetric::randomize_in_group`].
    pub fn channel_outputs(&self, values: &[&str], rng: &mut dyn RngCore) -> Vec<Report> {
        let payloads = match &self.mechanism {
            Mechanism::Sketch(s) => s.channel_outputs(&values.iter().map(|v| key64(v.as_bytes())).collect::<Vec<_>>(), rng),
            Mechanism::Discovery(d) => d.channel_outputs(values, rng),
            Mechanism::Fragments(f) => f.channel_outputs(values, rng),
        };
        payloads.into_iter().map(|p| self.envelope(p)).collect()
    }

    fn supports(&self, value: &str, payload: &Payload) -> bool {
        match &self.mechanism {
            Mechanism::Sketch(s) => s.supports(key64(value.as_bytes()), payload),
            Mechanism::Discovery(d) => d.supports(value, payload),
            Mechanism::Fragments(f) => f.supports(value, payload),
        }
    }
}

/// Heavy-hitter configs: `"protocol"` one of [`HeavyHitterProtocol`] or
/// `"heavy_hitters"`.
pub(crate) static FAMILY: Family = Family {
    claims: |protocol, _| protocol == CHOOSE || protocol.parse::<HeavyHitterProtocol>().is_ok(),
    build: |config, _| {
        let config = HeavyHitterConfig::read(&config)?;
        Ok(Arc::new(HeavyHitterMetric::new(&config)?))
    },
    protocols: || text!(HeavyHitterProtocol::names(), ", ", CHOOSE),
    shape: "max_length",
    label: "heavy-hitter",
};

impl Kind for HeavyHitterMetric {
    fn protocol(&self) -> Protocol {
        Protocol::HeavyHitter(self.protocol)
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn randomize_text(&self, text: &str, rng: &mut dyn RngCore) -> Result<Report> {
        self.randomize_once(text, rng)
    }
    fn family(&self) -> &'static str {
        "heavy-hitter"
    }
    fn value_kind(&self) -> ValueKind {
        ValueKind::Text
    }
    fn memo(&self) -> Option<&dyn Memo> {
        Some(self)
    }
    /// CMS: the row and its bits; the others: a group, a seed and a value.
    #[cfg(feature = "aggregate")]
    fn report_fields(&self) -> crate::report::ReportFields {
        use crate::report::ReportFields;
        match &self.mechanism {
            Mechanism::Sketch(sketch) if sketch.kind() == SketchKind::Cms => {
                ReportFields::cohort_bits(sketch.width() as usize)
            }
            Mechanism::Sketch(_) | Mechanism::Discovery(_) | Mechanism::Fragments(_) => ReportFields::GROUPED,
        }
    }
    #[cfg(feature = "aggregate")]
    fn neighbours(&self) -> [String; 2] {
        crate::rappor::metric::candidate_neighbours(self.candidates())
    }
    /// Which of the two neighbours the report supports, jointly: the
    /// whole ε is on "the first and not the second" (a report that
    /// supports both, where their hashes or prefixes collide, says nothing).
    #[cfg(feature = "aggregate")]
    fn events(&self, report: &Report) -> Vec<String> {
        if self.validate(report).is_err() {
            return Vec::new();
        }
        let [a, b] = self.neighbours().map(|value| self.supports(&value, &report.payload));
        let says = |supports: bool| if supports { "supports" } else { "does not support" };
        vec![text!(says(a), " the first neighbour and ", says(b), " the second")]
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Memoization keeps the install's group (row or level, drawn once) and
/// the report of each value.
impl Memo for HeavyHitterMetric {
    fn draw(&self, rng: &mut dyn RngCore) -> Vec<u64> {
        vec![uniform_below(rng, self.groups())]
    }
    fn draws_valid(&self, draws: &[u64]) -> bool {
        matches!(draws, [group] if *group < self.groups())
    }
    fn key(&self, value: &str, _draws: &[u64]) -> Result<String> {
        Ok(self.prepare(value)?.into_owned())
    }
    fn permanent(&self, value: &str, draws: &[u64], rng: &mut dyn RngCore) -> Result<Vec<u8>> {
        Ok(self.randomize_in_group(value, draws.first().copied().unwrap_or(0), rng)?.to_memo())
    }
    fn report(&self, permanent: &[u8], _draws: &[u64], _rng: &mut dyn RngCore) -> Result<Report> {
        memo_report(permanent, Protocol::HeavyHitter(self.protocol), self.epsilon, &self.fingerprint, |p| self.validate_payload(p).is_ok())
    }
}

impl Randomizer for HeavyHitterMetric {
    /// Any string (discovery: at most `max_length` bytes).
    type Value = str;

    fn randomize<R: CryptoRng + RngCore>(&self, value: &str, rng: &mut R) -> Result<Report> {
        self.randomize_once(value, rng)
    }
}
