//! Protocol names, written once.
//!
//! Each family of protocols is one enum made by `protocols!`: the list in
//! its invocation is the only place a protocol's name is spelled. serde, the
//! CLI's value lists, `Display`/`FromStr` and the error messages that list
//! the accepted names all read it from there. A config may also say
//! `"auto"`, which is [`Selection::Auto`] over any family.

use crate::json::{Field, FromField};
use crate::text::{display_as_piece, put, text, Piece};
use std::fmt;
use std::str::FromStr;

/// What every protocol-name enum provides (made by the crate's `protocols!` macro).
pub trait ProtocolFamily: Copy + Eq + fmt::Debug + fmt::Display + FromStr + 'static {
    /// Every protocol of the family, in declaration order.
    const ALL: &'static [Self];
    /// The family as named in error messages, e.g. `"frequency"`.
    const FAMILY: &'static str;
    /// The names of [`ProtocolFamily::ALL`], in its order.
    const NAMES: &'static [&'static str];
    /// The name used in configs, reports and on the command line.
    fn name(self) -> &'static str;
    /// Every name, comma-separated, for messages.
    fn names() -> String {
        crate::text::join(Self::NAMES.iter().copied(), ", ")
    }
    /// The protocol called `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        position(Self::NAMES, name).map(|i| Self::ALL[i])
    }
}

/// Where `name` is in `names`: one function for every family, not one
/// search per family in the wasm modules.
fn position(names: &[&str], name: &str) -> Option<usize> {
    names.iter().position(|n| *n == name)
}

/// A name that no protocol of the family has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProtocol {
    /// The family that was asked.
    pub family: &'static str,
    /// The names it accepts.
    pub expected: String,
}

impl Piece for UnknownProtocol {
    fn put(&self, out: &mut String) {
        put!(out, "not a ", self.family, " protocol (one of ", self.expected, ")");
    }
}

display_as_piece!(UnknownProtocol);

impl std::error::Error for UnknownProtocol {}

/// A config's protocol name, read as its `FromStr` reads it.
pub(crate) fn protocol_field<T: std::str::FromStr<Err = UnknownProtocol>>(
    field: Field,
) -> std::result::Result<T, String> {
    String::from_field(field)?.parse().map_err(|e: UnknownProtocol| text!(e))
}

/// Declares a family of protocols: the enum, its names, `Display`,
/// `FromStr` and serde, all from one list.
///
/// ```ignore
/// protocols! {
///     /// The family.
///     pub enum Colour("colour") {
///         /// Red.
///         Red = "red",
///     }
/// }
/// ```
macro_rules! protocols {
    ($(#[$meta:meta])* pub enum $name:ident($family:literal) { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $crate::names::ProtocolFamily for $name {
            const ALL: &'static [Self] = &[$($name::$variant,)+];
            const NAMES: &'static [&'static str] = &[$($text,)+];
            const FAMILY: &'static str = $family;
            fn name(self) -> &'static str {
                <Self as $crate::names::ProtocolFamily>::NAMES[self as usize]
            }
        }

        impl $name {
            /// The name used in configs, reports and on the command line.
            pub fn name(self) -> &'static str {
                $crate::names::ProtocolFamily::name(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::names::UnknownProtocol;
            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                <Self as $crate::names::ProtocolFamily>::from_name(s).ok_or_else(|| $crate::names::UnknownProtocol {
                    family: $family,
                    expected: <Self as $crate::names::ProtocolFamily>::names(),
                })
            }
        }

        #[cfg(feature = "serde")]
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl $crate::json::FromField for $name {
            fn from_field(field: $crate::json::Field) -> ::std::result::Result<Self, ::std::string::String> {
                $crate::names::protocol_field(field)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use protocols;

/// A protocol as a config names it: one of the family, or `"auto"` (the
/// best for the config, measured by the family's own rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selection<P> {
    /// Let the library choose.
    Auto,
    /// This protocol.
    Fixed(P),
}

impl<P: ProtocolFamily> Selection<P> {
    /// The name a config gives: the protocol's, or `"auto"`.
    ///
    /// ```
    /// use localdp::{FrequencyProtocol, Selection};
    /// assert_eq!(Selection::Fixed(FrequencyProtocol::Olh).name(), "olh");
    /// assert_eq!(Selection::<FrequencyProtocol>::Auto.name(), "auto");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Selection::Auto => "auto",
            Selection::Fixed(p) => p.name(),
        }
    }

    /// Every name a config may give: the family's protocols, then `auto`.
    pub(crate) fn names() -> String {
        text!(P::names(), ", auto")
    }
}

impl<P: ProtocolFamily> fmt::Display for Selection<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<P: ProtocolFamily> FromStr for Selection<P> {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        if s == "auto" {
            return Ok(Selection::Auto);
        }
        P::from_name(s).map(Selection::Fixed).ok_or_else(|| UnknownProtocol {
            family: P::FAMILY,
            expected: Self::names(),
        })
    }
}

#[cfg(feature = "serde")]
impl<P: ProtocolFamily> serde::Serialize for Selection<P> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<P: ProtocolFamily> FromField for Selection<P> {
    fn from_field(field: Field) -> Result<Self, String> {
        protocol_field(field)
    }
}

#[cfg(feature = "serde")]
impl<'de, P: ProtocolFamily> serde::Deserialize<'de> for Selection<P> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
