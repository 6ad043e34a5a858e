//! Column kernels: frequency and numeric reports counted from a
//! [`ReportBatch`]'s columns, with the same validation, counts and
//! rejections as one report at a time ([`localdp_core::frequency::Kernel`] states
//! what each protocol checks and counts), but no allocation per row and no
//! work per row beyond the counting itself.
//!
//! A kernel runs on a batch whose envelope matches and whose columns are
//! exactly the protocol's, with no null (the form a writer of this metric's
//! reports produces); anything else goes row by row
//! ([`crate::mechanism::add_rows`]), which gives the same counts. Only the
//! first rejected row's error is built (again row by row); the others are
//! counted by reason.
//!
//! * Indices (GRR, HR) and Hadamard coefficients (HRR): one increment per
//!   row.
//! * Bit vectors (SUE, OUE, SS): a row is read as 64-bit words; bit `k` of
//!   every byte of a word is added at once, as eight 8-bit lanes of one
//!   counter word (`(word >> k) & 0x0101…01`), and the lanes are flushed to
//!   the counts before they can overflow (every 255 rows).
//! * Local hashing (BLH, OLH): every value is hashed under every row's seed
//!   (exact decoding) with no branch: the wire hash ([`localdp_core::hash::mix64`]
//!   itself) of the value's key and the row's salted seed, and a row's
//!   bucket `y` turned into the range of hash top halves that fall into it,
//!   so the match is one subtraction and one comparison, added to 32-bit
//!   lane counters.
//! * Numeric reports (one number, or a record's lists): range checks and
//!   exact integer sums per attribute and component.
//!
//! The loops are written to be vectorized by the compiler; on x86-64 they
//! are also compiled for wider instruction sets, chosen at run time
//! (`multiversion!`).

use super::tally::{RejectionCounts, Sums};
use crate::columnar::{Bytes, Column, ReportBatch};
use localdp_core::error::{Error, Rejection, Result};
use localdp_core::frequency::Kernel;
use localdp_core::hash::{mix64, salt};
use crate::mechanism::Aggregate;
use localdp_core::report::Report;

/// What a kernel counted: accepted rows, rejections by reason, and the
/// first rejected row.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub accepted: u64,
    pub rejected: RejectionCounts,
    pub first: Option<usize>,
}

impl Outcome {
    fn reject(&mut self, row: usize, reason: Rejection) {
        self.rejected.count(reason);
        self.first.get_or_insert(row);
    }

    /// Counts the rows not rejected as accepted.
    fn accept_rest(mut self, rows: usize) -> Outcome {
        self.accepted = rows as u64 - self.rejected.total();
        self
    }
}

/// Books a kernel's outcome into the aggregator's tally and builds the
/// first rejected row's error (the only one built), row by row: the row's
/// own error, or the one `validate` gives its report.
pub(crate) fn finish<A: Aggregate>(
    aggregator: &mut A,
    batch: &ReportBatch<'_>,
    outcome: Outcome,
    validate: impl Fn(&A, &Report) -> Result<()>,
) -> Option<(usize, Error)> {
    aggregator.tally_mut().count_batch(outcome.accepted, &outcome.rejected);
    let row = outcome.first?;
    let error = match batch.row(row) {
        Err(e) => e,
        Ok(payload) => validate(aggregator, &aggregator.envelope(payload)).err()?,
    };
    Some((row, error))
}

/// Defines a function whose body is compiled for the baseline and, on
/// x86-64, for each tier of target features listed (best first), the first
/// tier the CPU has chosen at run time. (Which tier pays depends on the
/// loop: AVX-512's 64-bit multiply makes the hashing loop 3× faster than
/// AVX2, while the bit-lane loop runs best as AVX2; measured by
/// `benches/kernels.rs`.)
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block
        tiers: $($tier:tt),+
    ) => {
        $(#[$meta])*
        fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn portable($($arg: $ty),*) $body
            multiversion!(@tiers ($($arg: $ty),*) $($tier)+);
            portable($($arg),*)
        }
    };
    (@tiers $params:tt $($tier:tt)+) => {
        $(multiversion!(@tier $params $tier);)+
    };
    (@tier ($($arg:ident: $ty:ty),*) [$($feature:tt),+]) => {
        #[cfg(target_arch = "x86_64")]
        {
            $(#[target_feature(enable = $feature)])+
            fn tier($($arg: $ty),*) {
                portable($($arg),*)
            }
            if $(std::arch::is_x86_feature_detected!($feature))&&+ {
                // SAFETY: the CPU has the features `tier` is compiled for.
                return unsafe { tier($($arg),*) };
            }
        }
    };
}

