//! Apple's count-mean sketch (CMS) and its Hadamard variant (HCMS)
//! (Apple Differential Privacy Team, "Learning with privacy at scale", 2017).
//!
//! The sketch has `k` rows of `m` columns (`m` a power of two); row `j`
//! hashes a string to the column `h_j(x) = bucket(j, key64(x), m)`
//! ([`crate::hash`]: public, deterministic, identical natively and in wasm).
//! A device draws one row `j` uniformly, then
//!
//! * **CMS** sends the one-hot vector of `h_j(x)` over `m` bits, each bit
//!   flipped with probability `f = 1/(1+e^{ε/2})` (two bits differ between
//!   two values: ratio `((1−f)/f)² ≤ e^ε`);
//! * **HCMS** draws a Hadamard column `l` uniformly and sends the bit of the
//!   coefficient `H[l, h_j(x)] = (−1)^{popcount(l & h_j(x))}`, flipped with
//!   probability `f = 1/(1+e^ε)` (ratio `(1−f)/f ≤ e^ε`).
//!
//! Every flip is an exact integer-threshold coin rounded up (more noise);
//! CMS tosses its `m` coins 64 at a time ([`Bernoulli::sample_bits`]: the
//! same exact probability, from about 7.3 words per 64 bits).
//!
//! The aggregator turns each row into `t_jb`, an unbiased count of the row's
//! reports whose value hashes to `b` (CMS: `(ones − f r_j)/(1−2f)`; HCMS: a
//! fast Walsh–Hadamard transform of the debiased coefficients), and
//! estimates a candidate's count as
//!
//! ```text
//! ĉ_v = m/(m−1) · (Σ_j t_{j,h_j(v)} − n/m)
//! ```
//!
//! unbiased over the draw of the hash functions (a value collides with
//! another in a row with probability `1/m`). Per report, with `π_u` the
//! share of rows where `x_u` and `v` collide (1 when `x_u = v`),
//!
//! ```text
//! CMS:  Var[ĉ_v] = (m/(m−1))² Σ_u [π_u(1−π_u) + f(1−f)/(1−2f)²]
//! HCMS: Var[ĉ_v] = (m/(m−1))² Σ_u [1/(1−2f)² − π_u²]
//! ```
//!
//! and the standard errors evaluate them at `π = 1/m` for other values.

use crate::error::{Rejection, Result};
use crate::frequency::hadamard::walsh_hadamard;
use crate::frequency::channel::Likelihood;
use crate::hash::{bucket, key64};
use crate::privacy::exp_epsilon_safe;
use crate::report::{BitVector, Payload};
use crate::rng::{uniform_below, Bernoulli, RngCore};
use crate::text::text;

/// Which sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SketchKind {
    /// `m` flipped bits per report.
    Cms,
    /// One flipped Hadamard coefficient per report.
    Hcms,
}

/// A configured CMS or HCMS.
///
/// ```
/// use localdp::HeavyHitterMetric;
/// let cms = HeavyHitterMetric::from_json(
///     r#"{"protocol":"cms","epsilon":4,"sketch":{"hashes":16,"width":64},"candidates":["a"]}"#,
/// )?;
/// let sketch = cms.sketch().unwrap();
/// assert_eq!((sketch.rows(), sketch.width()), (16, 64));
/// // CMS flips each bit with f = 1/(1 + e^(ε/2)), rounded toward more privacy.
/// let f = 1.0 / (1.0 + 2f64.exp());
/// assert!(sketch.flip_probability() >= f && sketch.flip_probability() - f < 1e-12);
/// // A value's column in a row is a public hash: the same on every device.
/// assert!((0..16).all(|row| sketch.column(row, "a") < 64 && sketch.column(row, "a") == sketch.column(row, "a")));
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sketch {
    kind: SketchKind,
    rows: u64,
    width: u64,
    flip: Bernoulli,
}

impl Sketch {
    /// For a validated ε, `k ≥ 1` rows and a power-of-two width `m ≥ 2`.
    pub(crate) fn new(kind: SketchKind, epsilon: f64, rows: u64, width: u64) -> Self {
        let per_bit = match kind {
            SketchKind::Cms => epsilon / 2.0,
            SketchKind::Hcms => epsilon,
        };
        let flip = Bernoulli::rounded_up(1.0 / (1.0 + exp_epsilon_safe(per_bit))).expect("a probability");
        Sketch { kind, rows, width, flip }
    }

