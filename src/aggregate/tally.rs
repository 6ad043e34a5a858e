//! What every aggregator counts besides its mechanism's counts: accepted
//! and rejected reports ([`Tally`], [`RejectionCounts`]), with the checked
//! sums merges use, and the 95% quantile intervals use.

use localdp_core::error::{Error, Rejection, Result};
use crate::state::{StateError, StateReader, StateWriter};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Rejected reports, counted by reason.
///
/// ```
/// use localdp::{Rejection, RejectionCounts};
/// let mut counts = RejectionCounts::default();
/// counts.count(Rejection::Malformed);
/// counts.add(Rejection::BadLength, 3)?; // e.g. counts a collector kept beside its reports
/// assert_eq!((counts.get(Rejection::Malformed), counts.get(Rejection::BadLength)), (1, 3));
/// assert_eq!(counts.total(), 4);
/// assert!(counts.add(Rejection::BadLength, u64::MAX).is_err()); // and nothing changed
/// assert_eq!(counts.total(), 4);
/// # Ok::<(), localdp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RejectionCounts([u64; Rejection::ALL.len()]);

impl RejectionCounts {
    /// Counts one more rejection.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn count(&mut self, reason: Rejection) {
        self.0[reason as usize] += 1;
    }

    /// Counts `n` more rejections for `reason` at once: counts kept beside
    /// the reports (a collector's table, a Parquet file's
    /// `localdp.rejected`). An error, and no change, if the count would pass
    /// [`crate::state::MAX_COUNT`].
    ///
    /// See the example on [`RejectionCounts`].
    pub fn add(&mut self, reason: Rejection, n: u64) -> Result<()> {
        let count = &mut self.0[reason as usize];
        *count = checked_sum(*count, n)?;
        Ok(())
    }

    /// The count for one reason.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn get(&self, reason: Rejection) -> u64 {
        self.0[reason as usize]
    }

    /// All rejections.
    ///
    /// See the example on [`RejectionCounts`].
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The rejections counted after `earlier` was taken. A reason whose
    /// count in `earlier` is larger (it was not taken from this aggregator)
    /// gives zero, never a wrapped-around count.
    ///
    /// ```
    /// use localdp::{Rejection, RejectionCounts};
    /// let mut later = RejectionCounts::default();
    /// later.count(Rejection::Malformed);
    /// later.count(Rejection::Malformed);
    /// let mut other = RejectionCounts::default();
    /// other.count(Rejection::ConfigMismatch);
    /// let new = later.since(&other);
    /// assert_eq!((new.get(Rejection::Malformed), new.get(Rejection::ConfigMismatch)), (2, 0));
    /// ```
    pub fn since(&self, earlier: &RejectionCounts) -> RejectionCounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// Counts a rejection error by its reason and hands it back.
    pub(crate) fn count_error(&mut self, e: Error) -> Error {
        if let Error::Rejected { reason, .. } = e {
            self.count(reason);
        }
        e
    }

    /// Both counts added, or an error on overflow.
    pub(crate) fn merged(&self, other: &RejectionCounts) -> Result<RejectionCounts> {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = checked_sum(*a, b)?;
        }
        Ok(out)
    }

    /// Writes the counts (every reason, in [`Rejection::ALL`] order).
    pub(crate) fn write(&self, out: &mut StateWriter) {
        out.counts(&self.0);
    }

    /// Reads what [`RejectionCounts::write`] wrote.
    pub(crate) fn read(input: &mut StateReader<'_>) -> Result<RejectionCounts> {
        let mut counts = RejectionCounts::default();
        input.counts(&mut counts.0, u64::MAX, "the rejection reasons")?;
        Ok(counts)
    }
}

impl Serialize for RejectionCounts {
    /// Every reason with its count, zeros included, so the keys are stable.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(Rejection::ALL.len()))?;
        for reason in Rejection::ALL {
            map.serialize_entry(reason.as_str(), &self.get(reason))?;
        }
        map.end()
    }
}

/// What every aggregator keeps besides its mechanism's own counts: the
/// accepted reports and the rejected ones by reason. One implementation of
/// counting, merging and restoring them for every family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    n: u64,
    rejected: RejectionCounts,
}

impl Tally {
    /// Accepted reports.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Rejected reports, by reason.
    pub fn rejected(&self) -> &RejectionCounts {
        &self.rejected
    }

    /// Counts one accepted report.
    pub(crate) fn accept(&mut self) {
        self.n += 1;
    }

    /// Counts a batch's accepted reports and its rejections.
    pub(crate) fn count_batch(&mut self, accepted: u64, rejected: &RejectionCounts) {
        self.n += accepted;
        for (count, more) in self.rejected.0.iter_mut().zip(rejected.0) {
            *count += more;
        }
    }

    /// Counts a rejection error by its reason and hands it back.
    pub(crate) fn reject(&mut self, e: Error) -> Error {
        self.rejected.count_error(e)
    }

    /// Both tallies added, or an error past [`crate::state::MAX_COUNT`].
    pub(crate) fn merged(&self, other: &Tally) -> Result<Tally> {
        Ok(Tally { n: checked_sum(self.n, other.n)?, rejected: self.rejected.merged(&other.rejected)? })
    }

    /// Replaces the rejections (a collector restoring stored counts).
    pub(crate) fn restore_rejected(&mut self, counts: RejectionCounts) {
        self.rejected = counts;
    }

    pub(crate) fn write(&self, out: &mut StateWriter) {
        out.u64(self.n);
        self.rejected.write(out);
    }

    pub(crate) fn read(input: &mut StateReader<'_>) -> Result<Tally> {
        Ok(Tally { n: input.u64()?, rejected: RejectionCounts::read(input)? })
    }
}

/// Exact integer sums of output indices: mergeable without rounding, so an
/// estimate does not depend on the order reports arrived in.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sums {
    pub count: u64,
    pub sum: u128,
    pub sum_of_squares: u128,
}

/// `a + b`, or an error if a count would pass
/// [`crate::state::MAX_COUNT`] (only forged states can get there).
pub(crate) fn checked_sum<T: num_like::CheckedAdd>(a: T, b: T) -> Result<T> {
    a.checked(b).ok_or(Error::State(StateError::Inconsistent { what: "merged counts overflow" }))
}

/// Two count vectors added element by element with [`checked_sum`] (a merge).
pub(crate) fn summed(a: &[u64], b: &[u64]) -> Result<Vec<u64>> {
    a.iter().zip(b).map(|(&x, &y)| checked_sum(x, y)).collect()
}

pub(crate) mod num_like {
    /// Integer addition that reports overflow.
    pub trait CheckedAdd: Sized {
        fn checked(self, other: Self) -> Option<Self>;
    }
    impl CheckedAdd for u64 {
        fn checked(self, other: Self) -> Option<Self> {
            self.checked_add(other).filter(|&sum| sum <= crate::state::MAX_COUNT)
        }
    }
    impl CheckedAdd for u128 {
        fn checked(self, other: Self) -> Option<Self> {
            self.checked_add(other)
        }
    }
}
