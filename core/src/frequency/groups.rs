//! Several frequency oracles of which each device draws one, uniformly and
//! independently of its value (a level of a hierarchical histogram, a set
//! of attributes of a marginal), and reports through it at the full ε.
//!
//! A report carries the group with the oracle's payload ([`in_group`]):
//! OUE's bits as `cohort` and `bits`, a seed and value (OLH, HRR) as
//! `group`, `seed` and `value`. The running counts are one vector: the
//! reports of each group, then each group's oracle counts.

use super::channel::{in_group, of_group};
use crate::frequency::{channel::Likelihood, oracle::FrequencyOracle};
use crate::error::{Error, Rejection, Result};
use crate::report::Payload;
use crate::rng::RngCore;
use crate::error::StateError;
use crate::text::text;

/// The oracles a device draws one of, and where each one's counts lie.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub struct OracleGroups {
    oracles: Vec<FrequencyOracle>,
    /// The offset of each group's oracle counts; the last is the length.
    offsets: Vec<usize>,
    /// What a group is, for messages (`"the level"`).
    what: &'static str,
}

impl OracleGroups {
    /// At least one oracle.
    pub(crate) fn new(oracles: Vec<FrequencyOracle>, what: &'static str) -> Self {
        let mut offsets = vec![oracles.len()];
        for oracle in &oracles {
            offsets.push(offsets.last().unwrap() + oracle.mechanism().counts_len());
        }
        OracleGroups { oracles, offsets, what }
    }

    /// The oracles, in group order.
    pub(crate) fn oracles(&self) -> &[FrequencyOracle] {
        &self.oracles
    }

    /// The length of the running counts.
    #[doc(hidden)]
    pub fn counts_len(&self) -> usize {
        *self.offsets.last().expect("at least one group")
    }

    /// The payload of the value at `index` of `group`'s oracle.
    pub(crate) fn randomize(&self, group: usize, index: usize, rng: &mut dyn RngCore) -> Payload {
        in_group(group as u32, self.oracles[group].mechanism().randomize(index, rng))
    }

    /// The group and the oracle's payload of a valid payload.
    pub(crate) fn validate(&self, payload: &Payload) -> Result<(usize, Payload)> {
        let (group, inner) = of_group(payload, self.what)?;
        let oracle = self
            .oracles
            .get(group)
            .ok_or_else(|| Rejection::OutOfRange.error(text!("cohort (", self.what, ") must be below ", self.oracles.len())))?;
        oracle.mechanism().validate(&inner)?;
        Ok((group, inner))
    }

    /// `P[payload | value]`: the group's `1/groups` times its oracle's
    /// probability of the payload for the value's index there (`index_in`).
    #[cfg(feature = "aggregate")]
    pub(crate) fn likelihood(&self, index_in: impl Fn(usize) -> usize, payload: &Payload) -> Likelihood {
        match self.validate(payload) {
            Ok((group, inner)) => {
                self.oracles[group].mechanism().likelihood(index_in(group), &inner).times(1.0 / self.oracles.len() as f64)
            }
            Err(_) => Likelihood::new(0.0),
        }
    }

    /// Payloads that exercise every group's channel.
    #[cfg(feature = "aggregate")]
    pub(crate) fn channel_outputs(&self, rng: &mut dyn RngCore) -> Vec<Payload> {
        let mut out = Vec::new();
        for (group, oracle) in self.oracles.iter().enumerate() {
            let payloads = oracle.mechanism().channel_outputs(oracle.domain().len(), rng).into_vec();
            out.extend(payloads.into_iter().map(|p| in_group(group as u32, p)));
        }
        out
    }

    /// The wire fields: the cohort, and what any group's oracle sends.
    #[cfg(feature = "aggregate")]
    pub(crate) fn report_fields(&self) -> crate::report::ReportFields {
        use crate::report::{Presence, ReportFields};
        use crate::metric::kind::Kind;
        let fields = self.oracles.iter().map(Kind::report_fields).reduce(ReportFields::either).unwrap_or(ReportFields::NONE);
        ReportFields { cohort: Presence::Always, ..fields }
    }

    /// Adds a valid payload to the counts.
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn accumulate(&self, payload: &Payload, counts: &mut [u64]) {
        if let Ok((group, inner)) = self.validate(payload) {
            counts[group] += 1;
            self.oracles[group].mechanism().accumulate(&inner, self.counts_mut(group, counts));
        }
    }

    /// The reports of `group` and its oracle's counts.
    pub(crate) fn counts<'a>(&self, group: usize, counts: &'a [u64]) -> (u64, &'a [u64]) {
        (counts[group], &counts[self.offsets[group]..self.offsets[group + 1]])
    }

    fn counts_mut<'a>(&self, group: usize, counts: &'a mut [u64]) -> &'a mut [u64] {
        &mut counts[self.offsets[group]..self.offsets[group + 1]]
    }

    /// Checks counts read from a state of `n` reports.
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn check_counts(&self, counts: &[u64], n: u64) -> Result<()> {
        let inconsistent = |what| Error::from(StateError::Inconsistent { what });
        let groups = self.oracles.len();
        if counts[..groups].iter().map(|&c| u128::from(c)).sum::<u128>() != u128::from(n) {
            return Err(inconsistent("the groups do not hold the number of reports"));
        }
        for (group, oracle) in self.oracles.iter().enumerate() {
            let (reports, group_counts) = self.counts(group, counts);
            if group_counts.iter().any(|&c| c > reports) {
                return Err(inconsistent("a count exceeds its group's reports"));
            }
            oracle.mechanism().check_counts(group_counts, reports)?;
        }
        Ok(())
    }

    /// The unbiased frequencies of `group`'s oracle from the counts, and
    /// its reports (`None` if it has none).
    #[doc(hidden)]
    #[cfg(feature = "aggregate")]
    pub fn frequencies(&self, group: usize, counts: &[u64]) -> Option<(u64, Vec<f64>)> {
        let (reports, group_counts) = self.counts(group, counts);
        if reports == 0 {
            return None;
        }
        let mechanism = self.oracles[group].mechanism();
        let (p, q) = mechanism.support_probabilities();
        let support = mechanism.support_counts(group_counts, reports);
        Some((reports, support.into_iter().map(|s| (s / reports as f64 - q) / (p - q)).collect()))
    }
}
