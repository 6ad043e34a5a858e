//! Any metric behind one config format: the list of families, and
//! [`Metric`], what the CLI, the collector and the JavaScript package use.

#[cfg(feature = "aggregate")]
use crate::report::ReportFields;
use crate::error::{Error, Requirement, Result};
use crate::json::{ConfigObject, Field};
#[cfg(feature = "serde")]
use super::kind::config_object;
use super::kind::{id_of, parse_config, Family, Kind, ValueKind};
use crate::{protocol::Protocol, report::Report};
use crate::settings::{ClientSettings, CLIENT_KEYS};
use crate::rng::{CryptoRng, RngCore};
use crate::text::text;
use std::fmt;
use std::sync::Arc;

/// The families of metrics, in the order they are asked to claim a config;
/// adding a family adds its `FAMILY` here (docs/ARCHITECTURE.md says what else).
/// Each is there when its cargo feature is on.
pub(crate) const FAMILIES: &[&Family] = &[
    #[cfg(feature = "rappor")]
    &crate::rappor::metric::FAMILY,
    #[cfg(feature = "heavy")]
    &crate::heavy::metric::FAMILY,
    #[cfg(feature = "distribution")]
    &crate::distribution::metric::FAMILY,
    #[cfg(feature = "key_value")]
    &crate::key_value::metric::FAMILY,
    #[cfg(feature = "marginals")]
    &crate::marginals::metric::FAMILY,
    #[cfg(feature = "numeric")]
    &crate::numeric::FAMILY,
    #[cfg(feature = "grr")]
    &crate::frequency::oracle::FAMILY,
];

/// A configured metric of any family.
///
/// ```
/// use localdp::{Metric, SimulationRng};
/// let metric = Metric::from_json(r#"{"protocol":"auto","epsilon":1,"range":[0,10]}"#).unwrap();
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let report = metric.randomize_text("4.5", &mut rng).unwrap();
/// assert_eq!(report.protocol, metric.protocol());
/// ```
///
/// What a metric says about itself (its getters):
///
/// ```
/// use localdp::metric::ValueKind;
/// use localdp::{FrequencyOracle, Metric};
/// let grr = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b","c"]}"#)?;
/// assert_eq!((grr.protocol().name(), grr.epsilon(), grr.long_run_epsilon()), ("grr", 1.0, 1.0));
/// assert!(grr.id().starts_with("grr:1.0:")); // protocol, ε, the domain's fingerprint
/// assert_eq!((grr.family(), grr.value_kind()), ("frequency", ValueKind::Index { size: None }));
/// assert!(grr.memoizable());
/// assert_eq!(grr.mechanism::<FrequencyOracle>().map(|o| o.domain().len()), Some(3));
/// assert_eq!(grr.neighbours(), ["a".to_string(), "c".to_string()]); // what the auditor compares
/// let mean = Metric::from_json(r#"{"protocol":"laplace","epsilon":1,"range":[0,10]}"#)?;
/// assert_eq!(mean.value_kind(), ValueKind::Numbers { attributes: 1 });
/// assert!(mean.mechanism::<FrequencyOracle>().is_none());
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Clone)]
pub struct Metric {
    kind: Arc<dyn Kind>,
}

impl fmt::Debug for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metric").field("id", &self.id()).finish()
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

/// The metric of a frequency oracle: how the GRR module, whose page reads
/// the config's shape (js/raw.mjs), builds its metric.
#[cfg(feature = "grr")]
impl From<crate::frequency::oracle::FrequencyOracle> for Metric {
    fn from(oracle: crate::frequency::oracle::FrequencyOracle) -> Self {
        Metric { kind: Arc::new(oracle) }
    }
}

