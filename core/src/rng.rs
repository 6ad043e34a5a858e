//! Bit sources and the exact samplers built on them.
//!
//! Every privacy-critical decision in localdp is made by one of two samplers
//! here, and both consume only uniform 64-bit words:
//!
//! * [`Bernoulli`] compares one word with an integer threshold, so its
//!   probability is exactly `threshold / 2^64`, a number the channel tests can
//!   read back with [`Bernoulli::probability`] (up to 64 tosses of it at once
//!   read the threshold's binary digits instead: [`Bernoulli::sample_bits`],
//!   the same probability from a few words);
//! * [`UniformBelow`] draws an integer in `0..n` by masked rejection, so every
//!   value has probability exactly `1/n` (no modulo bias).
//!
//! Production randomness is [`SecureRng`]: the operating system's CSPRNG (or
//! `crypto.getRandomValues` in a browser), read through `getrandom`.
//! [`SimulationRng`] is a seeded ChaCha20 stream **for tests and simulation
//! only**: reports made with a known seed protect nobody.

use crate::error::{Error, Requirement, Result};
pub use rand_core::{CryptoRng, RngCore};
use rand_core::SeedableRng;

/// The OS / browser CSPRNG, read in 4 KiB blocks.
///
/// The buffer only saves system calls; it holds bytes that have not been
/// used yet and is overwritten as they are consumed.
pub struct SecureRng {
    buffer: Box<[u8; Self::BLOCK]>,
    used: usize,
}

impl SecureRng {
    const BLOCK: usize = 4096;

    /// Opens the secure source, failing if the platform has none.
    ///
    /// ```
    /// use localdp::{Metric, SecureRng};
    /// let metric = Metric::from_json(r#"{"protocol":"auto","epsilon":1,"domain":["a","b","c"]}"#)?;
    /// let mut rng = SecureRng::new()?; // the OS's CSPRNG (crypto.getRandomValues in a browser)
    /// let report = metric.randomize_text("b", &mut rng)?;
    /// assert_eq!(report.protocol, metric.protocol());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new() -> Result<Self> {
        let mut buffer = Box::new([0u8; Self::BLOCK]);
        getrandom::fill(&mut buffer[..]).map_err(|e| Error::Randomness { detail: failure(e) })?;
        Ok(SecureRng { buffer, used: 0 })
    }

    fn refill(&mut self) {
        // The source worked when `new` ran; losing it later leaves no safe way
        // to go on, so fail closed rather than emit a weakly random report.
        getrandom::fill(&mut self.buffer[..]).expect("the OS random source failed");
        self.used = 0;
    }
}

/// The random source's failure in the platform's words. In the browser
/// (getrandom's `wasm_js` backend) its one failure is a missing Web Crypto
/// API, said here without getrandom's `Display`, which would link
/// `core::fmt` into the client module.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn failure(_: getrandom::Error) -> String {
    "Web Crypto API is unavailable".into()
}

/// The random source's failure in the OS's words.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn failure(error: getrandom::Error) -> String {
    error.to_string()
}

impl RngCore for SecureRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }

    fn next_u64(&mut self) -> u64 {
        if self.used + 8 > Self::BLOCK {
            self.refill();
        }
        let chunk = &mut self.buffer[self.used..self.used + 8];
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        chunk.fill(0);
        self.used += 8;
        word
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

impl CryptoRng for SecureRng {}

/// A seeded, reproducible generator (ChaCha20). **For tests and simulation
/// only**: anyone who knows the seed can undo the randomization.
///
/// It is marked `CryptoRng` because ChaCha20 is a cryptographic stream, so
/// simulations run the production code paths; the seed is what makes it
/// unfit for real clients, and its name says so wherever it is used.
pub struct SimulationRng(rand_chacha::ChaCha20Rng);

impl SimulationRng {
    /// The stream for `seed`; identical on every platform, native and wasm.
    ///
    /// ```
    /// use localdp::rng::RngCore;
    /// use localdp::SimulationRng;
    /// let (mut a, mut b) = (SimulationRng::seed_from_u64(42), SimulationRng::seed_from_u64(42));
    /// assert_eq!(a.next_u64(), b.next_u64()); // reproducible: for tests and simulation only
    /// assert_ne!(a.next_u64(), SimulationRng::seed_from_u64(43).next_u64());
    /// ```
    pub fn seed_from_u64(seed: u64) -> Self {
        SimulationRng(rand_chacha::ChaCha20Rng::seed_from_u64(seed))
    }
}

impl CryptoRng for SimulationRng {}

impl RngCore for SimulationRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.0.fill_bytes(dst)
    }
}