/// The columns a batch has: value, seed, cohort, bits, attributes, values.
fn columns(batch: &ReportBatch<'_>) -> [bool; 6] {
    [
        batch.value.is_some(),
        batch.seed.is_some(),
        batch.cohort.is_some(),
        batch.bits.is_some(),
        batch.attributes.is_some(),
        batch.values.is_some(),
    ]
}

/// The first `len` values of a column without nulls.
fn dense<'a, T>(column: Option<Column<'a, T>>, len: usize) -> Option<&'a [T]> {
    column.filter(|c| c.valid.is_none()).and_then(|c| c.values.get(..len))
}

/// Counts a frequency batch (envelope already matched) into `counts`, or
/// `None` when its columns are not the kernel's (then it goes row by row).
pub(crate) fn frequency(kernel: Kernel<'_>, batch: &ReportBatch<'_>, counts: &mut [u64]) -> Option<Outcome> {
    const VALUE: [bool; 6] = [true, false, false, false, false, false];
    const SEED_VALUE: [bool; 6] = [true, true, false, false, false, false];
    const BITS: [bool; 6] = [false, false, false, true, false, false];
    let len = batch.len;
    let mut out = Outcome::default();
    match kernel {
        Kernel::Index { range } if columns(batch) == VALUE && counts.len() as u64 == range => {
            indices(dense(batch.value, len)?, counts, &mut out);
        }
        Kernel::Coefficient { k } if columns(batch) == SEED_VALUE && counts.len() as u64 == 2 * k => {
            coefficients(dense(batch.seed, len)?, dense(batch.value, len)?, counts, &mut out);
        }
        Kernel::Hashed { g, keys } if columns(batch) == SEED_VALUE && g >= 2 && counts.len() == keys.len() => {
            hashed(dense(batch.seed, len)?, dense(batch.value, len)?, g, keys, counts, &mut out);
        }
        Kernel::Bits { d, weight } if columns(batch) == BITS && counts.len() == d => {
            bits(batch.bits?, len, d, weight, counts, &mut out);
        }
        _ => return None,
    }
    Some(out.accept_rest(len))
}

/// GRR, HR: one count per index; an index past the counts is out of range.
fn indices(values: &[u64], counts: &mut [u64], out: &mut Outcome) {
    for (i, &v) in values.iter().enumerate() {
        match usize::try_from(v).ok().and_then(|v| counts.get_mut(v)) {
            Some(count) => *count += 1,
            None => out.reject(i, Rejection::OutOfRange),
        }
    }
}

/// HRR: column `seed` below `k` and bit `value`, at count `2·seed + value`.
fn coefficients(seeds: &[u32], values: &[u64], counts: &mut [u64], out: &mut Outcome) {
    let k = counts.len() / 2;
    for (i, (&seed, &value)) in seeds.iter().zip(values).enumerate() {
        if (seed as usize) < k && value <= 1 {
            counts[2 * seed as usize + value as usize] += 1;
        } else {
            out.reject(i, Rejection::OutOfRange);
        }
    }
}

/// Rows between flushes of 32-bit lane counters (far below 2^32).
const HASHED_FLUSH: usize = 1 << 30;

/// BLH, OLH: exact decoding, every key hashed under every row's seed.
fn hashed(seeds: &[u32], values: &[u64], g: u64, keys: &[u64], counts: &mut [u64], out: &mut Outcome) {
    let mut lanes = vec![0u32; keys.len()];
    for (chunk, (seeds, values)) in seeds.chunks(HASHED_FLUSH).zip(values.chunks(HASHED_FLUSH)).enumerate() {
        hashed_rows(seeds, values, g, keys, &mut lanes, out, chunk * HASHED_FLUSH);
        for (count, lane) in counts.iter_mut().zip(&mut lanes) {
            *count += u64::from(std::mem::take(lane));
        }
    }
}

