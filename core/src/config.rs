//! Reading a config object's keys into typed values: the one reader of
//! configs, domains, ranges and a client's state (natively from serde_json
//! values, in wasm from JS objects, both through [`ConfigObject`]), whose
//! errors name the key at fault.

use crate::error::{Error, Result};
use crate::json::{ConfigObject, Field, FromField};
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
    /// `x`, expected one of …`).
    pub(crate) fn only(&self, known: &[&str]) -> Result<()> {
        match self.keys().into_iter().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => {
                let expected = crate::text::join(known.iter().map(|k| ["`", k, "`"].concat()), ", ");
                let detail = ["unknown field ", &["`", &key, "`"].concat(), ", expected one of ", &expected].concat();
                Err(Error::malformed_key(&key, detail))
            }
        }
    }
}