impl Metric {
    /// Parses a config: the family that claims its `"protocol"` (and, for
    /// `"auto"`, its `"domain"` or `"range"`) builds it. Shape errors name
    /// the key at fault. Client-only keys ([`crate::client::CLIENT_KEYS`])
    /// are validated, then ignored here.
    ///
    /// ```
    /// use localdp::{Error, Metric};
    /// let metric = Metric::from_json(r#"{"protocol":"oue","epsilon":2,"domain":16}"#)?;
    /// assert_eq!(metric.epsilon(), 2.0);
    /// let Err(Error::MalformedConfig { key, detail }) = Metric::from_json(r#"{"epsilon":2,"domain":16}"#) else { panic!() };
    /// assert_eq!(key.as_deref(), Some("protocol"));
    /// assert!(detail.starts_with("missing \"protocol\""));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        Metric::from_config(parse_config(text)?)
    }

    /// [`Metric::from_json`] of a parsed config (the wasm build's configs
    /// are JS objects; no JSON text is parsed for them).
    ///
    /// ```
    /// use localdp::Metric;
    /// let config = serde_json::json!({"protocol": "grr", "epsilon": 1, "domain": ["a", "b"]});
    /// let metric = Metric::from_value(config)?;
    /// assert_eq!(metric, Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":["a","b"]}"#)?);
    /// assert!(Metric::from_value(serde_json::json!([1, 2])).is_err()); // not an object
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "serde")]
    pub fn from_value(value: serde_json::Value) -> Result<Self> {
        Metric::from_config(config_object(&value)?)
    }

    /// `from_value` (the `serde` feature's) of a config object.
    pub fn from_config(mut object: ConfigObject) -> Result<Self> {
        // Client-only keys: checked here too (an aggregator refuses a config
        // its clients would refuse), then set aside.
        let settings = ClientSettings::from_config(&object)?;
        for key in CLIENT_KEYS {
            object.remove(key);
        }
        let protocol = match object.get("protocol") {
            Field::Missing => None,
            Field::Text(p) => Some(p),
            _ => return Err(Error::malformed_key("protocol", "\"protocol\" must be a string")),
        };
        let Some(family) = FAMILIES.iter().find(|f| (f.claims)(protocol.as_deref().unwrap_or(""), &object)) else {
            // Unclaimed: say what each family accepts, for the shape given.
            let family = FAMILIES.iter().find(|f| object.contains_key(f.shape)).unwrap_or(&FAMILIES[FAMILIES.len() - 1]);
            let known = (family.protocols)();
            return Err(Error::malformed_key("protocol", match protocol {
                None => text!("missing \"protocol\" (one of ", known, ")"),
                Some(_) => text!("\"protocol\" of a ", family.label, " metric must be one of ", known),
            }));
        };
        if !matches!(object.get("epsilon"), Field::Missing | Field::Number(..)) {
            return Err(Error::malformed_key("epsilon", "\"epsilon\" must be a number"));
        }
        // Only frequency protocols take an instantaneous step (RAPPOR has its own).
        #[cfg(feature = "grr")]
        let frequency = std::ptr::eq(*family, &crate::frequency::oracle::FAMILY);
        #[cfg(not(feature = "grr"))]
        let frequency = false;
        let foreign_step = !frequency && object.remove("instantaneous_epsilon");
        let kind = (family.build)(object, &settings)?;
        if foreign_step {
            return Err(Error::invalid("instantaneous_epsilon", Requirement::NotFor { protocol: kind.protocol() }));
        }
        Ok(Metric { kind })
    }

    /// Identifies the metric's randomization: protocol, ε and the domain's or
    /// range's fingerprint (what a report's envelope carries).
    ///
    /// See the example on [`Metric`].
    pub fn id(&self) -> String {
        id_of(&*self.kind)
    }

    /// The resolved protocol.
    ///
    /// See the example on [`Metric`].
    pub fn protocol(&self) -> Protocol {
        self.kind.protocol()
    }

    /// ε of one report (RAPPOR: `ε_1`).
    ///
    /// See the example on [`Metric`].
    pub fn epsilon(&self) -> f64 {
        self.kind.epsilon()
    }

    /// The ε one fresh report spends, and the most that all memoized
    /// reports of one value spend: RAPPOR's `ε_∞`, a frequency metric's
    /// `epsilon` (above the per-report ε with `"instantaneous_epsilon"`), ε
    /// otherwise.
    ///
    /// See the example on [`Metric`].
    pub fn long_run_epsilon(&self) -> f64 {
        self.kind.long_run_epsilon()
    }

    /// True where memoization applies.
    ///
    /// See the example on [`Metric`].
    pub fn memoizable(&self) -> bool {
        self.kind.memo().is_some()
    }

    /// Randomizes a value written as text: a label or an integer of the
    /// domain, or a number (numbers separated by commas for a record).
    /// Errors never contain the value.
    ///
    /// ```
    /// use localdp::{Metric, SecureRng};
    /// let record = Metric::from_json(r#"{"protocol":"piecewise","epsilon":4,"range":[[0,5000],[0,100]]}"#)?;
    /// let report = record.randomize_text("1234.5,87", &mut SecureRng::new()?)?;
    /// assert!(record.randomize_text("1234.5", &mut SecureRng::new()?).is_err()); // one number of two
    /// # let _ = report;
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn randomize_text<R: CryptoRng + RngCore>(&self, text: &str, rng: &mut R) -> Result<Report> {
        self.kind.randomize_text(text, rng)
    }

    /// The family, as the collector's listings name it (`"frequency"`,
    /// `"numeric"`, `"rappor"`).
    ///
    /// See the example on [`Metric`].
    pub fn family(&self) -> &'static str {
        self.kind.family()
    }

    /// What a value of this metric is, for front ends that type it (the
    /// JavaScript package turns numbers and arrays into text by it).
    ///
    /// See the example on [`Metric`].
    pub fn value_kind(&self) -> ValueKind {
        self.kind.value_kind()
    }

    /// The typed mechanism, if it is a `T` (e.g. [`crate::FrequencyOracle`]).
    ///
    /// See the example on [`Metric`].
    pub fn mechanism<T: 'static>(&self) -> Option<&T> {
        self.kind.as_any().downcast_ref()
    }

    /// Two values that differ the most, for the auditor.
    ///
    /// See the example on [`Metric`].
    #[cfg(feature = "aggregate")]
    pub fn neighbours(&self) -> [String; 2] {
        self.kind.neighbours()
    }

    /// The ε its exact channel realizes ([`Kind::realized_epsilon`]): at
    /// most [`Metric::long_run_epsilon`], below it where the config pays
    /// for budget its channel does not use.
    ///
    /// ```
    /// use localdp::Metric;
    /// let grr = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
    /// assert_eq!(grr.realized_epsilon(), 1.0);
    /// let padded = Metric::from_json(r#"{"protocol":"pckv_grr","epsilon":1,"keys":4,"range":[0,1],"pad":2}"#)?;
    /// assert!(padded.realized_epsilon() < 0.65); // ln(1 + (e − 1)/2): sampling one pair of 2
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn realized_epsilon(&self) -> f64 {
        self.kind.realized_epsilon()
    }

    /// Which wire fields the metric's reports carry and whether each is in
    /// every report: the columns of a columnar form of its reports
    /// (`localdp::columnar`).
    ///
    /// ```
    /// use localdp::columnar::{Presence, ReportFields};
    /// use localdp::Metric;
    /// let oue = Metric::from_json(r#"{"protocol":"oue","epsilon":1,"domain":20}"#).unwrap();
    /// assert_eq!(oue.report_fields(), ReportFields::bits(20));
    /// assert_eq!((oue.report_fields().bits_width, oue.report_fields().value), (Some(3), Presence::Never));
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn report_fields(&self) -> ReportFields {
        self.kind.report_fields()
    }

    /// The events of a report that the auditor counts.
    ///
    /// ```
    /// use localdp::{Metric, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":2}"#)?;
    /// let report = metric.randomize_text("0", &mut SimulationRng::seed_from_u64(1))?; // simulation only
    /// let events = metric.events(&report);
    /// assert_eq!(events.len(), 1);
    /// assert!(events[0].starts_with("log-likelihood ratio "));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "aggregate")]
    pub fn events(&self, report: &Report) -> Vec<String> {
        self.kind.events(report)
    }

    pub fn kind(&self) -> &dyn Kind {
        &*self.kind
    }
}