/// A uniform integer in `0..n`, exactly: draw `⌈log2 n⌉` bits and reject
/// values `≥ n`. At most two words are needed on average.
///
/// ```
/// use localdp::rng::UniformBelow;
/// use localdp::SimulationRng;
/// let die = UniformBelow::new(6)?;
/// let mut rng = SimulationRng::seed_from_u64(1); // simulation only
/// let rolls: Vec<u64> = (0..600).map(|_| die.sample(&mut rng)).collect();
/// assert!(rolls.iter().all(|&r| r < 6));
/// assert!((0..6).all(|face| rolls.contains(&face)));
/// assert!(UniformBelow::new(0).is_err()); // the empty set
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformBelow {
    n: u64,
    mask: u64,
}

impl UniformBelow {
    /// The uniform distribution on `0..n`; `n = 0` is an error (the set is
    /// empty).
    ///
    /// See the example on [`UniformBelow`].
    pub fn new(n: u64) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("n", Requirement::NonEmpty));
        }
        let mask = if n == 1 { 0 } else { u64::MAX >> (n - 1).leading_zeros() };
        Ok(UniformBelow { n, mask })
    }

    /// One draw.
    ///
    /// See the example on [`UniformBelow`].
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let x = rng.next_u64() & self.mask;
            if x < self.n {
                return x;
            }
        }
    }
}

/// `UniformBelow::new(n).sample(rng)` for the crate's own draws, whose `n`
/// is at least 1 by construction (an `n` of 0 returns 0 rather than loop).
pub fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    UniformBelow::new(n).map_or(0, |u| u.sample(rng))
}

/// `k ≤ n` distinct elements of `0..n`, uniformly, in increasing order, in
/// expected `O(k log k)` time and `O(k)` memory whatever `n`: draw as many
/// elements as are missing (exact uniform draws), keep the distinct ones,
/// repeat. The rounds treat every element alike (they depend only on how
/// many are kept), so the set drawn is uniform among the `k`-subsets; above
/// `n/2` the complement is drawn, so that each round at least halves, in
/// expectation, what is missing.
pub(crate) fn sample_subset<R: RngCore + ?Sized>(n: usize, k: usize, rng: &mut R) -> Vec<u32> {
    debug_assert!(u32::try_from(n).is_ok(), "elements are u32");
    let k = k.min(n);
    let complement = k > n / 2;
    let want = if complement { n - k } else { k };
    let mut chosen: Vec<u32> = Vec::with_capacity(want);
    while chosen.len() < want {
        let kept = chosen.len();
        chosen.extend((kept..want).map(|_| uniform_below(rng, n as u64) as u32));
        // The new draws sorted, then merged with the sorted ones kept (the
        // stable sort merges two sorted runs in linear time).
        chosen[kept..].sort_unstable();
        chosen.sort();
        chosen.dedup();
    }
    if !complement {
        return chosen;
    }
    let mut skip = chosen.into_iter().peekable();
    (0..n as u32).filter(|&i| skip.next_if_eq(&i).is_none()).collect()
}