multiversion! {
    /// Adds to `lanes` the keys whose bucket under each row's seed is the
    /// row's value (rows numbered from `first_row`).
    #[allow(clippy::too_many_arguments)]
    fn hashed_rows(
        seeds: &[u32],
        values: &[u64],
        g: u64,
        keys: &[u64],
        lanes: &mut [u32],
        out: &mut Outcome,
        first_row: usize,
    ) {
        for (i, (&seed, &value)) in seeds.iter().zip(values).enumerate() {
            if value >= g {
                out.reject(first_row + i, Rejection::OutOfRange);
                continue;
            }
            // bucket = (top · g) >> 32 = value exactly when `top`, the hash's
            // top half, lies in [⌈value·2^32/g⌉, ⌈(value+1)·2^32/g⌉): a range
            // narrower than 2^32 (g ≥ 2), so one wrapping comparison.
            let start = (u128::from(value) << 32).div_ceil(u128::from(g));
            let end = (u128::from(value + 1) << 32).div_ceil(u128::from(g));
            let (start, width) = (start as u32, (end - start) as u32);
            let salt = salt(seed);
            for (lane, &key) in lanes.iter_mut().zip(keys) {
                let top = (mix64(key ^ salt) >> 32) as u32;
                *lane += u32::from(top.wrapping_sub(start) < width);
            }
        }
    }
    tiers: ["avx512f", "avx512dq", "avx512vl", "avx512bw"], ["avx2"]
}

/// Rows between flushes of the 8-bit lanes.
const BITS_FLUSH: usize = 255;

multiversion! {
    /// SUE, OUE, SS: every set bit counted; a row of another length or with
    /// padding bits set is a bad length, one with another number of ones
    /// (SS) a bad subset size; a null row or one out of bounds is malformed.
    fn bits(column: Bytes<'_>, len: usize, d: usize, weight: Option<usize>, counts: &mut [u64], out: &mut Outcome) {
        const LOW_BITS: u64 = 0x0101_0101_0101_0101;
        let words = d.div_ceil(64);
        // lanes[k * words + w]: byte lane b counts bit k of byte b of word w.
        let mut lanes = vec![0u64; 8 * words];
        let mut row = vec![0u64; words];
        let mut pending = 0;
        for i in 0..len {
            let bytes = match column.get(i) {
                Ok(Some(bytes)) => bytes,
                Ok(None) | Err(_) => {
                    out.reject(i, Rejection::Malformed);
                    continue;
                }
            };
            let padding_clean = d % 8 == 0 || bytes.last().is_none_or(|&b| b >> (d % 8) == 0);
            if bytes.len() != d.div_ceil(8) || !padding_clean {
                out.reject(i, Rejection::BadLength);
                continue;
            }
            let mut chunks = bytes.chunks_exact(8);
            for (word, chunk) in row.iter_mut().zip(&mut chunks) {
                *word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            }
            if let (rest @ [_, ..], Some(last)) = (chunks.remainder(), row.last_mut()) {
                let mut le = [0u8; 8];
                le[..rest.len()].copy_from_slice(rest);
                *last = u64::from_le_bytes(le);
            }
            if weight.is_some_and(|k| ones(&row) != k as u64) {
                out.reject(i, Rejection::BadSubsetSize);
                continue;
            }
            for (k, lanes) in lanes.chunks_exact_mut(words).enumerate() {
                for (lane, &word) in lanes.iter_mut().zip(&row) {
                    *lane += (word >> k) & LOW_BITS;
                }
            }
            pending += 1;
            if pending == BITS_FLUSH {
                flush_bit_lanes(&mut lanes, words, counts);
                pending = 0;
            }
        }
        flush_bit_lanes(&mut lanes, words, counts);
    }
    tiers: ["avx2", "popcnt"]
}

