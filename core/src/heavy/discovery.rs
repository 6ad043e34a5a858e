//! Heavy hitters without a dictionary: prefix extending (PEM, Wang, Li,
//! Jha, IEEE TDSC 2019) and TreeHist (Bassily, Nissim, Stemmer, Thakurta,
//! NeurIPS 2017), on one engine.
//!
//! A value of at most `L` bytes of UTF-8 is padded to exactly `L` bytes with
//! `0xFF`, a byte UTF-8 never uses, so the padded string says where the value
//! ends. The padded string is read in levels of `s` bits (PEM: `s = 8`, one
//! byte per level; TreeHist: `s = 1`, the binary prefix tree), `L·8/s`
//! levels. A device draws one level `i` uniformly (kept by memoization) and
//! reports the prefix of its first `(i+1)·s` bits by optimized local hashing
//! (OLH: a fresh 32-bit seed picks the hash into `g = round(e^ε)+1` buckets,
//! then `g`-ary randomized response). The level is independent of the
//! value, so the report's ε is OLH's.
//!
//! The aggregator walks the levels: the survivors of level `i−1` are
//! extended by every `s`-bit symbol (only by padding once a prefix holds a
//! whole `0xFF` byte, never into bytes that are not a UTF-8 prefix, and
//! never into a complete value that is not UTF-8), each extension is scored
//! with level `i`'s reports by the OLH estimator `ĉ = (S − N/g)/(p − 1/g)`,
//! and
//!
//! * PEM keeps the `2·top` best;
//! * TreeHist keeps the prefixes significantly above zero (the estimate
//!   above 1.96 null standard errors) and the complete values (tested at
//!   the end), at most `2·top`.
//!
//! A prefix that holds its padding (or all `L` bytes) identifies its value,
//! so from the level where a value is complete on, every level's reports
//! measure that very value. But the survivors are the best of thousands of
//! noisy scores: reports that kept a value overstate it, and cannot also
//! estimate it. So every level's reports are split in two halves by their
//! seed's top bit (uniform and independent of the value: the client does
//! not change). From the level where a value is complete on, the first
//! half's supports are pooled (`S`, `N` summed) to score it against the
//! other extensions, and the second half's are pooled to estimate it: the
//! OLH estimator over the held-out reports, unbiased for the value's count
//! among them whatever kept the value (TreeHist likewise estimates the
//! values found with devices that did not grow the prefix tree). The
//! frequency is `ĉ/N` with variance
//! `[N q(1−q)/(p−q)² + c(1−p−q)/(p−q)]/N² + f(1−f)/N·(1−N/n)` (the last
//! term: which devices are among the held-out reports). The final list is
//! the survivors after the last level whose held-out estimate is
//! significantly above zero (Bonferroni, α = 0.05 over the survivors),
//! ranked by that estimate.

use crate::error::{Rejection, Result};
use crate::frequency::{channel::Likelihood, grr::GeneralizedRandomizedResponse, local_hashing::LocalHashing};
use crate::hash::{bucket, key64, mix64};
use crate::report::Payload;
use crate::rng::{uniform_below, RngCore};
use crate::text::text;

/// How a level's extensions are pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pruning {
    /// The `2·top` best (PEM).
    Best,
    /// The significant ones, at most `2·top` (TreeHist).
    Significant,
}

/// A configured PEM or TreeHist mechanism.
#[derive(Debug, Clone)]
pub struct Discovery {
    pub(super) step: u32,
    pub(super) max_length: u32,
    pub(super) top: usize,
    pub(super) pruning: Pruning,
    pub(super) grr: GeneralizedRandomizedResponse,
}

/// What the aggregation side (`localdp`) reads of it.
#[doc(hidden)]
impl Discovery {
    /// The `pruning` field.
    pub fn pruning(&self) -> &Pruning {
        &self.pruning
    }
    /// The `grr` field.
    pub fn grr(&self) -> &GeneralizedRandomizedResponse {
        &self.grr
    }
}

/// The padding byte: never part of UTF-8 (PEM, TreeHist and SFP pad values
/// to `max_length` with it).
pub const PAD: u8 = 0xFF;

