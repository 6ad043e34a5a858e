//! The versioned wire format of a report: one JSON object per report.
//!
//! Every report names the format version, the protocol, ε and a fingerprint
//! of the domain, so an aggregator refuses reports made under another
//! configuration instead of silently mixing them. The payload depends on the
//! protocol:
//!
//! | protocol | payload | example |
//! |---|---|---|
//! | `grr`, `hr` | `"value"`: an index | `{"version":1,"protocol":"grr","epsilon":1.0,"domain":"…","value":3}` |
//! | `blh`, `olh` | `"seed"` (u32) and `"value"` in `0..g` | `{…,"seed":3141592,"value":1}` |
//! | `hrr` | `"seed"`: a Hadamard column in `0..K`; `"value"`: the randomized bit, 0 or 1 | `{…,"protocol":"hrr",…,"seed":5,"value":1}` |
//! | `sue`, `oue`, `ss` | `"bits"`: `d` bits as hex, bit `i` in byte `i/8` at position `i%8` | `{…,"bits":"0a40"}` |
//! | `dbitflip` | `"attributes"`: the sampled buckets, increasing; `"values"`: one bit (0 or 1) each | `{…,"protocol":"dbitflip",…,"attributes":[2,7],"values":[0,1]}` |
//! | `rappor` | `"cohort"` and `"bits"` (the Bloom filter's instantaneous response) | `{…,"cohort":12,"bits":"…"}` |
//! | `cms` | `"cohort"`: the sketch row; `"bits"`: its `m` randomized bits | `{…,"protocol":"cms",…,"cohort":3,"bits":"…"}` |
//! | `hcms` | `"cohort"`: the sketch row; `"seed"`: a Hadamard column; `"value"`: the randomized bit | `{…,"cohort":3,"seed":517,"value":1}` |
//! | `pem`, `treehist` | `"cohort"`: the prefix level; `"seed"` and `"value"`: local hashing of the prefix | `{…,"cohort":5,"seed":3141592,"value":12}` |
//! | `square_wave` | `"value"`: a cell of the widened range | `{…,"protocol":"square_wave",…,"value":37}` |
//! | `hierarchical` | `"cohort"`: the tree level; `"bits"` (OUE) or `"seed"` and `"value"` (HRR) of the level's oracle | `{…,"protocol":"hierarchical",…,"cohort":1,"bits":"0420"}` |
//! | `pckv_grr` | `"value"`: `2k + s`, the reported key `k` (the dummy keys after the config's) and its sign (`s` = 1 for +1) | `{…,"protocol":"pckv_grr",…,"value":7}` |
//! | `pckv_ue` | `"bits"`: `2d'` bits, `d'` the keys and dummy keys: bit `k` says key `k`'s symbol is non-zero, bit `d' + k` that it is +1 | `{…,"protocol":"pckv_ue",…,"bits":"0808080000"}` |
//! | `marginals_oue` | `"cohort"`: the set of attributes drawn; `"bits"`: OUE over the set's cells | `{…,"protocol":"marginals_oue",…,"cohort":2,"bits":"8e0a"}` |
//! | `marginals_olh` | `"cohort"`: the set of attributes drawn; `"seed"` and `"value"`: OLH of the event's cell | `{…,"protocol":"marginals_olh",…,"cohort":0,"seed":2736219033,"value":1}` |
//! | numeric, one number | `"value"`: an output index on the public grid | `{…,"protocol":"piecewise",…,"value":211}` |
//! | numeric, a record | `"attributes"`: the sampled attributes, increasing; `"values"`: their output indices | `{…,"attributes":[0,3],"values":[1,0]}` |
//!
//! Seeds are 32-bit so that they survive JavaScript's numbers unchanged.

use crate::error::{Error, Rejection, Result};
use crate::json::{quoted, ConfigObject};
pub use crate::protocol::Protocol;
use crate::bytes::{ByteReader, ByteWriter};
use crate::text::{hex_bytes, text, HexBytes};

/// The only report format version this build writes and reads.
pub const REPORT_VERSION: u32 = 1;

/// The randomized part of a report.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Payload {
    /// One index (GRR: a value; HR: a Hadamard column).
    Index(u64),
    /// A seed drawn independently of the value and a randomized number:
    /// local hashing's hash function and bucket, or Hadamard randomized
    /// response's column and bit.
    Hashed {
        /// Local hashing: selects the hash function. HRR: the Hadamard
        /// column `j` in `0..K`.
        seed: u32,
        /// Local hashing: the randomized bucket in `0..g`. HRR: the
        /// randomized coefficient bit, 0 or 1.
        value: u64,
    },
    /// A bit vector over the domain (unary encodings, subset selection).
    Bits(BitVector),
    /// RAPPOR: the client's cohort and the report's Bloom filter bits.
    Cohort {
        /// The cohort, drawn once per install.
        cohort: u32,
        /// The instantaneous response.
        bits: BitVector,
    },
    /// A group drawn on the device (a sketch row, a prefix level), a seed
    /// and a randomized number: HCMS's row, Hadamard column and bit; PEM's
    /// and TreeHist's level, hash seed and bucket.
    Grouped {
        /// The group, drawn independently of the value.
        group: u32,
        /// HCMS: the Hadamard column. PEM, TreeHist: the hash function.
        seed: u32,
        /// HCMS: the randomized bit. PEM, TreeHist: the randomized bucket.
        value: u64,
    },
    /// A numeric record: the sampled attributes (increasing) and each one's
    /// output index; for dBitFlip, the sampled buckets and one bit each.
    Sampled {
        /// The attributes reported, in increasing order.
        attributes: Vec<u32>,
        /// One output index per reported attribute.
        values: Vec<u64>,
    },
}