    #[doc(hidden)]
    pub fn kind(&self) -> SketchKind {
        self.kind
    }

    /// `k`, the rows (hash functions).
    ///
    /// See the example on [`Sketch`].
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// `m`, the columns.
    ///
    /// See the example on [`Sketch`].
    pub fn width(&self) -> u64 {
        self.width
    }

    /// The realized flip probability `f`.
    ///
    /// See the example on [`Sketch`].
    pub fn flip_probability(&self) -> f64 {
        self.flip.probability()
    }

    /// `h_j(value)`, the column of `value` in row `row`.
    ///
    /// See the example on [`Sketch`].
    pub fn column(&self, row: u64, value: &str) -> u64 {
        self.column_of(row, key64(value.as_bytes()))
    }

    /// The column of the hash key `key` in row `row`.
    pub(crate) fn column_of(&self, row: u64, key: u64) -> u64 {
        bucket(row as u32, key, self.width)
    }

    /// The number of running counts per report group: CMS counts reports
    /// per row, HCMS per (row, Hadamard column).
    #[doc(hidden)]
    pub fn groups_len(&self) -> usize {
        match self.kind {
            SketchKind::Cms => self.rows as usize,
            SketchKind::Hcms => (self.rows * self.width) as usize,
        }
    }

    /// The number of "ones" counts: per (row, column) for both.
    #[doc(hidden)]
    pub fn ones_len(&self) -> usize {
        (self.rows * self.width) as usize
    }

    /// The randomized payload of the hash key `key` in row `row`.
    pub(crate) fn randomize(&self, key: u64, row: u64, rng: &mut dyn RngCore) -> Payload {
        let column = self.column_of(row, key);
        match self.kind {
            SketchKind::Cms => {
                // The flips, 64 to a word (a power-of-two width below 64
                // fills the low bits of one), then the one-hot bit.
                let width = self.width as usize;
                let flips = (0..width).step_by(64).map(|start| self.flip.sample_bits((width - start).min(64) as u32, rng));
                let mut bytes: Vec<u8> = flips.flat_map(u64::to_le_bytes).take(width.div_ceil(8)).collect();
                bytes[column as usize / 8] ^= 1 << (column % 8);
                Payload::Cohort { cohort: row as u32, bits: BitVector::from_bytes(bytes) }
            }
            SketchKind::Hcms => {
                let l = uniform_below(rng, self.width);
                let bit = hadamard_bit(l, column) != self.flip.sample(rng);
                Payload::Grouped { group: row as u32, seed: l as u32, value: u64::from(bit) }
            }
        }
    }

    /// Checks a payload's shape and ranges.
    pub(crate) fn validate(&self, payload: &Payload) -> Result<()> {
        match (self.kind, payload) {
            (SketchKind::Cms, Payload::Cohort { cohort, bits }) => {
                if u64::from(*cohort) >= self.rows {
                    return Err(Rejection::OutOfRange.error(text!("the row (cohort) must be below ", self.rows)));
                }
                if !bits.fits(self.width as usize) {
                    return Err(Rejection::BadLength.error(text!("expected ", self.width, " bits")));
                }
                Ok(())
            }
            (SketchKind::Hcms, Payload::Grouped { group, seed, value }) => {
                if u64::from(*group) >= self.rows || u64::from(*seed) >= self.width || *value > 1 {
                    let message = text!("the row (cohort) must be below ", self.rows, ", the column (seed) below ", self.width, ", the value 0 or 1");
                    return Err(Rejection::OutOfRange.error(message));
                }
                Ok(())
            }
            (SketchKind::Cms, _) => Err(Rejection::Malformed.error("expected cohort and bits")),
            (SketchKind::Hcms, _) => Err(Rejection::Malformed.error("expected cohort, seed and value")),
        }
    }

