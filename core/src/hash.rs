//! Stable, platform-independent hashing (identical native and in wasm).
//!
//! None of this is privacy-critical: local hashing's ε comes from the
//! randomized response applied after the hash, whatever the hash is. The hash
//! only has to spread values evenly, so that two values collide under a random
//! seed with probability close to `1/g` (what the variance formula assumes).

/// The 64-bit finalizer of MurmurHash3: a bijection with full avalanche.
///
/// With [`key64`] and [`bucket`], the hashing of local hashing and the
/// sketches:
///
/// ```
/// use localdp::hash::{bucket, key64, mix64};
/// assert_eq!(mix64(0), 0);
/// assert_ne!(mix64(1), mix64(2));
/// assert_eq!(key64(b"firefox"), key64(b"firefox")); // the same on every platform
/// assert_ne!(key64(b"firefox"), key64(b"chrome"));
/// let key = key64(b"firefox");
/// assert!((0..100).all(|seed| bucket(seed, key, 5) < 5));
/// // The seed picks the hash function: over many seeds, every bucket is used.
/// let mut used = [false; 5];
/// (0..100).for_each(|seed| used[bucket(seed, key, 5) as usize] = true);
/// assert!(used.iter().all(|&u| u));
/// ```
#[inline(always)]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A 64-bit key for a byte string: FNV-1a, then [`mix64`] for avalanche.
///
/// See the example on [`mix64`].
pub fn key64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix64(h ^ bytes.len() as u64)
}

/// A configuration's fingerprint: the [`key64`] of its canonical bytes as 16
/// lowercase hex digits (what reports, states and memo identities carry).
pub(crate) fn fingerprint(canonical: &[u8]) -> String {
    crate::text::text!(crate::text::Hex16(key64(canonical)))
}

/// Bucket in `0..g` (`g ≤ 2^32`) of the value with key `key` under the hash
/// function chosen by `seed`. Per report and per candidate value this costs
/// two multiplications and a few shifts, which is what makes exact
/// per-report decoding of local hashing fast.
///
/// See the example on [`mix64`].
#[inline(always)]
pub fn bucket(seed: u32, key: u64, g: u64) -> u64 {
    let h = mix64(key ^ salt(seed));
    ((h >> 32) * g) >> 32
}

/// What a seed XORs into every key before [`mix64`] in [`bucket`] (the
/// aggregator's local-hashing kernel computes it once per report).
#[inline(always)]
pub fn salt(seed: u32) -> u64 {
    u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
