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

use crate::aggregate::Z95;
use crate::error::{Rejection, Result};
use crate::frequency::{GeneralizedRandomizedResponse, Likelihood, LocalHashing};
use crate::hash::{bucket, key64, mix64};
use crate::rappor::CandidateEstimate;
use crate::report::Payload;
use crate::rng::{uniform_below, RngCore};
use crate::text::text;

/// How a level's extensions are pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pruning {
    /// The `2·top` best (PEM).
    Best,
    /// The significant ones, at most `2·top` (TreeHist).
    Significant,
}

/// A configured PEM or TreeHist mechanism.
#[derive(Debug, Clone)]
pub struct Discovery {
    step: u32,
    max_length: u32,
    top: usize,
    pruning: Pruning,
    grr: GeneralizedRandomizedResponse,
}

/// The padding byte: never part of UTF-8 (PEM, TreeHist and SFP pad values
/// to `max_length` with it).
pub(crate) const PAD: u8 = 0xFF;

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
    pub(crate) fn top(&self) -> usize {
        self.top
    }

    /// Bits per level: 8 (PEM) or 1 (TreeHist).
    pub(crate) fn step(&self) -> u32 {
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

    /// The heavy hitters from the reports of every level (`n` in all), most
    /// frequent first (see the module docs).
    pub(crate) fn discover(&self, levels: &[Level], n: u64) -> Vec<CandidateEstimate> {
        let keep = 2 * self.top;
        let mut candidates = vec![Candidate { bytes: Vec::new(), testing: Pool::default(), held_out: Pool::default() }];
        for (i, level) in levels.iter().enumerate() {
            let bits = (i as u32 + 1) * self.step;
            let mut next = Vec::new();
            for c in &candidates {
                let symbols = if complete(&c.bytes, bits - self.step, self.max_length) { (1 << self.step) - 1..1 << self.step } else { 0..1 << self.step };
                for symbol in symbols {
                    let bytes = extend(&c.bytes, bits - self.step, symbol, self.step);
                    let whole = bits % 8 != 0 || plausible(&bytes);
                    if whole && (!complete(&bytes, bits, self.max_length) || value_of(&bytes).is_some()) {
                        next.push(Candidate { bytes, ..*c });
                    }
                }
            }
            let keys: Vec<u64> = next.iter().map(|c| prefix_key(&c.bytes, bits)).collect();
            let supports = self.supports_of(level, &keys);
            let halves = level.seeds.iter().fold([0u64; 2], |mut h, &seed| {
                h[half(seed)] += 1;
                h
            });
            let mut scored: Vec<(f64, Candidate)> = next
                .into_iter()
                .zip(supports)
                .filter_map(|(mut c, [testing, held_out])| {
                    if complete(&c.bytes, bits, self.max_length) {
                        c.testing = c.testing.plus(testing, halves[0]);
                        c.held_out = c.held_out.plus(held_out, halves[1]);
                        return Some((self.frequency(c.testing), c));
                    }
                    // TreeHist extends only the prefixes significantly above
                    // zero; a value is tested at the end, on its held-out reports.
                    let score = self.frequency(Pool { support: testing + held_out, reports: halves[0] + halves[1] });
                    let significant = score > Z95 * self.null_error(halves[0] + halves[1]);
                    (self.pruning == Pruning::Best || significant).then_some((score, c))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored.truncate(keep);
            candidates = scored.into_iter().map(|(_, c)| c).collect();
        }
        // Listed: significantly above zero on the held-out reports,
        // Bonferroni at α = 0.05 over the survivors.
        let z = crate::rappor::normal_quantile(1.0 - 0.05 / (2.0 * candidates.len().max(1) as f64));
        let mut found: Vec<CandidateEstimate> = candidates
            .into_iter()
            .filter_map(|c| {
                let Pool { support, reports } = c.held_out;
                let big_n = reports as f64;
                let (count, variance) = self.count(support, reports);
                let frequency = count / big_n;
                let share = frequency.clamp(0.0, 1.0);
                let sampling = share * (1.0 - share) / big_n * (1.0 - big_n / n as f64);
                let std_error = (variance / (big_n * big_n) + sampling.max(0.0)).sqrt();
                (reports > 0 && frequency > z * std_error).then_some(CandidateEstimate {
                    value: value_of(&c.bytes)?.to_string(),
                    frequency,
                    std_error,
                    ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
                })
            })
            .collect();
        found.sort_by(|a, b| b.frequency.total_cmp(&a.frequency));
        found.truncate(self.top);
        found
    }

    /// `ĉ/N` of a pool.
    fn frequency(&self, pool: Pool) -> f64 {
        self.count(pool.support, pool.reports).0 / pool.reports.max(1) as f64
    }

    /// `(ĉ, Var[ĉ])` of OLH from a support `s` among `reports`.
    fn count(&self, s: u64, reports: u64) -> (f64, f64) {
        let (p, q, n) = (self.grr.keep_probability(), 1.0 / self.buckets() as f64, reports as f64);
        let count = (s as f64 - n * q) / (p - q);
        (count, self.count_variance(n, count.clamp(0.0, n)))
    }

    /// OLH's `Var[ĉ]` from `n` reports of which `c` hold the value.
    pub(crate) fn count_variance(&self, n: f64, c: f64) -> f64 {
        let (p, q) = (self.grr.keep_probability(), 1.0 / self.buckets() as f64);
        n * q * (1.0 - q) / (p - q).powi(2) + c * (1.0 - p - q) / (p - q)
    }

    /// The standard error of a frequency estimate of zero among `reports`.
    fn null_error(&self, reports: u64) -> f64 {
        self.count(0, reports).1.sqrt() / reports.max(1) as f64
    }

    /// `S` of every key in each half of a level's reports: one hash per
    /// (report, key).
    fn supports_of(&self, level: &Level, keys: &[u64]) -> Vec<[u64; 2]> {
        let g = self.buckets();
        let mut supports = vec![[0u64; 2]; keys.len()];
        for (&seed, &y) in level.seeds.iter().zip(&level.values) {
            let half = half(seed);
            for (s, &key) in supports.iter_mut().zip(keys) {
                s[half] += u64::from(bucket(seed, key, g) == u64::from(y));
            }
        }
        supports
    }
}

/// A prefix being extended; once complete, its supports pooled over the
/// levels in each half of their reports.
#[derive(Debug, Clone)]
struct Candidate {
    bytes: Vec<u8>,
    testing: Pool,
    held_out: Pool,
}

/// A support `S` among `reports` reports.
#[derive(Debug, Clone, Copy, Default)]
struct Pool {
    support: u64,
    reports: u64,
}

impl Pool {
    fn plus(self, support: u64, reports: u64) -> Pool {
        Pool { support: self.support + support, reports: self.reports + reports }
    }
}

/// The half of a level's reports a report belongs to: its seed's top bit,
/// uniform and independent of the value (0 tests a complete prefix, 1 is
/// held out to estimate its value).
fn half(seed: u32) -> usize {
    (seed >> 31) as usize
}

/// The value a complete prefix names (its bytes before the padding), if
/// UTF-8.
fn value_of(bytes: &[u8]) -> Option<&str> {
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
fn prefix_key(bytes: &[u8], bits: u32) -> u64 {
    mix64(key64(bytes) ^ u64::from(bits).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A prefix of `bits` bits with an `step`-bit symbol appended.
fn extend(bytes: &[u8], bits: u32, symbol: u32, step: u32) -> Vec<u8> {
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
fn complete(bytes: &[u8], bits: u32, max_length: u32) -> bool {
    bits == max_length * 8 || bytes[..(bits / 8) as usize].contains(&PAD)
}

/// True when whole bytes can begin a padded UTF-8 value: UTF-8 (possibly cut
/// within its last character), then only padding.
pub(crate) fn plausible(bytes: &[u8]) -> bool {
    match bytes.iter().position(|&b| b == PAD) {
        Some(end) => bytes[end..].iter().all(|&b| b == PAD) && std::str::from_utf8(&bytes[..end]).is_ok(),
        None => std::str::from_utf8(bytes).map_or_else(|e| e.error_len().is_none(), |_| true),
    }
}

/// One level's reports (discovery keeps every report: the values to score
/// are found only when estimating).
#[derive(Debug, Clone, Default)]
pub(crate) struct Level {
    pub(super) seeds: Vec<u32>,
    pub(super) values: Vec<u32>,
}

impl Level {
    pub(super) fn len(&self) -> usize {
        self.seeds.len()
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