impl Payload {
    /// The payload of a report's fields, by which of them are present: the
    /// one rule for JSON ([`Report::from_json`]) and for columns
    /// (`localdp::columnar::ReportBatch::row`). `to_bits` reads the `bits`
    /// field (hex on the wire, raw bytes in a column) only once the fields
    /// make a payload that has bits, so a wrong combination is malformed
    /// whatever its bits hold.
    pub fn from_fields<B>(
        seed: Option<u32>,
        value: Option<u64>,
        bits: Option<B>,
        cohort: Option<u32>,
        attributes: Option<Vec<u32>>,
        values: Option<Vec<u64>>,
        to_bits: impl FnOnce(B) -> Result<BitVector>,
    ) -> Result<Payload> {
        Ok(match (seed, value, bits, cohort, attributes, values) {
            (None, Some(v), None, None, None, None) => Payload::Index(v),
            (Some(seed), Some(value), None, None, None, None) => Payload::Hashed { seed, value },
            (None, None, Some(bits), None, None, None) => Payload::Bits(to_bits(bits)?),
            (None, None, Some(bits), Some(cohort), None, None) => Payload::Cohort { cohort, bits: to_bits(bits)? },
            (Some(seed), Some(value), None, Some(group), None, None) => Payload::Grouped { group, seed, value },
            (None, None, None, None, Some(attributes), Some(values)) => Payload::Sampled { attributes, values },
            _ => {
                return Err(Rejection::Malformed
                    .error("a report carries either value, seed and value, bits, cohort and bits, cohort, seed and value, or attributes and values"))
            }
        })
    }
}

/// A report as it travels from a client to an aggregator.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Wire format version ([`REPORT_VERSION`]).
    pub version: u32,
    /// The resolved protocol, e.g. OLH.
    pub protocol: Protocol,
    /// The ε the report was randomized with.
    pub epsilon: f64,
    /// The domain's fingerprint.
    pub domain: String,
    /// The randomized payload.
    pub payload: Payload,
}

/// A report as JSON carries it.
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub(crate) struct Wire {
    version: u32,
    protocol: String,
    epsilon: f64,
    domain: String,
    #[cfg_attr(feature = "serde", serde(default))]
    seed: Option<u32>,
    #[cfg_attr(feature = "serde", serde(default))]
    value: Option<u64>,
    #[cfg_attr(feature = "serde", serde(default))]
    bits: Option<String>,
    #[cfg_attr(feature = "serde", serde(default))]
    cohort: Option<u32>,
    #[cfg_attr(feature = "serde", serde(default))]
    attributes: Option<Vec<u32>>,
    #[cfg_attr(feature = "serde", serde(default))]
    values: Option<Vec<u64>>,
}

impl Wire {
    /// Reads a report's object by hand, classifying what is wrong as
    /// [`Report::from_json`] does: a `"version"` that is another format's
    /// is refused as such whatever else the object holds, anything else
    /// amiss is malformed. How the full wasm module's Aggregator reads
    /// reports (and the migration, the memos of a JSON state), so that it
    /// links no derived deserializer and no JSON parser of its own.
    fn read(object: &ConfigObject) -> Result<Wire> {
        let malformed = |e: Error| match e {
            Error::MalformedConfig { key, .. } => {
                not_a_report(key.is_some_and(|key| !WIRE_FIELDS.contains(&key.as_str())))
            }
            other => other,
        };
        let version = object.read::<u32>("version").map_err(malformed)?;
        if version != REPORT_VERSION {
            return Err(unsupported_version());
        }
        let fields = || -> Result<Wire> {
            object.only(&WIRE_FIELDS)?;
            Ok(Wire {
                version,
                protocol: object.read("protocol")?,
                epsilon: object.read("epsilon")?,
                domain: object.read("domain")?,
                seed: object.read_optional("seed")?,
                value: object.read_optional("value")?,
                bits: object.read_optional("bits")?,
                cohort: object.read_optional("cohort")?,
                attributes: object.read_optional("attributes")?,
                values: object.read_optional("values")?,
            })
        };
        fields().map_err(malformed)
    }
}

/// One field of a report's wire object.
enum WireValue<'a> {
    Integer(u64),
    Number(f64),
    Text(&'a str),
    Integers(Vec<u64>),
}