    /// Adds a validated payload to the counts.
    #[doc(hidden)]
    pub fn accumulate(&self, payload: &Payload, groups: &mut [u64], ones: &mut [u64]) {
        match payload {
            Payload::Cohort { cohort, bits } => {
                let row = *cohort as usize;
                groups[row] += 1;
                for b in bits.ones() {
                    ones[row * self.width as usize + b] += 1;
                }
            }
            Payload::Grouped { group, seed, value } => {
                let cell = *group as usize * self.width as usize + *seed as usize;
                groups[cell] += 1;
                ones[cell] += *value;
            }
            _ => {}
        }
    }

    /// `t_jb` for every row and column: unbiased counts of the row's
    /// reports whose value hashes to `b`.
    pub fn table(&self, groups: &[u64], ones: &[u64]) -> Vec<f64> {
        let f = self.flip_probability();
        let m = self.width as usize;
        match self.kind {
            SketchKind::Cms => ones
                .iter()
                .enumerate()
                .map(|(cell, &o)| (o as f64 - f * groups[cell / m] as f64) / (1.0 - 2.0 * f))
                .collect(),
            SketchKind::Hcms => {
                // Each report's coefficient, debiased: (1 − 2·bit)/(1 − 2f);
                // summed per (row, column), then transformed per row.
                let mut table: Vec<f64> =
                    groups.iter().zip(ones).map(|(&r, &o)| (r as f64 - 2.0 * o as f64) / (1.0 - 2.0 * f)).collect();
                for row in table.chunks_mut(m) {
                    walsh_hadamard(row);
                }
                table
            }
        }
    }

    /// The count estimate of the hash key `key` and its standard error,
    /// from the table of `n` reports (see the module docs).
    pub fn estimate(&self, table: &[f64], n: u64, key: u64) -> (f64, f64) {
        let (m, n) = (self.width as f64, n as f64);
        let sum: f64 = (0..self.rows).map(|j| table[(j * self.width + self.column_of(j, key)) as usize]).sum();
        let count = m / (m - 1.0) * (sum - n / m);
        // (m/(m−1))·√x, not √((m/(m−1))²·x): estimates stay bit-identical.
        (count, m / (m - 1.0) * self.unscaled_variance(n, count.clamp(0.0, n)).sqrt())
    }

    /// `Var[ĉ_v]` from `n` reports of which `c` hold `v`, the others
    /// colliding with it in a share `1/m` of the rows (see the module docs).
    pub fn count_variance(&self, n: f64, c: f64) -> f64 {
        let m = self.width as f64;
        (m / (m - 1.0)).powi(2) * self.unscaled_variance(n, c)
    }

    /// [`Self::count_variance`] before the debiasing factor `(m/(m−1))²`.
    fn unscaled_variance(&self, n: f64, c: f64) -> f64 {
        let (m, f) = (self.width as f64, self.flip_probability());
        let per_report = match self.kind {
            SketchKind::Cms => n * f * (1.0 - f) / (1.0 - 2.0 * f).powi(2) + (n - c) * (1.0 / m) * (1.0 - 1.0 / m),
            SketchKind::Hcms => n / (1.0 - 2.0 * f).powi(2) - c - (n - c) / (m * m),
        };
        per_report.max(0.0)
    }

    /// `P[payload | key]`, realized.
    pub(crate) fn likelihood(&self, key: u64, payload: &Payload) -> Likelihood {
        if self.validate(payload).is_err() {
            return Likelihood::new(0.0);
        }
        let f = self.flip_probability();
        let row = Likelihood::new(1.0 / self.rows as f64);
        match payload {
            Payload::Cohort { cohort, bits } => {
                let column = self.column_of(u64::from(*cohort), key);
                (0..self.width).fold(row, |l, b| l.times(if bits.get(b as usize) != (b == column) { f } else { 1.0 - f }))
            }
            Payload::Grouped { group, seed, value: bit } => {
                let truth = hadamard_bit(u64::from(*seed), self.column_of(u64::from(*group), key));
                row.times(1.0 / self.width as f64).times(if truth == (*bit == 1) { 1.0 - f } else { f })
            }
            _ => Likelihood::new(0.0),
        }
    }

    /// True when the payload supports the key (its bit, or its
    /// coefficient's bit, is the key's own before flipping).
    pub(crate) fn supports(&self, key: u64, payload: &Payload) -> bool {
        match payload {
            Payload::Cohort { cohort, bits } => bits.get(self.column_of(u64::from(*cohort), key) as usize),
            Payload::Grouped { group, seed, value: bit } => {
                hadamard_bit(u64::from(*seed), self.column_of(u64::from(*group), key)) == (*bit == 1)
            }
            _ => false,
        }
    }

