//! Bit sources and the exact samplers built on them.
//!
//! Every privacy-critical decision in localdp is made by one of two samplers
//! here, and both consume only uniform 64-bit words:
//!
//! * [`Bernoulli`] compares one word with an integer threshold, so its
//!   probability is exactly `threshold / 2^64`, a number the channel tests can
//!   read back with [`Bernoulli::probability`];
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
    pub fn new() -> Result<Self> {
        let mut buffer = Box::new([0u8; Self::BLOCK]);
        getrandom::fill(&mut buffer[..]).map_err(|e| Error::Randomness { detail: e.to_string() })?;
        Ok(SecureRng { buffer, used: 0 })
    }

    fn refill(&mut self) {
        // The source worked when `new` ran; losing it later leaves no safe way
        // to go on, so fail closed rather than emit a weakly random report.
        getrandom::fill(&mut self.buffer[..]).expect("the OS random source failed");
        self.used = 0;
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformBelow {
    n: u64,
    mask: u64,
}

impl UniformBelow {
    /// The uniform distribution on `0..n`; `n = 0` is an error (the set is
    /// empty).
    pub fn new(n: u64) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("n", Requirement::NonEmpty));
        }
        let mask = if n == 1 { 0 } else { u64::MAX >> (n - 1).leading_zeros() };
        Ok(UniformBelow { n, mask })
    }

    /// One draw.
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
pub(crate) fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bernoulli {
    threshold: u128,
}

impl Bernoulli {
    const SCALE: f64 = 18_446_744_073_709_551_616.0; // 2^64

    /// The coin whose probability is the smallest multiple of `2^-64` that is
    /// `≥ p`. Rounding up is the safe direction for every use in localdp: the
    /// coins are "leave the truth" events, and a larger one only adds noise.
    pub fn rounded_up(p: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid("probability", Requirement::Probability { found: p }));
        }
        // p * 2^64 is exact (a power-of-two scaling); ceil of an f64 is exact.
        Ok(Bernoulli { threshold: (p * Self::SCALE).ceil() as u128 })
    }

    /// The realized probability of `true`, exactly (it is a dyadic rational
    /// with at most 53 significant bits).
    pub fn probability(&self) -> f64 {
        self.threshold as f64 / Self::SCALE
    }

    /// One toss: a single 64-bit word compared with the threshold.
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> bool {
        (rng.next_u64() as u128) < self.threshold
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