impl Wire {
    /// Each field present, in the wire's order: what the JSON writer and (in
    /// wasm) the JS object builder write.
    fn each(&self, f: &mut dyn FnMut(&'static str, WireValue<'_>)) {
        use WireValue::{Integer, Integers, Number, Text};
        f("version", Integer(self.version.into()));
        f("protocol", Text(&self.protocol));
        f("epsilon", Number(self.epsilon));
        f("domain", Text(&self.domain));
        if let Some(seed) = self.seed {
            f("seed", Integer(seed.into()));
        }
        if let Some(value) = self.value {
            f("value", Integer(value));
        }
        if let Some(bits) = &self.bits {
            f("bits", Text(bits));
        }
        if let Some(cohort) = self.cohort {
            f("cohort", Integer(cohort.into()));
        }
        if let Some(attributes) = &self.attributes {
            f("attributes", Integers(attributes.iter().map(|&a| a.into()).collect()));
        }
        if let Some(values) = &self.values {
            f("values", Integers(values.clone()));
        }
    }

    /// The wire object as a plain JS object, fields in the wire's order (as
    /// `JSON.parse` of the report's line gives it, without the text); `None`
    /// if a number cannot be carried exactly (an integer above 2^53).
    /// [`Report::to_fields`].
    #[cfg(all(target_arch = "wasm32", target_os = "unknown", not(js)))]
    fn to_fields(&self) -> Option<Vec<u8>> {
        let mut out = crate::host::Fields(Vec::with_capacity(64));
        let mut exact = true;
        let mut number = |n: u64| {
            exact &= n <= crate::json::write::MAX_SAFE_INTEGER;
            n as f64
        };
        self.each(&mut |key, value| match value {
            WireValue::Integer(n) => out.number(key, number(n)),
            WireValue::Number(x) => out.number(key, x),
            WireValue::Text(s) => out.text(key, s),
            WireValue::Integers(list) => out.numbers(key, list.into_iter().map(&mut number)),
        });
        exact.then_some(out.0)
    }

    #[cfg(js)]
    fn to_js(&self) -> Option<wasm_bindgen::JsValue> {
        use wasm_bindgen::JsValue;
        let mut exact = true;
        let mut number = |n: u64| {
            exact &= n <= crate::json::write::MAX_SAFE_INTEGER;
            JsValue::from_f64(n as f64)
        };
        let mut fields = Vec::with_capacity(6);
        self.each(&mut |key, value| {
            let value = match value {
                WireValue::Integer(n) => number(n),
                WireValue::Number(x) => JsValue::from_f64(x),
                WireValue::Text(s) => JsValue::from_str(s),
                WireValue::Integers(list) => {
                    let array = crate::js::Array::new();
                    list.into_iter().for_each(|n| _ = array.push(&number(n)));
                    array.into()
                }
            };
            fields.push((key, value));
        });
        let object = crate::json::js_object(fields);
        exact.then(|| object.into())
    }
}

impl crate::json::write::ToJson for Wire {
    fn write_json(&self, w: &mut crate::json::write::Writer) {
        w.object(|m| {
            self.each(&mut |key, value| match value {
                WireValue::Integer(n) => m.field(key, &n),
                WireValue::Number(x) => m.field(key, &x),
                WireValue::Text(s) => m.field(key, s),
                WireValue::Integers(list) => m.field(key, &list),
            })
        });
    }
}

/// The fields of a report's wire object.
const WIRE_FIELDS: [&str; 10] =
    ["version", "protocol", "epsilon", "domain", "seed", "value", "bits", "cohort", "attributes", "values"];

/// The error for an object that is not a report: a field it should not
/// have (`unknown`), or one missing or of the wrong type. A fixed text that
/// names neither the field nor its value: a sender's mistake may carry a
/// user's raw value or key, which an error must never repeat (it reaches
/// answers and logs).
fn not_a_report(unknown: bool) -> Error {
    // Short: the client's wasm carries them.
    Rejection::Malformed.error(if unknown { "not a report: an unknown field" } else { "not a report: a missing or mistyped field" })
}

/// The error for anything but a JSON object where a report should be.
fn not_an_object() -> Error {
    Rejection::Malformed.error("not a report: a report is a JSON object (of UTF-8 text)")
}

/// The error for a report of another format version: a fixed text, not
/// the version the sender chose (any number: it could carry a value).
pub fn unsupported_version() -> Error {
    Rejection::UnsupportedVersion.error("unsupported report version")
}

impl Report {
    /// Parses one report, classifying what is wrong with it. Only the shape is
    /// checked here; [`crate::FrequencyOracle::validate`] checks the rest.
    /// Bytes that are not UTF-8, and anything but a JSON object, are
    /// malformed.
    ///
    /// Natively serde_json's derived reader parses it: 2.6 times faster
    /// than the object reader the wasm modules use (GRR, one core: 3.7
    /// million reports/s against 1.4), which gives the same reports and
    /// reasons (a unit test holds the two together).
    ///
    /// ```
    /// use localdp::{Error, Rejection, Report};
    /// let line = r#"{"version":1,"protocol":"grr","epsilon":1.0,"domain":"9e4c0d5a1f3b2e77","value":2}"#;
    /// let report = Report::from_json(line)?;
    /// assert_eq!(report.to_json(), line); // the canonical line
    /// let refused = Report::from_json("[1, 2]").unwrap_err();
    /// assert!(matches!(refused, Error::Rejected { reason: Rejection::Malformed, .. }));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(all(feature = "serde", not(all(target_arch = "wasm32", target_os = "unknown"))))]
    pub fn from_json(text: impl AsRef<[u8]>) -> Result<Report> {
        let text = text.as_ref();
        // A derived struct reader also takes a sequence of the fields.
        if text.trim_ascii_start().starts_with(b"[") {
            return Err(not_an_object());
        }
        let wire: Wire = serde_json::from_slice(text).map_err(|_| {
            #[derive(serde::Deserialize)]
            struct VersionOnly {
                version: u32,
            }
            // Bytes that are not UTF-8 are malformed whatever else they hold:
            // serde_json does not check the strings it skips (a text it reads
            // as a report has none, so only a refused one is checked here).
            if std::str::from_utf8(text).is_err() {
                return not_an_object();
            }
            match serde_json::from_slice::<VersionOnly>(text) {
                Ok(v) if v.version != REPORT_VERSION => unsupported_version(),
                // serde_json's message may quote the unknown field or the
                // wrong-typed value: only its kind is told.
                _ => match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(text) {
                    Ok(object) => not_a_report(object.keys().any(|key| !WIRE_FIELDS.contains(&key.as_str()))),
                    Err(_) => not_an_object(),
                },
            }
        })?;
        Report::from_wire(wire)
    }

