//! Reading a config object's keys into typed values: the one reader of
//! configs, domains, ranges and a client's state (natively from serde_json
//! values, in wasm from JS objects, both through [`ConfigObject`]), whose
//! errors name the key at fault.

use crate::error::{Error, Result};
use crate::json::{ConfigObject, Field, FromField};
use crate::settings::CLIENT_KEYS;
use crate::text::text;

/// `Deserialize` for a type the crate reads by hand (for the Rust API's
/// users: configs, their domains and ranges, a client's state): JSON data
/// through the type's reader, the one way it is read.
#[cfg(feature = "serde")]
pub(crate) fn deserialize_field<'de, D, T>(deserializer: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: FromField,
{
    use serde::de::Error;
    let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
    let field = Field::from_value(&value).ok_or_else(|| D::Error::custom("a number JSON cannot carry exactly"))?;
    T::from_field(field).map_err(D::Error::custom)
}

/// `Deserialize` of a type read by hand ([`deserialize_field`]); given the
/// function that reads it from an object, its [`FromField`] too.
macro_rules! read_by_hand {
    ($type:ty) => {
        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                $crate::config::deserialize_field(d)
            }
        }
    };
    ($type:ty, $read:path) => {
        impl $crate::json::FromField for $type {
            fn from_field(field: $crate::json::Field) -> std::result::Result<Self, String> {
                $crate::config::object_field(field, $read)
            }
        }
        $crate::config::read_by_hand!($type);
    };
}
pub(crate) use read_by_hand;

/// An object read by `read` as a field's value (a config, a nested
/// config, a state): its errors' details, or a message for a field that is
/// not an object. The readers report shapes only (malformed configs); any
/// other error is named by its code, as a wasm error debugs: its message
/// would link every message's text into the client's module.
pub(crate) fn object_field<T>(field: Field, read: impl FnOnce(&ConfigObject) -> Result<T>) -> std::result::Result<T, String> {
    match field {
        Field::Object(object) => read(&object).map_err(|e| match e {
            Error::MalformedConfig { detail, .. } => detail,
            other => text!("localdp error ", u32::from(other.code())),
        }),
        other => Err(other.invalid("an object")),
    }
}

impl ConfigObject {
    /// The required field `key` as a `T`.
    pub(crate) fn read<T: FromField>(&self, key: &str) -> Result<T> {
        match self.get(key) {
            Field::Missing => Err(Error::malformed_key(key, T::missing(key))),
            field => T::from_field(field).map_err(|detail| Error::malformed_key(key, detail)),
        }
    }

    /// The field `key` as a `T`, `default` if it is absent (`null` is not
    /// absent: serde's `#[serde(default)]`).
    pub(crate) fn read_or<T: FromField>(&self, key: &str, default: T) -> Result<T> {
        match self.get(key) {
            Field::Missing => Ok(default),
            field => T::from_field(field).map_err(|detail| Error::malformed_key(key, detail)),
        }
    }

    /// The optional field `key` as a `T` (`None` if absent or `null`).
    pub(crate) fn read_optional<T: FromField>(&self, key: &str) -> Result<Option<T>> {
        match self.get(key) {
            Field::Missing | Field::Null => Ok(None),
            field => T::from_field(field).map(Some).map_err(|detail| Error::malformed_key(key, detail)),
        }
    }

    /// Refuses a key outside `known`, in serde's words (`unknown field
    /// `x`, expected one of …`), naming the known key it is a typo of, if
    /// one is close (`did you mean `memoize`?`).
    pub(crate) fn only(&self, known: &[&str]) -> Result<()> {
        match self.keys().into_iter().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => {
                let expected = crate::text::join(known.iter().map(|k| ["`", k, "`"].concat()), ", ");
                let mut detail = ["unknown field `", &key, "`, expected one of ", &expected].concat();
                if let Some(meant) = closest(&key, known) {
                    detail = [&detail, "; did you mean `", meant, "`?"].concat();
                }
                Err(Error::malformed_key(&key, detail))
            }
        }
    }

    /// [`ConfigObject::only`] for a metric's config: its family's keys
    /// `known` and the client's keys of every family (memoize, budget),
    /// which the family never sees (they are set aside before).
    pub(crate) fn only_config(&self, known: &[&str]) -> Result<()> {
        self.only(&[known, &CLIENT_KEYS[..2]].concat())
    }
}

/// The key of `known` that `key` is most likely a typo of: at most two
/// edits away (an insertion, a deletion, a substitution, two adjacent
/// letters swapped; letter case is free), and fewer than a third of its
/// letters.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    // The first of the fewest edits.
    let mut best: Option<(usize, &'a str)> = None;
    for &k in known {
        let n = edits(key.as_bytes(), k.as_bytes());
        if n <= 2 && 3 * n < k.len() && best.is_none_or(|(fewest, _)| n < fewest) {
            best = Some((n, k));
        }
    }
    best.map(|(_, k)| k)
}