    /// Outputs that exercise the channel: for a few rows, every single-bit
    /// change of a report (CMS) or both bits of several columns (HCMS).
    pub(crate) fn channel_outputs(&self, keys: &[u64], rng: &mut dyn RngCore) -> Vec<Payload> {
        let mut out = Vec::new();
        for (i, &key) in keys.iter().enumerate() {
            let row = uniform_below(rng, self.rows);
            match self.randomize(key, row, rng) {
                Payload::Cohort { cohort, bits } => {
                    for b in 0..self.width.min(64) as usize {
                        let ones = bits.ones().filter(|&o| o != b).chain((!bits.get(b)).then_some(b));
                        out.push(Payload::Cohort { cohort, bits: BitVector::with_ones(self.width as usize, ones).expect("in range") });
                    }
                    out.push(Payload::Cohort { cohort, bits });
                }
                Payload::Grouped { group, .. } => {
                    for seed in 0..self.width.min(8 + i as u64) as u32 {
                        out.extend((0..2).map(|value| Payload::Grouped { group, seed, value }));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The bit of the Hadamard coefficient `H[l, b]`: true for −1.
pub(crate) fn hadamard_bit(l: u64, b: u64) -> bool {
    (l & b).count_ones() & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimulationRng;

    /// Counts the words drawn.
    struct Counting(SimulationRng, u64);
    impl RngCore for Counting {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.1 += 1;
            self.0.next_u64()
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unimplemented!()
        }
    }

    /// The standard error an estimate reports is `(m/(m−1))·√x`, to the
    /// bit, as before the planner factored the variance out (commit
    /// 90e330a wrote `√((m/(m−1))²·x)`, which differs in the last bit for
    /// about a quarter of inputs): the old formula, spelled out, on 800
    /// seeded tables.
    #[test]
    fn estimates_keep_the_standard_error_s_exact_arithmetic() {
        let mut rng = SimulationRng::seed_from_u64(215);
        let mut checked = 0;
        for kind in [SketchKind::Cms, SketchKind::Hcms] {
            for epsilon in [0.5, 1.0, 2.0, 4.0, 8.0] {
                for width in [2u64, 16, 64, 1024] {
                    let sketch = Sketch::new(kind, epsilon, 4, width);
                    let (m, f) = (width as f64, sketch.flip_probability());
                    for key in 0..20u64 {
                        let n = 1 + rng.next_u64() % 1_000_000;
                        let cell = |rng: &mut SimulationRng| (rng.next_u64() % (n * 3 / 10 + 1)) as f64;
                        let table: Vec<f64> = (0..4 * width).map(|_| cell(&mut rng)).collect();
                        let (count, std_error) = sketch.estimate(&table, n, key);
                        let (n, c) = (n as f64, count.clamp(0.0, n as f64));
                        let per_report = match kind {
                            SketchKind::Cms => n * f * (1.0 - f) / (1.0 - 2.0 * f).powi(2) + (n - c) * (1.0 / m) * (1.0 - 1.0 / m),
                            SketchKind::Hcms => n / (1.0 - 2.0 * f).powi(2) - c - (n - c) / (m * m),
                        };
                        let old = (m / (m - 1.0)) * per_report.max(0.0).sqrt();
                        assert_eq!(std_error.to_bits(), old.to_bits(), "{kind:?} ε {epsilon} m {width} n {n} c {c}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 800);
    }

    /// A CMS report of the default width (1024 bits) draws about 16 × 7.3
    /// words (64 flips per `sample_bits`), not one word per bit.
    #[test]
    fn cms_reports_draw_a_few_words_not_one_per_bit() {
        let sketch = Sketch::new(SketchKind::Cms, 2.0, 256, 1024);
        let mut rng = Counting(SimulationRng::seed_from_u64(1), 0);
        for key in 0..1000 {
            sketch.randomize(key, key % 256, &mut rng);
        }
        let per_report = rng.1 as f64 / 1000.0;
        assert!(per_report < 128.0, "{per_report} words per report");
    }
}