    /// Parses one report, classifying what is wrong with it: the JSON
    /// parsed (in wasm by JS's `JSON.parse`), then the object read field by
    /// field.
    #[cfg(not(all(feature = "serde", not(all(target_arch = "wasm32", target_os = "unknown")))))]
    pub fn from_json(text: impl AsRef<[u8]>) -> Result<Report> {
        let object = std::str::from_utf8(text.as_ref()).ok().and_then(crate::json::parse_object);
        Report::from_object(&object.ok_or_else(not_an_object)?)
    }

    /// A report given as a JS object (or any JS value): its own enumerable
    /// properties, read as `JSON.parse` would give them (`undefined` and
    /// non-finite numbers are `null`; `toJSON` is not called).
    #[cfg(js)]
    #[doc(hidden)]
    pub fn from_js(value: &wasm_bindgen::JsValue) -> Result<Report> {
        Report::from_js_entries(crate::json::js_entries(value).as_ref())
    }

    /// A report given as a JS object, from its entries already taken
    /// ([`crate::json::js_entries`]; `None`: it was not an object).
    #[cfg(js)]
    #[doc(hidden)]
    pub fn from_js_entries(entries: Option<&crate::js::Array>) -> Result<Report> {
        Report::from_object(&ConfigObject::from_entries(entries.ok_or_else(not_an_object)?))
    }

    /// A report's object, read by hand ([`Wire::read`]).
    fn from_object(object: &ConfigObject) -> Result<Report> {
        Report::from_wire(Wire::read(object)?)
    }

    fn from_wire(w: Wire) -> Result<Report> {
        if w.version != REPORT_VERSION {
            return Err(unsupported_version());
        }
        let payload = Payload::from_fields(w.seed, w.value, w.bits, w.cohort, w.attributes, w.values, |hex| {
            BitVector::from_hex(&hex)
        })?;
        let protocol = Protocol::from_name(&w.protocol)
            .ok_or_else(|| Rejection::ConfigMismatch.error("report made with a protocol this build does not know"))?;
        Ok(Report { version: w.version, protocol, epsilon: w.epsilon, domain: w.domain, payload })
    }

