//! Every protocol's name: one enum per family, made by `protocols!`, and
//! [`Protocol`], the protocol of any family as reports carry it.
//!
//! The names sit below everything that needs them (reports, errors, the
//! families' configs), so that a report names its protocol without naming
//! the family that implements it. Each family's module re-exports its enum
//! and adds what its protocols do.

use crate::names::{protocols, ProtocolFamily};

protocols! {
    /// A frequency protocol, as named in configs and reports.
    pub enum FrequencyProtocol("frequency") {
        /// Generalized randomized response (k-RR, direct encoding).
        Grr = "grr",
        /// Symmetric unary encoding (basic one-time RAPPOR).
        Sue = "sue",
        /// Optimized unary encoding.
        Oue = "oue",
        /// Binary local hashing (`g = 2`).
        Blh = "blh",
        /// Optimized local hashing (`g = round(e^ε) + 1`).
        Olh = "olh",
        /// Hadamard response.
        Hr = "hr",
        /// Hadamard randomized response: one randomized Hadamard coefficient.
        Hrr = "hrr",
        /// Subset selection.
        Ss = "ss",
        /// dBitFlip, `"d"` buckets per report (never chosen by `auto`: it trades
        /// variance for repeated collection).
        DBitFlip = "dbitflip",
    }
}

protocols! {
    /// A numeric mechanism, as named in configs and reports.
    pub enum NumericProtocol("numeric") {
        /// Duchi et al.'s one-dimensional mechanism: `±B`.
        Duchi = "duchi",
        /// Discrete Laplace noise on a grid.
        Laplace = "laplace",
        /// The piecewise mechanism on a grid.
        Piecewise = "piecewise",
        /// Piecewise or Duchi, at random.
        Hybrid = "hybrid",
        /// Microsoft's 1BitMean: Duchi's channel, reported as one bit; memoized
        /// with α-point rounding.
        OneBitMean = "one_bit_mean",
    }
}

protocols! {
    /// A protocol for strings from an open domain, as named in configs and
    /// reports.
    pub enum OpenDomainProtocol("open-domain") {
        /// RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014).
        Rappor = "rappor",
    }
}

protocols! {
    /// A sketch or heavy-hitter discovery protocol, as named in configs and
    /// reports.
    pub enum HeavyHitterProtocol("heavy-hitter") {
        /// Apple's count-mean sketch: scores candidate strings.
        Cms = "cms",
        /// Apple's Hadamard count-mean sketch: scores candidate strings.
        Hcms = "hcms",
        /// Prefix extending (Wang et al., IEEE TDSC 2019): discovers.
        Pem = "pem",
        /// TreeHist (Bassily et al., NeurIPS 2017): discovers.
        TreeHist = "treehist",
        /// Apple's sequence fragment puzzle: discovers.
        Sfp = "sfp",
    }
}

protocols! {
    /// A distribution mechanism, as named in configs and reports.
    pub enum DistributionProtocol("distribution") {
        /// Square Wave with EMS (Li et al., SIGMOD 2020).
        SquareWave = "square_wave",
        /// Hierarchical histograms (Cormode, Kulkarni, Srivastava, VLDB 2019).
        Hierarchical = "hierarchical",
    }
}

protocols! {
    /// A key-value mechanism (PCKV, Gu, Li, Cheng, Xiong, Cao, USENIX
    /// Security 2020), as named in configs and reports.
    pub enum KeyValueProtocol("key-value") {
        /// PCKV with generalized randomized response on the joint (key, ±1) domain.
        PckvGrr = "pckv_grr",
        /// PCKV with unary encoding: one ternary symbol per key.
        PckvUe = "pckv_ue",
    }
}

protocols! {
    /// A protocol for the joint histograms (marginals) of events with several
    /// fields, as named in configs and reports.
    pub enum MarginalsProtocol("marginals") {
        /// Each device reports one uniformly drawn `way`-set of attributes,
        /// its cell of their joint domain through OUE.
        MarginalsOue = "marginals_oue",
        /// As `marginals_oue`, through OLH (a seed and a bucket).
        MarginalsOlh = "marginals_olh",
    }
}

/// The protocol of any family, as reports carry it and estimates print it.
///
/// ```
/// use localdp::{FrequencyProtocol, Protocol};
/// let oue = Protocol::from_name("oue").unwrap();
/// assert_eq!((oue, oue.name()), (Protocol::Frequency(FrequencyProtocol::Oue), "oue"));
/// assert!(Protocol::from_name("no such protocol").is_none());
/// // Names are unique across families: each names one protocol.
/// assert!(Protocol::all().all(|p| Protocol::from_name(p.name()) == Some(p)));
/// ```
// Exhaustive on purpose, as are the families' enums: a new protocol or
// family is a compile error at every match that must learn it, in this
// crate and in the aggregation side's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// A frequency oracle.
    Frequency(FrequencyProtocol),
    /// A numeric mechanism.
    Numeric(NumericProtocol),
    /// A protocol for strings from an open domain.
    OpenDomain(OpenDomainProtocol),
    /// A sketch or heavy-hitter discovery protocol.
    HeavyHitter(HeavyHitterProtocol),
    /// A distribution mechanism.
    Distribution(DistributionProtocol),
    /// A key-value mechanism.
    KeyValue(KeyValueProtocol),
    /// A protocol for the marginals of events with several fields.
    Marginals(MarginalsProtocol),
}

impl Protocol {
    /// The name used in configs and reports (unique across families).
    ///
    /// See the example on [`Protocol`].
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Frequency(p) => p.name(),
            Protocol::Numeric(p) => p.name(),
            Protocol::OpenDomain(p) => p.name(),
            Protocol::HeavyHitter(p) => p.name(),
            Protocol::Distribution(p) => p.name(),
            Protocol::KeyValue(p) => p.name(),
            Protocol::Marginals(p) => p.name(),
        }
    }

    /// Every protocol of every family.
    ///
    /// See the example on [`Protocol`].
    pub fn all() -> impl Iterator<Item = Protocol> {
        let frequency = FrequencyProtocol::ALL.iter().map(|&p| Protocol::Frequency(p));
        let numeric = NumericProtocol::ALL.iter().map(|&p| Protocol::Numeric(p));
        let open = OpenDomainProtocol::ALL.iter().map(|&p| Protocol::OpenDomain(p));
        let heavy = HeavyHitterProtocol::ALL.iter().map(|&p| Protocol::HeavyHitter(p));
        let distribution = DistributionProtocol::ALL.iter().map(|&p| Protocol::Distribution(p));
        let key_value = KeyValueProtocol::ALL.iter().map(|&p| Protocol::KeyValue(p));
        let marginals = MarginalsProtocol::ALL.iter().map(|&p| Protocol::Marginals(p));
        frequency.chain(numeric).chain(open).chain(heavy).chain(distribution).chain(key_value).chain(marginals)
    }

    /// The protocol called `name`, in whichever family has it.
    ///
    /// See the example on [`Protocol`].
    pub fn from_name(name: &str) -> Option<Protocol> {
        fn find<P: ProtocolFamily>(name: &str, protocol: fn(P) -> Protocol) -> Option<Protocol> {
            P::from_name(name).map(protocol)
        }
        find(name, Protocol::Frequency)
            .or_else(|| find(name, Protocol::Numeric))
            .or_else(|| find(name, Protocol::OpenDomain))
            .or_else(|| find(name, Protocol::HeavyHitter))
            .or_else(|| find(name, Protocol::Distribution))
            .or_else(|| find(name, Protocol::KeyValue))
            .or_else(|| find(name, Protocol::Marginals))
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