/// The number of ones of a row's words.
fn ones(row: &[u64]) -> u64 {
    row.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Adds the 8-bit lanes to the counts and empties them.
fn flush_bit_lanes(lanes: &mut [u64], words: usize, counts: &mut [u64]) {
    for (k, lanes) in lanes.chunks_exact_mut(words).enumerate() {
        for (w, lane) in lanes.iter_mut().enumerate() {
            for b in 0..8 {
                if let Some(count) = counts.get_mut(64 * w + 8 * b + k) {
                    *count += *lane >> (8 * b) & 0xff;
                }
            }
            *lane = 0;
        }
    }
}

/// A numeric metric's output grid: indices below `outputs`, in components
/// that end at `ends` (increasing; the last takes the rest).
pub(crate) struct Grid<'a> {
    pub outputs: u64,
    pub ends: &'a [u64],
}

impl Grid<'_> {
    /// Adds the output index `k` (below `outputs`) to the sums of its
    /// component among `sums` (one per component), as
    /// `NumericAggregator::accumulate` does.
    fn add(&self, sums: &mut [Sums], k: u64) {
        let c = self.ends.iter().position(|&end| k < end).unwrap_or(self.ends.len() - 1);
        let s = &mut sums[c];
        s.count += 1;
        s.sum += u128::from(k);
        s.sum_of_squares += u128::from(k) * u128::from(k);
    }
}

/// Counts a numeric batch of one number per report (envelope already
/// matched): a `value` column without nulls, else `None`; a value past the
/// grid is out of range.
pub(crate) fn numbers(batch: &ReportBatch<'_>, grid: &Grid<'_>, sums: &mut [Sums]) -> Option<Outcome> {
    if columns(batch) != [true, false, false, false, false, false]
        || grid.ends.is_empty()
        || sums.len() != grid.ends.len()
    {
        return None;
    }
    let values = dense(batch.value, batch.len)?;
    let mut out = Outcome::default();
    for (i, &v) in values.iter().enumerate() {
        if v < grid.outputs {
            grid.add(sums, v);
        } else {
            out.reject(i, Rejection::OutOfRange);
        }
    }
    Some(out.accept_rest(batch.len))
}

/// Counts a numeric batch of records (envelope already matched): list
/// columns `attributes` and `values` without nulls, else `None`. As
/// `NumericMetric::validate`: other than `sampled` of each is a bad subset
/// size, attributes not increasing are malformed, an attribute or a value
/// out of range is out of range; a row whose lists are out of bounds is
/// malformed.
pub(crate) fn records(
    batch: &ReportBatch<'_>,
    sampled: usize,
    attributes: usize,
    grid: &Grid<'_>,
    sums: &mut [Sums],
) -> Option<Outcome> {
    let components = grid.ends.len();
    if columns(batch) != [false, false, false, false, true, true]
        || components == 0
        || sums.len() != attributes * components
    {
        return None;
    }
    let (Some(sampled_attributes), Some(sampled_values)) =
        (batch.attributes.filter(|l| l.valid.is_none()), batch.values.filter(|l| l.valid.is_none()))
    else {
        return None;
    };
    let mut out = Outcome::default();
    for i in 0..batch.len {
        let (Ok(Some(a)), Ok(Some(v))) = (sampled_attributes.get(i), sampled_values.get(i)) else {
            out.reject(i, Rejection::Malformed);
            continue;
        };
        let reason = if a.len() != sampled || v.len() != sampled {
            Some(Rejection::BadSubsetSize)
        } else if a.windows(2).any(|w| w[0] >= w[1]) {
            Some(Rejection::Malformed)
        } else if a.iter().any(|&x| x as usize >= attributes) || v.iter().any(|&k| k >= grid.outputs) {
            Some(Rejection::OutOfRange)
        } else {
            None
        };
        match reason {
            Some(reason) => out.reject(i, reason),
            None => {
                for (&x, &k) in a.iter().zip(v) {
                    grid.add(&mut sums[x as usize * components..][..components], k);
                }
            }
        }
    }
    Some(out.accept_rest(batch.len))
}