    /// The report as a JSON object.
    ///
    /// ```
    /// use localdp::{Metric, Report, SimulationRng};
    /// let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#)?;
    /// let report = metric.randomize_text("2", &mut SimulationRng::seed_from_u64(1))?; // simulation only
    /// let value = report.to_json_value();
    /// assert_eq!(value["protocol"], "grr");
    /// assert_eq!(serde_json::from_str::<serde_json::Value>(&report.to_json()).unwrap(), value);
    /// assert_eq!(Report::from_json(value.to_string())?, report);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "serde")]
    pub fn to_json_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json()).expect("a report always serializes")
    }

    /// The report as one line of JSON.
    #[cfg_attr(feature = "serde", doc = "", doc = "See the example on [`Report::to_json_value`].")]
    pub fn to_json(&self) -> String {
        // A report's numbers are indices, seeds and cohorts below 2^53.
        crate::json::write::to_string(&self.to_wire()).expect("a report always serializes")
    }

    /// A report a client stored as JSON (a memo of a state of format 1 to
    /// 4), or `None` if it is not one.
    #[cfg(feature = "json_state")]
    pub(crate) fn from_stored(text: &str) -> Option<Report> {
        Report::from_object(&crate::json::parse_object(text)?).ok()
    }

    /// The report as a client stores it for memoization: its envelope
    /// ([`memo_envelope`]: protocol, ε as its 8 bytes, domain fingerprint)
    /// and payload (a tag, then its numbers and bits) as bytes
    /// (`crate::bytes`). A GRR memo is about 30 bytes, where its JSON was
    /// about 85, and reading it back takes no JSON parser.
    #[doc(hidden)]
    pub fn to_memo(&self) -> Vec<u8> {
        let mut w = memo_envelope(self.protocol, self.epsilon, &self.domain);
        let mut numbers = |tag: u64, numbers: &[u64]| {
            w.uint(tag);
            numbers.iter().for_each(|&x| w.uint(x));
        };
        match &self.payload {
            Payload::Index(v) => numbers(0, &[*v]),
            Payload::Hashed { seed, value } => numbers(1, &[u64::from(*seed), *value]),
            Payload::Grouped { group, seed, value } => numbers(2, &[u64::from(*group), u64::from(*seed), *value]),
            Payload::Bits(bits) => {
                numbers(3, &[]);
                w.bytes(&bits.bytes);
            }
            Payload::Cohort { cohort, bits } => {
                numbers(4, &[u64::from(*cohort)]);
                w.bytes(&bits.bytes);
            }
            Payload::Sampled { attributes, values } => {
                numbers(5, &[attributes.len() as u64]);
                attributes.iter().for_each(|&a| w.uint(u64::from(a)));
                values.iter().for_each(|&v| w.uint(v));
            }
        }
        w.into_body()
    }

    /// The report of a memo [`Report::to_memo`] wrote under this envelope,
    /// or `None` if it is not one (the caller checks the payload against its
    /// metric). `fingerprint` is the metric's domain or range fingerprint
    /// (its id's last part). Public for the tests that write a state as
    /// earlier releases did (their memos were reports' JSON).
    #[doc(hidden)]
    pub fn from_memo(memo: &[u8], protocol: Protocol, epsilon: f64, fingerprint: &str) -> Option<Report> {
        let envelope = memo_envelope(protocol, epsilon, fingerprint).into_body();
        let mut r = ByteReader::body(memo.strip_prefix(envelope.as_slice())?);
        let tag = r.uint().ok()?;
        let count = match tag {
            0 | 4 => 1,
            1 => 2,
            2 => 3,
            3 => 0,
            5 => 2 * r.count().ok()?,
            _ => return None,
        };
        let mut numbers = Vec::new();
        for _ in 0..count {
            numbers.push(r.uint().ok()?);
        }
        let bits = match tag {
            3 | 4 => Some(BitVector { bytes: r.bytes().ok()?.to_vec() }),
            _ => None,
        };
        r.finish().ok()?;
        let small = |x: &u64| u32::try_from(*x).ok();
        let payload = match (tag, numbers.as_slice(), bits) {
            (0, &[v], _) => Payload::Index(v),
            (1, [seed, value], _) => Payload::Hashed { seed: small(seed)?, value: *value },
            (2, [group, seed, value], _) => Payload::Grouped { group: small(group)?, seed: small(seed)?, value: *value },
            (3, _, Some(bits)) => Payload::Bits(bits),
            (4, [cohort], Some(bits)) => Payload::Cohort { cohort: small(cohort)?, bits },
            (_, all, _) => {
                let (wide, values) = all.split_at(all.len() / 2);
                let mut attributes = Vec::with_capacity(wide.len());
                for a in wide {
                    attributes.push(small(a)?);
                }
                Payload::Sampled { attributes, values: values.to_vec() }
            }
        };
        Some(Report { version: REPORT_VERSION, protocol, epsilon, domain: fingerprint.to_string(), payload })
    }

    /// The report as a plain JS object (`JSON.parse` of its line); `None`
    /// if JSON cannot carry it exactly.
    #[cfg(js)]
    #[doc(hidden)]
    pub fn to_js(&self) -> Option<wasm_bindgen::JsValue> {
        self.to_wire().to_js()
    }

    /// The report's fields as bytes ([`crate::host::Fields`]), for the page
    /// of a module without wasm-bindgen to build its object (js/raw.mjs),
    /// as [`Report::to_js`] builds it: each field in the wire's order.
    /// `None` if JSON cannot carry it exactly.
    #[cfg(all(target_arch = "wasm32", target_os = "unknown", not(js)))]
    #[doc(hidden)]
    pub fn to_fields(&self) -> Option<Vec<u8>> {
        self.to_wire().to_fields()
    }

    /// The report as its wire object (the JSON fields, in order).
    pub(crate) fn to_wire(&self) -> Wire {
        let (mut seed, mut value, mut bits, mut cohort, mut attributes, mut values) = (None, None, None, None, None, None);
        match &self.payload {
            Payload::Index(v) => value = Some(*v),
            Payload::Hashed { seed: s, value: v } => (seed, value) = (Some(*s), Some(*v)),
            Payload::Bits(b) => bits = Some(b.to_hex()),
            Payload::Cohort { cohort: c, bits: b } => (cohort, bits) = (Some(*c), Some(b.to_hex())),
            Payload::Grouped { group, seed: s, value: v } => (cohort, seed, value) = (Some(*group), Some(*s), Some(*v)),
            Payload::Sampled { attributes: a, values: v } => (attributes, values) = (Some(a.clone()), Some(v.clone())),
        }
        Wire {
            version: self.version,
            protocol: self.protocol.name().to_string(),
            epsilon: self.epsilon,
            domain: self.domain.clone(),
            seed,
            value,
            bits,
            cohort,
            attributes,
            values,
        }
    }
}