impl Discovery {
    /// For a validated ε, `step` bits per level (8 or 1), values of at most
    /// `max_length` bytes, and the `top` values reported.
    pub(crate) fn new(epsilon: f64, step: u32, max_length: u32, top: usize, pruning: Pruning) -> Self {
        let grr = GeneralizedRandomizedResponse::new(epsilon, LocalHashing::optimal_g(epsilon));
        Discovery { step, max_length, top, pruning, grr }
    }

    /// The number of levels (the groups a device draws from).
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn levels(&self) -> u32 {
        self.max_length * 8 / self.step
    }

    /// The values the aggregator reports.
    pub fn top(&self) -> usize {
        self.top
    }

    /// Bits per level: 8 (PEM) or 1 (TreeHist).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// `g`, the OLH buckets.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn buckets(&self) -> u64 {
        self.grr.symbols()
    }

    /// The longest value, in bytes.
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn max_length(&self) -> usize {
        self.max_length as usize
    }

    /// The hash key of level `level`'s prefix of `value` (at most
    /// `max_length` bytes).
    ///
    /// See the example on [`crate::HeavyHitterMetric`].
    pub fn prefix_key(&self, value: &str, level: u32) -> u64 {
        let mut padded = value.as_bytes().to_vec();
        padded.resize(self.max_length as usize, PAD);
        let bits = (level + 1) * self.step;
        prefix_key(&prefix(&padded, bits), bits)
    }

    /// The randomized payload of `value` (at most `max_length` bytes) at
    /// level `level`.
    pub(crate) fn randomize(&self, value: &str, level: u32, rng: &mut dyn RngCore) -> Payload {
        let seed = rng.next_u32();
        let value = self.grr.perturb(bucket(seed, self.prefix_key(value, level), self.buckets()), rng);
        Payload::Grouped { group: level, seed, value }
    }

    /// Checks a payload's shape and ranges.
    pub(crate) fn validate(&self, payload: &Payload) -> Result<()> {
        match payload {
            Payload::Grouped { group, value, .. } if *group < self.levels() && *value < self.buckets() => Ok(()),
            Payload::Grouped { .. } => Err(Rejection::OutOfRange
                .error(text!("the level (cohort) must be below ", self.levels(), ", the value below g = ", self.buckets()))),
            _ => Err(Rejection::Malformed.error("expected cohort, seed and value")),
        }
    }

    /// `P[payload | value]`, realized.
    pub(crate) fn likelihood(&self, value: &str, payload: &Payload) -> Likelihood {
        match *payload {
            Payload::Grouped { group, seed, value: y } if self.validate(payload).is_ok() => {
                let x = bucket(seed, self.prefix_key(value, group), self.buckets());
                Likelihood::new(1.0 / f64::from(self.levels())).times(1.0 / 4_294_967_296.0).times(self.grr.probability(x, y))
            }
            _ => Likelihood::new(0.0),
        }
    }

    /// True when the payload's bucket is the one `value`'s prefix hashes to.
    pub(crate) fn supports(&self, value: &str, payload: &Payload) -> bool {
        match *payload {
            Payload::Grouped { group, seed, value: y } if group < self.levels() => {
                bucket(seed, self.prefix_key(value, group), self.buckets()) == y
            }
            _ => false,
        }
    }

    /// Outputs that exercise the channel: sampled levels and seeds, each
    /// with every bucket (or, for a huge `g`, with the buckets that matter).
    pub(crate) fn channel_outputs(&self, values: &[&str], rng: &mut dyn RngCore) -> Vec<Payload> {
        let mut out = Vec::new();
        for value in values.iter().cycle().take(16) {
            let level = uniform_below(rng, u64::from(self.levels())) as u32;
            let Payload::Grouped { group, seed, value: y } = self.randomize(value, level, rng) else { continue };
            let g = self.buckets();
            let ys: Vec<u64> = if g <= 4096 {
                (0..g).collect()
            } else {
                let own = bucket(seed, self.prefix_key(value, group), g);
                vec![y, own, (own + 1) % g]
            };
            out.extend(ys.into_iter().map(|value| Payload::Grouped { group, seed, value }));
        }
        out
    }

    /// OLH's `Var[ĉ]` from `n` reports of which `c` hold the value.
    pub fn count_variance(&self, n: f64, c: f64) -> f64 {
        let (p, q) = (self.grr.keep_probability(), 1.0 / self.buckets() as f64);
        n * q * (1.0 - q) / (p - q).powi(2) + c * (1.0 - p - q) / (p - q)
    }

}