/// A coin with probability exactly `threshold / 2^64`.
///
/// ```
/// use localdp::rng::Bernoulli;
/// use localdp::SimulationRng;
/// let coin = Bernoulli::rounded_up(0.25)?;
/// assert_eq!(coin.probability(), 0.25); // a dyadic p is exact
/// assert!(Bernoulli::rounded_up(0.1)?.probability() >= 0.1); // others round up, toward more noise
/// assert!(Bernoulli::rounded_up(1.5).is_err());
/// let mut rng = SimulationRng::seed_from_u64(9); // simulation only
/// let heads = (0..4000).filter(|_| coin.sample(&mut rng)).count();
/// assert!((800..1200).contains(&heads)); // mean 1000, sd 27: 7 sd either side
/// let bits = coin.sample_bits(10, &mut rng);
/// assert_eq!(bits >> 10, 0); // 10 tosses in the low bits
/// assert_eq!(Bernoulli::rounded_up(1.0)?.sample_bits(64, &mut rng), u64::MAX);
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bernoulli {
    threshold: u128,
}

impl Bernoulli {
    const SCALE: f64 = 18_446_744_073_709_551_616.0; // 2^64

    /// The coin whose probability is the smallest multiple of `2^-64` that is
    /// `≥ p`. Rounding up is the safe direction for every use in localdp: the
    /// coins are "leave the truth" events, and a larger one only adds noise.
    ///
    /// See the example on [`Bernoulli`].
    pub fn rounded_up(p: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid("probability", Requirement::Probability { found: p }));
        }
        // p * 2^64 is exact (a power-of-two scaling); ceil of an f64 is exact.
        Ok(Bernoulli { threshold: (p * Self::SCALE).ceil() as u128 })
    }

    /// The realized probability of `true`, exactly (it is a dyadic rational
    /// with at most 53 significant bits).
    ///
    /// See the example on [`Bernoulli`].
    pub fn probability(&self) -> f64 {
        self.threshold as f64 / Self::SCALE
    }

    /// One toss: a single 64-bit word compared with the threshold.
    ///
    /// See the example on [`Bernoulli`].
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> bool {
        (rng.next_u64() as u128) < self.threshold
    }

    /// `n ≤ 64` independent tosses as the low `n` bits of a word (the bits
    /// above are 0), each set with probability exactly `threshold / 2^64`,
    /// as by [`Bernoulli::sample`], from 7.3 words on average for 64 tosses
    /// (about `log2(n) + 1.3`) instead of `n`.
    ///
    /// Bernoulli by binary expansion (Knuth and Yao 1976; OpenDP's
    /// `sample_bernoulli_float`): write `p = threshold / 2^64` as
    /// `0.b_1 b_2 … b_64` in binary, flip fair coins until the first heads,
    /// at flip `i` (probability `2^-i`), and answer `b_i`; no heads in 64
    /// flips answers 0 (every later digit is 0). So `P[true] = Σ b_i 2^-i`,
    /// exactly `p`, with no rounding anywhere. The `n` tosses run side by
    /// side: bit `j` of the `i`-th word drawn is flip `i` of toss `j`. Each
    /// toss reads only its own bits, so the tosses are independent; a word is
    /// drawn only while some toss has seen no heads and a 1 digit is left, so
    /// stopping early changes no answer, and the words after a call are
    /// fresh for the next one. `p = 1` draws nothing and sets all `n`.
    ///
    /// The number of words drawn (the latest first heads) depends a little
    /// on the tosses; it stays on the device, the report does not carry it.
    /// No exact sampler can both save words and draw a fixed number: all
    /// `n` tosses true has probability `(t / 2^64)^n` (`t` the threshold),
    /// whose denominator in lowest terms is `2^(n·(64 − z))` (`z` the
    /// trailing zero bits of `t`), so a fixed count needs `n·(64 − z)` bits,
    /// close to a word per toss for CMS's coins. A geometric skip (one draw per flip) would say more:
    /// its number of draws is the number of flips, which beside the report's
    /// weight tells whether the true bit was flipped.
    ///
    /// See the example on [`Bernoulli`].
    pub fn sample_bits<R: RngCore + ?Sized>(&self, n: u32, rng: &mut R) -> u64 {
        let lanes = u64::MAX.checked_shr(64 - n.min(64)).unwrap_or(0);
        let Ok(mut digits) = u64::try_from(self.threshold) else { return lanes };
        let (mut open, mut ones) = (lanes, 0);
        while open != 0 && digits != 0 {
            let heads = open & rng.next_u64();
            if digits >> 63 == 1 {
                ones |= heads;
            }
            open &= !heads;
            digits <<= 1;
        }
        ones
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that replays fixed words, to test the samplers' edges.
    struct Replay(Vec<u64>);
    impl RngCore for Replay {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0.remove(0)
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unimplemented!()
        }
    }

    /// Every `k`-subset of `0..6` equally often, drawn directly (k = 3) and
    /// through the complement (k = 4): χ² at α = 1e-6 each (critical values
    /// of χ² with 19 and 14 degrees of freedom), with a fixed seed.
    #[test]
    fn subsets_are_uniform_distinct_and_increasing() {
        let mut rng = crate::SimulationRng::seed_from_u64(17);
        for (k, subsets, critical) in [(3usize, 20.0, 63.68), (4, 15.0, 54.64)] {
            let draws = 150_000;
            let mut counts = [0u32; 64];
            for _ in 0..draws {
                let subset = sample_subset(6, k, &mut rng);
                assert_eq!(subset.len(), k);
                assert!(subset.windows(2).all(|w| w[0] < w[1]) && subset.iter().all(|&i| i < 6), "{subset:?}");
                counts[subset.iter().map(|&i| 1usize << i).sum::<usize>()] += 1;
            }
            let expected = draws as f64 / subsets;
            let chi: f64 = counts.iter().filter(|&&c| c > 0).map(|&c| (f64::from(c) - expected).powi(2) / expected).sum();
            assert_eq!(counts.iter().filter(|&&c| c > 0).count() as f64, subsets);
            assert!(chi < critical, "k = {k}: χ² = {chi}");
        }
        assert_eq!(sample_subset(5, 0, &mut rng), Vec::<u32>::new());
        assert_eq!(sample_subset(5, 5, &mut rng), vec![0, 1, 2, 3, 4]);
        assert_eq!(sample_subset(3, 9, &mut rng), vec![0, 1, 2]);
    }

    #[test]
    fn bernoulli_is_exact_at_its_threshold() {
        let coin = Bernoulli::rounded_up(0.25).unwrap();
        assert_eq!(coin.probability(), 0.25);
        let edge = 1u64 << 62;
        assert!(coin.sample(&mut Replay(vec![edge - 1])));
        assert!(!coin.sample(&mut Replay(vec![edge])));
        assert!(Bernoulli::rounded_up(1.0).unwrap().sample(&mut Replay(vec![u64::MAX])));
        assert!(!Bernoulli::rounded_up(0.0).unwrap().sample(&mut Replay(vec![0])));
        assert!(Bernoulli::rounded_up(f64::NAN).is_err());
        assert!(Bernoulli::rounded_up(1.5).is_err());
    }

    #[test]
    fn bernoulli_rounds_up_to_the_grid() {
        let p = 1e-30;
        let coin = Bernoulli::rounded_up(p).unwrap();
        assert_eq!(coin.probability(), 1.0 / Bernoulli::SCALE);
        let p = 1.0 / 3.0;
        assert!(Bernoulli::rounded_up(p).unwrap().probability() >= p);
    }

    /// The exact joint distribution of two side-by-side tosses, enumerated:
    /// every pair `(h0, h1)` of first-heads flips (1 to 64, or 65 for none),
    /// of probability `2^-h0 · 2^-h1` (`2^-64` for none), replayed with the
    /// bits it leaves free (later flips, the other 62 lanes) drawn at random.
    /// In units of `2^-128`, the four outcomes weigh exactly `(2^64 − t)²`,
    /// `t(2^64 − t)` twice and `t²`: independent tosses of probability
    /// `t/2^64`, the threshold's own.
    #[test]
    fn bulk_tosses_have_the_exact_joint_distribution() {
        let mut free = SimulationRng::seed_from_u64(3);
        for p in [1.0 / (1.0 + 0.5f64.exp()), 1.0 / (1.0 + 4f64.exp()), 0.5, 1e-30, 1.0 - 1e-16] {
            let coin = Bernoulli::rounded_up(p).unwrap();
            let mut mass = [0u128; 4];
            for h0 in 1..=65u32 {
                for h1 in 1..=65u32 {
                    let flip = |i: u32, h: u32, later: u64| match i.cmp(&h) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => 1,
                        std::cmp::Ordering::Greater => later & 1,
                    };
                    let words = (1..=64)
                        .map(|i| free.next_u64() & !3 | flip(i, h0, free.next_u64()) | flip(i, h1, free.next_u64()) << 1)
                        .collect();
                    let out = coin.sample_bits(2, &mut Replay(words));
                    let weight = |h: u32| if h == 65 { 1u128 } else { 1 << (64 - h) };
                    mass[out as usize] += weight(h0) * weight(h1);
                }
            }
            let (yes, no) = (coin.threshold, (1u128 << 64) - coin.threshold);
            assert_eq!(mass, [no * no, yes * no, no * yes, yes * yes], "p = {p}");
        }
        let (never, always) = (Bernoulli::rounded_up(0.0).unwrap(), Bernoulli::rounded_up(1.0).unwrap());
        assert_eq!(never.sample_bits(64, &mut Replay(vec![])), 0, "draws nothing");
        assert_eq!(always.sample_bits(64, &mut Replay(vec![])), u64::MAX, "draws nothing");
        assert_eq!(always.sample_bits(5, &mut Replay(vec![])), 0b11111);
        assert_eq!(always.sample_bits(0, &mut Replay(vec![])), 0);
    }

    /// 64 side-by-side tosses: each lane, and each pair of neighbouring
    /// lanes, is set as often as `p` and `p²` say (z-tests over 100 000
    /// words at ε = 1's CMS flip probability, false-alarm rate 1e-6 over
    /// the 127 tests: |z| < 5.78).
    #[test]
    fn bulk_tosses_are_independent_across_lanes() {
        let coin = Bernoulli::rounded_up(1.0 / (1.0 + 0.5f64.exp())).unwrap();
        let (p, draws) = (coin.probability(), 100_000.0);
        let mut rng = SimulationRng::seed_from_u64(8);
        let (mut lanes, mut pairs) = ([0u32; 64], [0u32; 63]);
        for _ in 0..draws as usize {
            let word = coin.sample_bits(64, &mut rng);
            for (j, lane) in lanes.iter_mut().enumerate() {
                *lane += (word >> j & 1) as u32;
            }
            for (j, pair) in pairs.iter_mut().enumerate() {
                *pair += (word >> j & word >> (j + 1) & 1) as u32;
            }
        }
        let z = |count: u32, q: f64| (f64::from(count) - draws * q) / (draws * q * (1.0 - q)).sqrt();
        for (count, q) in lanes.iter().map(|&c| (c, p)).chain(pairs.iter().map(|&c| (c, p * p))) {
            assert!(z(count, q).abs() < 5.78, "z = {}", z(count, q));
        }
    }

    #[test]
    fn uniform_below_rejects_instead_of_folding() {
        // n = 5 uses three bits; 5, 6, 7 are rejected, never folded onto 0..5.
        let mut rng = Replay(vec![5, 6, 7, 4]);
        assert_eq!(uniform_below(&mut rng, 5), 4);
        assert_eq!(uniform_below(&mut Replay(vec![u64::MAX]), 1), 0);
        assert_eq!(uniform_below(&mut Replay(vec![u64::MAX]), 1 << 63), (1 << 63) - 1);
        assert!(UniformBelow::new(0).is_err(), "an empty range is refused, not looped on");
        let mut sim = SimulationRng::seed_from_u64(1);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[uniform_below(&mut sim, 7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn secure_rng_produces_distinct_words() {
        let mut rng = SecureRng::new().unwrap();
        let words: Vec<u64> = (0..1000).map(|_| rng.next_u64()).collect();
        let mut sorted = words.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), words.len());
    }
}