/// Checks a report's envelope against a configuration: format version,
/// protocol, ε (bit for bit) and the domain or range fingerprint.
pub(crate) fn check_envelope(report: &Report, protocol: Protocol, epsilon: f64, fingerprint: &str) -> Result<()> {
    if report.version != REPORT_VERSION {
        Err(unsupported_version())
    } else if report.protocol != protocol {
        Err(Rejection::ConfigMismatch.error(text!("report made with protocol ", quoted(report.protocol.name()), ", expected ", quoted(protocol.name()))))
    } else if report.epsilon.to_bits() != epsilon.to_bits() {
        // Neither ε: the report's is any number its sender chose.
        Err(Rejection::ConfigMismatch.error("report made with another epsilon"))
    } else if report.domain != fingerprint {
        Err(Rejection::ConfigMismatch.error("report made for another domain or range"))
    } else {
        Ok(())
    }
}

/// The envelope a memo begins with: what [`Report::to_memo`] writes before
/// the payload, and what [`Report::from_memo`] compares byte for byte, so
/// that a device reads no protocol name or text back.
fn memo_envelope(protocol: Protocol, epsilon: f64, fingerprint: &str) -> ByteWriter {
    let mut w = ByteWriter::default();
    w.text(protocol.name());
    w.float(epsilon);
    w.text(fingerprint);
    w
}

/// A stored memo's report ([`Report::to_memo`]) if it was made under this
/// configuration (its envelope, the same bytes) and `payload` holds of it;
/// else [`Error::CorruptMemo`], whatever was wrong, as a client sends
/// nothing from such a memo.
pub(crate) fn memo_report(memo: &[u8], protocol: Protocol, epsilon: f64, fingerprint: &str, payload: impl FnOnce(&Payload) -> bool) -> Result<Report> {
    Report::from_memo(memo, protocol, epsilon, fingerprint)
        .filter(|r| payload(&r.payload))
        .ok_or(Error::CorruptMemo)
}

/// A packed bit vector, least significant bit first within each byte.
///
/// ```
/// use localdp::report::BitVector;
/// let bits = BitVector::from_hex("0580")?; // bits 0, 2 and 15
/// assert_eq!(bits.ones().collect::<Vec<_>>(), [0, 2, 15]);
/// assert_eq!((bits.byte_len(), bits.count_ones(), bits.as_bytes()), (2, 3, &[0x05u8, 0x80][..]));
/// assert!(bits.get(2) && !bits.get(1));
/// assert!(bits.fits(16) && !bits.fits(12)); // bit 15 lies in the padding of 12 bits
/// assert_eq!(bits.to_hex(), "0580");
/// assert_eq!(BitVector::zeros(9).to_hex(), "0000");
/// assert!(BitVector::from_hex("058").is_err() && BitVector::from_hex("zz").is_err());
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BitVector {
    bytes: Vec<u8>,
}

impl BitVector {
    /// `len` zero bits.
    ///
    /// See the example on [`BitVector`].
    pub fn zeros(len: usize) -> Self {
        BitVector { bytes: vec![0; len.div_ceil(8)] }
    }

    /// Sets bit `i`, which must be below the length (it panics otherwise;
    /// every caller in the crate sets a bit of a vector it sized). Outside
    /// the crate, [`BitVector::with_ones`] builds a vector.
    pub(crate) fn set(&mut self, i: usize) {
        self.bytes[i / 8] |= 1 << (i % 8);
    }

    /// `len` bits with exactly the bits `ones` set, or `None` if one of them
    /// is not below `len`.
    ///
    /// ```
    /// use localdp::report::BitVector;
    /// let bits = BitVector::with_ones(10, [1, 9]).unwrap();
    /// assert_eq!(bits.to_hex(), "0202");
    /// assert!(bits.get(9) && !bits.get(8) && !bits.get(1000));
    /// assert!(BitVector::with_ones(10, [10]).is_none());
    /// ```
    pub fn with_ones(len: usize, ones: impl IntoIterator<Item = usize>) -> Option<Self> {
        let mut bits = BitVector::zeros(len);
        for i in ones {
            if i >= len {
                return None;
            }
            bits.set(i);
        }
        Some(bits)
    }

    /// Bit `i`; false beyond the end.
    ///
    /// See the example on [`BitVector`].
    pub fn get(&self, i: usize) -> bool {
        self.bytes.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
    }

    /// The number of bytes.
    ///
    /// See the example on [`BitVector`].
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The number of set bits.
    ///
    /// See the example on [`BitVector`].
    pub fn count_ones(&self) -> u64 {
        self.bytes.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    /// True when no bit at or beyond `len` is set (the padding is clean).
    ///
    /// See the example on [`BitVector`].
    pub fn fits(&self, len: usize) -> bool {
        self.bytes.len() == len.div_ceil(8)
            && (len % 8 == 0 || self.bytes.last().is_none_or(|&b| b >> (len % 8) == 0))
    }

    /// The indices of the set bits, in increasing order.
    ///
    /// See the example on [`BitVector`].
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.bytes.iter().enumerate().flat_map(|(i, &byte)| {
            let mut rest = byte;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    i * 8 + bit
                })
            })
        })
    }

    /// The packed bytes (bit `i` in byte `i/8` at position `i%8`): the raw
    /// form of the `bits` column (`localdp::columnar::Bytes`).
    ///
    /// See the example on [`BitVector`].
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The vector of these packed bytes (whose length and padding
    /// validation checks, as for hex).
    ///
    /// ```
    /// use localdp::report::BitVector;
    /// let bits = BitVector::from_bytes(vec![0x02, 0x02]);
    /// assert_eq!((bits.to_hex(), bits.as_bytes()), ("0202".to_string(), &[2u8, 2][..]));
    /// ```
    pub fn from_bytes(bytes: Vec<u8>) -> BitVector {
        BitVector { bytes }
    }

    /// Lower-case hex, two digits per byte.
    ///
    /// See the example on [`BitVector`].
    pub fn to_hex(&self) -> String {
        text!(HexBytes(&self.bytes))
    }

    /// Parses hex (either case); an odd length or a non-hex digit is malformed.
    ///
    /// See the example on [`BitVector`].
    pub fn from_hex(hex: &str) -> Result<Self> {
        if hex.len() % 2 != 0 {
            return Err(Rejection::BadLength.error("bits must hold a whole number of bytes"));
        }
        let bytes = hex_bytes(hex).ok_or_else(|| Rejection::Malformed.error("bits must be hexadecimal"))?;
        Ok(BitVector { bytes })
    }
}

