//! What every frequency protocol provides ([`Mechanism`]): its randomizer,
//! the validation and counting of its reports, and its realized channel
//! ([`Likelihood`], [`ChannelOutputs`]), with the helpers the protocols
//! share. The oracle (`oracle.rs`) adds the config, the envelope and the
//! estimator's parameters on top.

#[cfg(feature = "aggregate")]
use crate::report::ReportFields;
use crate::error::{Rejection, Result};
use crate::report::Payload;
use crate::rng::RngCore;
use crate::text::text;

/// A probability kept as `mantissa · 2^exponent`, so that the likelihood of a
/// thousand-bit report neither underflows nor loses more than an ulp per
/// factor. Used to enumerate realized channels.
///
/// ```
/// use localdp::Likelihood;
/// // 2000 coins of probability 1/2 each: far below the smallest f64, kept exactly.
/// let tiny = (0..2000).fold(Likelihood::new(1.0), |l, _| l.times(0.5));
/// let tinier = tiny.times(0.25);
/// assert!((tiny.log_ratio(tinier) - 4f64.ln()).abs() < 1e-12);
/// assert_eq!(tiny.probability(), 0.0); // underflows as a plain number
/// assert_eq!(Likelihood::new(0.375).probability(), 0.375);
/// assert!(Likelihood::new(0.0).is_zero() && !tiny.is_zero());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Likelihood {
    mantissa: f64,
    exponent: i64,
}

impl Likelihood {
    /// Probability `p`.
    ///
    /// See the example on [`Likelihood`].
    pub fn new(p: f64) -> Self {
        Likelihood { mantissa: 1.0, exponent: 0 }.times(p)
    }

    /// This probability times `factor`.
    ///
    /// See the example on [`Likelihood`].
    pub fn times(self, factor: f64) -> Self {
        let (m, e) = libm::frexp(self.mantissa * factor);
        Likelihood { mantissa: m, exponent: self.exponent + i64::from(e) }
    }

    /// `ln(self / other)`.
    ///
    /// See the example on [`Likelihood`].
    pub fn log_ratio(self, other: Likelihood) -> f64 {
        libm::log(self.mantissa / other.mantissa)
            + (self.exponent - other.exponent) as f64 * std::f64::consts::LN_2
    }

    /// The probability as a plain number (0 if it underflows).
    ///
    /// See the example on [`Likelihood`].
    pub fn probability(self) -> f64 {
        libm::ldexp(self.mantissa, self.exponent.clamp(-2000, 2000) as i32)
    }

    /// True for probability zero.
    ///
    /// See the example on [`Likelihood`].
    pub fn is_zero(self) -> bool {
        self.mantissa == 0.0
    }
}