/// The half of a level's reports a report belongs to: its seed's top bit,
/// uniform and independent of the value (each half selects complete
/// values for the other to test and estimate).
#[doc(hidden)]
pub fn half(seed: u32) -> usize {
    (seed >> 31) as usize
}

/// The value a complete prefix names (its bytes before the padding), if
/// UTF-8.
#[doc(hidden)]
pub fn value_of(bytes: &[u8]) -> Option<&str> {
    let end = bytes.iter().position(|&b| b == PAD).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).ok()
}

/// The first `bits` bits of `padded`, the last byte's unused bits cleared.
fn prefix(padded: &[u8], bits: u32) -> Vec<u8> {
    let mut out = padded[..bits.div_ceil(8) as usize].to_vec();
    if bits % 8 != 0 {
        if let Some(last) = out.last_mut() {
            *last &= 0xFF << (8 - bits % 8);
        }
    }
    out
}

/// The hash key of a prefix of `bits` bits (public and platform-independent:
/// [`key64`] of its bytes mixed with its length in bits).
#[doc(hidden)]
pub fn prefix_key(bytes: &[u8], bits: u32) -> u64 {
    mix64(key64(bytes) ^ u64::from(bits).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A prefix of `bits` bits with an `step`-bit symbol appended.
#[doc(hidden)]
pub fn extend(bytes: &[u8], bits: u32, symbol: u32, step: u32) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if bits % 8 == 0 {
        out.push(0);
    }
    if let Some(last) = out.last_mut() {
        *last |= (symbol << (8 - bits % 8 - step)) as u8;
    }
    out
}

/// True when a prefix of `bits` bits identifies its value: it holds a whole
/// padding byte, or it is all `max_length` bytes.
#[doc(hidden)]
pub fn complete(bytes: &[u8], bits: u32, max_length: u32) -> bool {
    bits == max_length * 8 || bytes[..(bits / 8) as usize].contains(&PAD)
}

/// True when whole bytes can begin a padded UTF-8 value: UTF-8 (possibly cut
/// within its last character), then only padding.
#[doc(hidden)]
pub fn plausible(bytes: &[u8]) -> bool {
    match bytes.iter().position(|&b| b == PAD) {
        Some(end) => bytes[end..].iter().all(|&b| b == PAD) && std::str::from_utf8(&bytes[..end]).is_ok(),
        None => std::str::from_utf8(bytes).map_or_else(|e| e.error_len().is_none(), |_| true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_extend_bit_by_bit_and_byte_by_byte() {
        let padded = [b'a', PAD];
        assert_eq!(prefix(&padded, 3), vec![b'a' & 0xE0]);
        let mut bytes = Vec::new();
        for bit in 0..8 {
            bytes = extend(&bytes, bit, u32::from(b'a' >> (7 - bit) & 1), 1);
        }
        assert_eq!(bytes, vec![b'a']);
        assert_eq!(extend(&bytes, 8, u32::from(PAD), 8), padded);
        assert!(complete(&padded, 16, 4) && !complete(&padded, 12, 4) && complete(b"a", 8, 1));
        assert!(plausible("é".as_bytes()) && plausible(&"é".as_bytes()[..1]) && !plausible(&[0x80]));
        assert!(!plausible(&[PAD, b'a']) && !plausible(&[0xC3, PAD]));
        // A prefix of all `max_length` bytes cut within a character names no value.
        assert_eq!(value_of(&padded), Some("a"));
        assert!(plausible(&[b'a', 0xC3]) && value_of(&[b'a', 0xC3]).is_none());
        assert!(half(u32::MAX >> 1) == 0 && half(1 << 31) == 1);
    }
}