/// Whether a report field is present in a metric's reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// In no report.
    Never,
    /// In every report.
    Always,
    /// In some reports (e.g. a tree's levels with different oracles).
    Sometimes,
}

impl Presence {
    /// Presence in reports that are of one kind or the other.
    fn either(self, other: Presence) -> Presence {
        if self == other {
            self
        } else {
            Presence::Sometimes
        }
    }
}

/// Which wire fields a metric's reports carry (`Metric::report_fields`, the
/// `aggregate` feature's), e.g. for the columns of an Arrow schema of its
/// reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportFields {
    /// `value`.
    pub value: Presence,
    /// `seed`.
    pub seed: Presence,
    /// `cohort`.
    pub cohort: Presence,
    /// `bits`.
    pub bits: Presence,
    /// `Some(w)` when every report's bits are exactly `w` bytes.
    pub bits_width: Option<usize>,
    /// `attributes` and `values`.
    pub sampled: Presence,
}

impl ReportFields {
    /// No field at all (a start to fill in).
    pub const NONE: ReportFields = ReportFields {
        value: Presence::Never,
        seed: Presence::Never,
        cohort: Presence::Never,
        bits: Presence::Never,
        bits_width: None,
        sampled: Presence::Never,
    };

    /// The fields of the payload [`Payload::Index`].
    pub const INDEX: ReportFields = ReportFields { value: Presence::Always, ..ReportFields::NONE };

    /// The fields of the payload [`Payload::Hashed`].
    pub const HASHED: ReportFields = ReportFields { seed: Presence::Always, ..ReportFields::INDEX };

    /// The fields of the payload [`Payload::Grouped`].
    pub const GROUPED: ReportFields = ReportFields { cohort: Presence::Always, ..ReportFields::HASHED };

    /// The fields of the payload [`Payload::Sampled`].
    pub const SAMPLED: ReportFields = ReportFields { sampled: Presence::Always, ..ReportFields::NONE };

    /// The fields of the payload [`Payload::Bits`] of `d` bits.
    ///
    /// With [`ReportFields::cohort_bits`] and [`ReportFields::either`]:
    ///
    /// ```
    /// use localdp::columnar::{Presence, ReportFields};
    /// let bits = ReportFields::bits(12);
    /// assert_eq!((bits.bits, bits.bits_width, bits.cohort), (Presence::Always, Some(2), Presence::Never));
    /// assert_eq!(ReportFields::cohort_bits(12).cohort, Presence::Always);
    /// let mixed = ReportFields::bits(12).either(ReportFields::HASHED); // a tree with OUE and HRR levels
    /// assert_eq!((mixed.bits, mixed.seed, mixed.bits_width), (Presence::Sometimes, Presence::Sometimes, Some(2)));
    /// ```
    pub const fn bits(d: usize) -> ReportFields {
        ReportFields { bits: Presence::Always, bits_width: Some(d.div_ceil(8)), ..ReportFields::NONE }
    }

    /// The fields of the payload [`Payload::Cohort`] of `d` bits.
    ///
    /// See the example on [`ReportFields::bits`].
    pub const fn cohort_bits(d: usize) -> ReportFields {
        ReportFields { cohort: Presence::Always, ..ReportFields::bits(d) }
    }