/// What every protocol provides; the oracle adds the config checks, the report
/// envelope and the estimator on top.
#[doc(hidden)]
pub trait Mechanism: Send + Sync {
    /// The randomized payload for the value at `index`.
    fn randomize(&self, index: usize, rng: &mut dyn RngCore) -> Payload;
    /// Checks the payload's shape and ranges.
    fn validate(&self, payload: &Payload) -> Result<()>;
    /// Adds a validated payload to the running counts.
    #[cfg(feature = "aggregate")]
    fn accumulate(&self, payload: &Payload, counts: &mut [u64]);
    /// The number of running counts (`d`, or `K` for Hadamard response).
    fn counts_len(&self) -> usize;
    /// How the aggregator counts this protocol's reports from columns (and
    /// so which wire fields they carry): the same validation and counts as
    /// [`Mechanism::validate`] and [`Mechanism::accumulate`].
    #[cfg(feature = "aggregate")]
    fn kernel(&self) -> Kernel<'_>;
    /// `S_v` for every value from the running counts of `n` reports.
    #[cfg(feature = "aggregate")]
    fn support_counts(&self, counts: &[u64], _n: u64) -> Vec<f64> {
        counts.iter().map(|&c| c as f64).collect()
    }
    /// The realized `(p*, q*)`.
    fn support_probabilities(&self) -> (f64, f64);
    /// `P[payload | value at index]` under the realized channel.
    #[cfg(feature = "aggregate")]
    fn likelihood(&self, index: usize, payload: &Payload) -> Likelihood;
    /// The ε its channel realizes when built at `epsilon`
    /// ([`crate::metric::Kind::realized_epsilon`]): `epsilon`, but where a
    /// report cannot tell two values apart by the whole of it.
    #[cfg(feature = "aggregate")]
    fn realized_epsilon(&self, epsilon: f64) -> f64 {
        epsilon
    }
    /// The payload's size in bits, for `auto`'s tie-break.
    fn report_bits(&self) -> u64;
    /// False for protocols `auto` must not pick (they trade variance for
    /// something else).
    fn chosen_by_auto(&self) -> bool {
        true
    }
    /// True for protocols that sample buckets and so take `"d"`.
    fn samples_buckets(&self) -> bool {
        false
    }
    /// Parameters beyond ε and the domain that change what a report means;
    /// they go into the fingerprint.
    fn identity(&self) -> Option<String> {
        None
    }
    /// Outputs for the exact channel checks: every output where the set is
    /// small, otherwise outputs drawn from the mechanism on varied inputs.
    #[cfg(feature = "aggregate")]
    fn channel_outputs(&self, d: usize, rng: &mut dyn RngCore) -> ChannelOutputs<Payload> {
        ChannelOutputs::Sampled(sampled_outputs(self, d, 64, rng))
    }
    /// Checks counts read from state bytes (each already at most `n`):
    /// protocols whose reports add exactly one count check the total.
    #[cfg(feature = "aggregate")]
    fn check_counts(&self, _counts: &[u64], _n: u64) -> Result<()> {
        Ok(())
    }
    /// Memoization: what an install draws once and keeps.
    fn memo_draws(&self, _rng: &mut dyn RngCore) -> Vec<u64> {
        Vec::new()
    }
    /// Memoization: whether stored draws fit this configuration.
    fn memo_draws_valid(&self, draws: &[u64]) -> bool {
        draws.is_empty()
    }
    /// Memoization: values with the same key share one permanent response.
    fn memo_key(&self, index: usize, _draws: &[u64]) -> String {
        text!(index)
    }
    /// Memoization: the permanent response for the value at `index`.
    fn randomize_memoized(&self, index: usize, _draws: &[u64], rng: &mut dyn RngCore) -> Payload {
        self.randomize(index, rng)
    }
    /// Memoization with an instantaneous step: the realized chain, for the
    /// tests that enumerate the joint channel of a memo's reports.
    #[cfg(feature = "aggregate")]
    fn memo_chain(&self) -> Option<MemoChain> {
        None
    }
    /// Memoization with an instantaneous step: the ε of the joint channel
    /// of `reports` reports of one permanent response, rounded up; `None`
    /// without a step (every report is the permanent response).
    fn memo_epsilon(&self, _reports: u64) -> Option<f64> {
        None
    }
    /// Memoization: the payload sent for a (validated) permanent response;
    /// the permanent response itself unless the protocol has an
    /// instantaneous step.
    fn instantaneous(&self, permanent: &Payload, _rng: &mut dyn RngCore) -> Payload {
        permanent.clone()
    }
}

/// A longitudinal protocol's realized chain: a permanent response, then an
/// instantaneous step on every report.
#[cfg(feature = "aggregate")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoChain {
    /// L-GRR, LOLOHA: `m`-ary randomized response twice.
    Symbols {
        /// The symbols: the domain's size, or LOLOHA's buckets `g`.
        m: u64,
        /// `(P[s = x], P[s = y])` for the permanent response `s` of `x ≠ y`.
        permanent: (f64, f64),
        /// The same for the step from the permanent response to a report.
        step: (f64, f64),
    },
    /// L-SUE, L-OSUE: a permanent bit vector, then each bit flipped on
    /// every report.
    Bits {
        /// `(P[0], P[1])` of the value's own permanent bit.
        own: (f64, f64),
        /// `(P[0], P[1])` of every other permanent bit.
        other: (f64, f64),
        /// The probability that a report flips a permanent bit.
        flip: f64,
    },
}

/// How a frequency protocol's reports are counted from columns
/// (`aggregate/kernels.rs`); each variant states the validation and the
/// counting its protocols' [`Mechanism::validate`] and
/// [`Mechanism::accumulate`] do, one report at a time.
#[cfg(feature = "aggregate")]
#[derive(Debug, Clone, Copy)]
pub enum Kernel<'a> {
    /// `value`: an index, out of range from `range` on, adding one to its
    /// own count (GRR, HR).
    Index {
        /// The number of indices.
        range: u64,
    },
    /// `seed` and `value`: local hashing's bucket, out of range from `g` on,
    /// adding one to the count of every key that hashes to it under the seed.
    Hashed {
        /// The buckets.
        g: u64,
        /// The domain's hash keys, one per count.
        keys: &'a [u64],
    },
    /// `seed`: a Hadamard column below `k`; `value`: a bit (else out of
    /// range); adds one to count `2·seed + value` (HRR).
    Coefficient {
        /// The Hadamard columns.
        k: u64,
    },
    /// `bits`: exactly `d` bits with clean padding (else a bad length),
    /// with exactly `weight` ones when given (else a bad subset size);
    /// adds one to the count of every set bit (SUE, OUE, SS).
    Bits {
        /// The bits of a report.
        d: usize,
        /// The ones every report has (subset selection's `k`).
        weight: Option<usize>,
    },
    /// `attributes` and `values` (dBitFlip): validated and counted report
    /// by report.
    Sampled,
}