/// The optimal string alignment distance between `a` and `b` (Levenshtein's,
/// with a swap of two adjacent bytes as one edit), ASCII letter case aside.
fn edits(a: &[u8], b: &[u8]) -> usize {
    let same = |x: u8, y: u8| x.eq_ignore_ascii_case(&y);
    // Three rows of the table: two rows back, the last, and this one.
    let mut before: Vec<usize> = Vec::new();
    let mut last = vec![0; b.len() + 1];
    for (j, cell) in last.iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(!same(a[i - 1], b[j - 1]));
            row[j] = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]) {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

    fn detail(config: &str) -> String {
        match Metric::from_json(config) {
            Err(Error::MalformedConfig { detail, .. }) => detail,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unknown_key_lists_every_key_and_the_one_meant() {
        let typo = detail(r#"{"protocol":"grr","epsilon":1,"domain":4,"memoise":true}"#);
        for key in ["protocol", "epsilon", "domain", "d", "instantaneous_epsilon", "memoize", "budget"] {
            assert!(typo.contains(&["`", key, "`"].concat()), "{key}: {typo}");
        }
        assert!(typo.ends_with("; did you mean `memoize`?"), "{typo}");
        let numeric = detail(r#"{"protocol":"auto","epsilon":1,"range":[0,1],"Granularity":8,"budgett":{}}"#);
        assert!(numeric.contains("`granularity`, `memoize`, `budget`") && numeric.contains("did you mean `"), "{numeric}");
        // Nothing close: no guess.
        assert!(!detail(r#"{"protocol":"grr","epsilon":1,"domain":4,"colour":1}"#).contains("did you mean"));
    }

    /// `-0` in a config's text is `0`, as the wasm build reads it (through
    /// `JSON.stringify`): one metric, one fingerprint, one answer.
    #[test]
    fn minus_zero_reads_as_zero() {
        let id = |config: &str| Metric::from_json(config).map(|m| m.id());
        assert_eq!(id(r#"{"protocol":"duchi","epsilon":1,"range":[-0,1]}"#), id(r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#));
        assert_eq!(id(r#"{"protocol":"duchi","epsilon":1,"range":[-0.0,1]}"#), id(r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#));
        assert_eq!(id(r#"{"protocol":"grr","epsilon":1,"domain":-0}"#), id(r#"{"protocol":"grr","epsilon":1,"domain":0}"#));
        assert_eq!(id(r#"{"protocol":"grr","epsilon":-0,"domain":4}"#), id(r#"{"protocol":"grr","epsilon":0,"domain":4}"#));
    }

    /// The client-only keys' shapes are read before any of their values is
    /// checked, so that a page that reads the shape itself (the GRR
    /// module's, js/raw.mjs) refuses a config as the core does.
    #[test]
    fn a_budget_of_the_wrong_shape_is_refused_before_its_values_are_checked() {
        let error = |config: &str| Metric::from_json(config).unwrap_err();
        let shape = error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":-1,"window":5}}"#);
        assert!(matches!(shape, Error::MalformedConfig { key: Some(ref key), .. } if key == "budget"), "{shape:?}");
        let extra = error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1w","zeta":0}}"#);
        assert!(matches!(extra, Error::MalformedConfig { .. }), "{extra:?}");
        let delta = error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":0,"window":"1d","delta":"x"}}"#);
        assert!(matches!(delta, Error::MalformedConfig { key: Some(ref key), .. } if key == "budget.delta"), "{delta:?}");
        // Every shape right: the values, in order.
        let value = error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":0,"window":"1w"}}"#);
        assert!(matches!(value, Error::InvalidConfig { parameter: "budget.epsilon", .. }), "{value:?}");
    }

    #[test]
    fn a_close_key_is_two_edits_away_at_most() {
        assert_eq!(edits(b"memoise", b"memoize"), 1);
        assert_eq!(edits(b"domian", b"domain"), 1);
        assert_eq!(edits(b"epsilion", b"epsilon"), 1);
        assert_eq!(edits(b"", b"abc"), 3);
        assert_eq!(edits(b"kitten", b"sitting"), 3);
        assert_eq!(edits(b"Domian", b"dOMAIN"), 1, "letter case is free");
        let known = ["protocol", "epsilon", "domain", "d", "memoize", "budget"];
        assert_eq!(closest("EPSILON", &known), Some("epsilon"));
        assert_eq!(closest("buget", &known), Some("budget"));
        assert_eq!(closest("x", &known), None, "one letter is no evidence");
        assert_eq!(closest("protocols_", &known), Some("protocol"));
        assert_eq!(closest("values", &known), None);
        assert_eq!(closest("abcz", &["abcx", "abcy"]), Some("abcx"), "the first of the fewest edits");
        assert_eq!(closest("abcdefz", &["abcdexy", "abcdefy"]), Some("abcdefy"), "fewer edits after more");
    }
}