    /// The fields of reports that are of one shape or the other.
    ///
    /// See the example on [`ReportFields::bits`].
    pub fn either(self, other: ReportFields) -> ReportFields {
        let width = |f: ReportFields| (f.bits != Presence::Never).then_some(f.bits_width);
        ReportFields {
            value: self.value.either(other.value),
            seed: self.seed.either(other.seed),
            cohort: self.cohort.either(other.cohort),
            bits: self.bits.either(other.bits),
            bits_width: match (width(self), width(other)) {
                (Some(a), Some(b)) if a == b => a,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                _ => None,
            },
            sampled: self.sampled.either(other.sampled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Metric, SimulationRng};

    /// The object reader (the memos of JSON states, the full module's
    /// Aggregator; run here over serde_json values, and through `JSON.parse`
    /// by tests/common/readers.rs in wasm) and the native derived reader agree on every
    /// report and on hostile variants of them: the same report, or the same
    /// reason to refuse it (the differences known, in text no client writes,
    /// are listed at `report_reasons_are_the_same_in_every_build`).
    #[test]
    fn stored_reports_read_as_the_aggregator_reads_them() {
        let configs = [
            r#"{"protocol":"grr","epsilon":1,"domain":8}"#,
            r#"{"protocol":"olh","epsilon":1,"domain":8}"#,
            r#"{"protocol":"oue","epsilon":1,"domain":20}"#,
            r#"{"protocol":"dbitflip","epsilon":1,"domain":8,"d":3}"#,
            r#"{"protocol":"rappor","bits":16,"cohorts":4}"#,
            r#"{"protocol":"hcms","epsilon":2,"sketch":{"hashes":4,"width":16}}"#,
            r#"{"protocol":"pem","epsilon":2,"max_length":4}"#,
            r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[0,1],[0,1]]}"#,
            r#"{"protocol":"square_wave","epsilon":1,"range":[0,10],"bins":8}"#,
        ];
        let mut rng = SimulationRng::seed_from_u64(3);
        let mut texts: Vec<String> = ["[]", "[2]", " [1,\"grr\",1.0,\"x\",null,3]", "null", "{}", "{\"version\":1}", "{\"version\":2}", "not json"]
            .map(String::from)
            .into();
        for config in configs {
            let metric = Metric::from_json(config).unwrap();
            let value = if config.contains("range") { "0.5,0.5,0.5" } else { "1" };
            let value = if config.contains("bins") { "5" } else { value };
            let text = metric.randomize_text(value, &mut rng).unwrap().to_json();
            let body = text.strip_suffix('}').unwrap();
            texts.push(text.clone());
            for (from, to) in [
                ("\"version\":1", "\"version\":2"),
                ("\"version\":1", "\"version\":-1"),
                ("\"version\":1,", ""),
                ("\"epsilon\":", "\"epsilon\":\"1\",\"x\":"),
                ("\"protocol\":\"", "\"protocol\":\"no"),
                ("\"domain\":\"", "\"domain\":[\""),
            ] {
                texts.push(text.replacen(from, to, 1));
            }
            for (key, extra) in [("x", "1"), ("seed", "4294967296"), ("seed", "-1"), ("cohort", "null"), ("bits", "\"zz\""), ("values", "[1.5]")] {
                let key = ["\"", key, "\":"].concat();
                if !text.contains(&key) {
                    texts.push([body, ",", &key, extra, "}"].concat());
                }
            }
        }
        let reason = |result: Result<Report>| {
            result.map_err(|e| match e {
                Error::Rejected { reason, .. } => reason,
                other => panic!("not a rejection: {other:?}"),
            })
        };
        for text in &texts {
            let by_object = crate::json::parse_object(text)
                .ok_or_else(|| Rejection::Malformed.error("not an object"))
                .and_then(|object| Report::from_object(&object));
            assert_eq!(reason(by_object), reason(Report::from_json(text)), "{text}");
        }
        assert!(texts.iter().filter(|t| Report::from_stored(t).is_some()).count() >= configs.len() + 4);
    }

    /// A memo reads back as the report it was made of, for every payload;
    /// one cut short or with a byte more is no memo.
    #[test]
    fn memos_read_back_exactly() {
        let mut rng = SimulationRng::seed_from_u64(5);
        let cases = [
            (r#"{"protocol":"grr","epsilon":1,"domain":8}"#, "1"),
            (r#"{"protocol":"olh","epsilon":1,"domain":8}"#, "1"),
            (r#"{"protocol":"oue","epsilon":0.3,"domain":20}"#, "1"),
            (r#"{"protocol":"dbitflip","epsilon":1,"domain":8,"d":3}"#, "1"),
            (r#"{"protocol":"rappor","bits":16,"cohorts":4}"#, "1"),
            (r#"{"protocol":"pem","epsilon":2,"max_length":4}"#, "1"),
            (r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[0,1],[0,1]]}"#, "0.5,0.5,0.5"),
        ];
        let mut payloads = std::collections::HashSet::new();
        for (config, value) in cases {
            let report = Metric::from_json(config).unwrap().randomize_text(value, &mut rng).unwrap();
            payloads.insert(std::mem::discriminant(&report.payload));
            let memo = report.to_memo();
            let read = |memo: &[u8]| Report::from_memo(memo, report.protocol, report.epsilon, &report.domain);
            assert_eq!(read(&memo).as_ref(), Some(&report), "{config}");
            for cut in 0..memo.len() {
                assert_eq!(read(&memo[..cut]), None, "{config}: cut at {cut}");
            }
            assert_eq!(read(&[memo.as_slice(), &[0]].concat()), None, "{config}: a byte more");
        }
        assert_eq!(payloads.len(), 6, "every payload");
        // A sampled attribute is a u32: one past it is no report's memo.
        let sampled = |attribute: u64| {
            let duchi = Protocol::Numeric(crate::protocol::NumericProtocol::Duchi);
            let mut w = memo_envelope(duchi, 1.0, "0011223344556677");
            [5, 1, attribute, 0].into_iter().for_each(|x| w.uint(x));
            Report::from_memo(&w.into_body(), duchi, 1.0, "0011223344556677")
        };
        assert!(sampled(u64::from(u32::MAX)).is_some());
        assert_eq!(sampled(1 << 32), None);
    }
}