#[cfg(feature = "aggregate")]
impl Kernel<'_> {
    /// The wire fields of the reports.
    pub(super) fn report_fields(self) -> ReportFields {
        match self {
            Kernel::Index { .. } => ReportFields::INDEX,
            Kernel::Hashed { .. } | Kernel::Coefficient { .. } => ReportFields::HASHED,
            Kernel::Bits { d, .. } => ReportFields::bits(d),
            Kernel::Sampled => ReportFields::SAMPLED,
        }
    }
}

/// `⌈log2 n⌉` for `n ≥ 2`, in integers (so native and wasm agree).
pub(super) fn ceil_log2(n: u64) -> u64 {
    u64::from(64 - (n - 1).leading_zeros())
}

/// Checks a bit-vector payload's length and padding.
pub(super) fn validate_bits(payload: &Payload, d: usize) -> Result<&crate::report::BitVector> {
    match payload {
        Payload::Bits(bits) if bits.fits(d) => Ok(bits),
        Payload::Bits(_) => Err(Rejection::BadLength
            .error(text!("expected ", d, " bits as ", d.div_ceil(8) * 2, " hex digits with clean padding"))),
        _ => Err(Rejection::Malformed.error("expected bits")),
    }
}

/// Adds one to the count of every set bit.
pub(super) fn count_bits(payload: &Payload, counts: &mut [u64]) {
    if let Payload::Bits(bits) = payload {
        for i in bits.ones() {
            counts[i] += 1;
        }
    }
}

/// The outputs of a channel to examine in an exact check.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChannelOutputs<T> {
    /// Every output the mechanism can produce.
    Complete(Vec<T>),
    /// Outputs drawn from the mechanism itself (the set is too large).
    Sampled(Vec<T>),
}

impl<T> ChannelOutputs<T> {
    /// The outputs, whichever kind.
    #[cfg_attr(feature = "aggregate", doc = "", doc = "See the example on [`FrequencyOracle::likelihood`](crate::FrequencyOracle::likelihood).")]
    pub fn into_vec(self) -> Vec<T> {
        match self {
            ChannelOutputs::Complete(v) | ChannelOutputs::Sampled(v) => v,
        }
    }
}

/// `count` payloads drawn from varied inputs.
pub(super) fn sampled_outputs<M: Mechanism + ?Sized>(m: &M, d: usize, count: usize, rng: &mut dyn RngCore) -> Vec<Payload> {
    (0..count).map(|i| m.randomize((i * 7919) % d, rng)).collect()
}

/// Every `d`-bit vector (of `weight` ones, if given).
pub(super) fn all_bit_vectors(d: usize, weight: Option<usize>) -> Vec<Payload> {
    (0u64..1 << d)
        .filter(|m| weight.is_none_or(|w| m.count_ones() as usize == w))
        .map(|m| {
            let mut bits = crate::report::BitVector::zeros(d);
            (0..d).filter(|i| m >> i & 1 == 1).for_each(|i| bits.set(i));
            Payload::Bits(bits)
        })
        .collect()
}

/// State counts of protocols whose every report adds exactly one count.
pub(super) fn check_one_count_per_report(counts: &[u64], n: u64) -> Result<()> {
    if counts.iter().map(|&c| u128::from(c)).sum::<u128>() == u128::from(n) {
        Ok(())
    } else {
        Err(crate::error::StateError::Inconsistent { what: "the counts do not add up to the number of reports" }.into())
    }
}

/// Checks an index payload against its range.
pub(super) fn validate_index(payload: &Payload, range: u64) -> Result<u64> {
    match payload {
        Payload::Index(v) if *v < range => Ok(*v),
        Payload::Index(_) => Err(Rejection::OutOfRange.error(text!("value must be below ", range))),
        _ => Err(Rejection::Malformed.error("expected a single value")),
    }
}


/// An oracle's payload with the group a device drew (a tree level, a set
/// of attributes): OUE's bits as `cohort` and `bits`, a seed and value
/// (OLH, HRR) as `group`, `seed` and `value`.
pub(crate) fn in_group(group: u32, payload: Payload) -> Payload {
    match payload {
        Payload::Bits(bits) => Payload::Cohort { cohort: group, bits },
        Payload::Hashed { seed, value } => Payload::Grouped { group, seed, value },
        other => other,
    }
}

/// The group and the oracle's payload of a report made by [`in_group`];
/// `what` names the group in the error (`"the level"`).
pub(crate) fn of_group(payload: &Payload, what: &str) -> Result<(usize, Payload)> {
    match payload {
        Payload::Cohort { cohort, bits } => Ok((*cohort as usize, Payload::Bits(bits.clone()))),
        Payload::Grouped { group, seed, value } => Ok((*group as usize, Payload::Hashed { seed: *seed, value: *value })),
        _ => Err(Rejection::Malformed.error(text!("expected cohort (", what, ") with bits, or with seed and value"))),
    }
}
