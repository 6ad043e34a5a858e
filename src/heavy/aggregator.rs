//! Heavy hitters' server half: the sketch counts or every discovery
//! report, their state bytes, merges, and the estimate.

use super::decode::{Decoder, Level};
use localdp_core::heavy::metric::{HeavyHitterMetric, Mechanism};
use localdp_core::heavy::sketch::SketchKind;
use localdp_core::metric::Kind;
use crate::aggregate::tally::{RejectionCounts, summed, Tally, Z95};
use localdp_core::error::{Error, MergeConflict, Requirement, Result};
use localdp_core::hash::key64;
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::protocol::HeavyHitterProtocol;
use crate::rappor::aggregator::CandidateEstimate;
use localdp_core::report::{Payload, Report};
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

/// What a heavy-hitter estimate lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub enum Found {
    /// Sketches: every candidate, in the config's order.
    #[serde(rename = "estimates")]
    Estimates(Vec<CandidateEstimate>),
    /// Discovery: the values found, most frequent first.
    #[serde(rename = "heavy_hitters")]
    HeavyHitters(Vec<CandidateEstimate>),
}

/// The estimate of a heavy-hitter metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeavyHitterEstimate {
    /// The resolved protocol.
    pub protocol: HeavyHitterProtocol,
    /// ε of one report.
    pub epsilon: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// `"estimates"` (sketches) or `"heavy_hitters"` (discovery).
    #[serde(flatten)]
    pub found: Found,
}

impl HeavyHitterEstimate {
    /// The values listed, whichever the kind.
    ///
    /// ```
    /// use localdp::{Aggregate, HeavyHitterAggregator, HeavyHitterMetric, Randomizer, SimulationRng};
    /// let metric = HeavyHitterMetric::from_json(r#"{"protocol":"hcms","epsilon":2,"candidates":["a","b"]}"#)?;
    /// let mut rng = SimulationRng::seed_from_u64(5); // simulation only
    /// let mut aggregator = HeavyHitterAggregator::new(metric.clone());
    /// for value in ["a", "a", "b", "c"] {
    ///     aggregator.add(&metric.randomize(value, &mut rng)?)?;
    /// }
    /// let estimate = aggregator.estimate()?;
    /// let listed: Vec<&str> = estimate.values().iter().map(|c| c.value.as_str()).collect();
    /// assert_eq!(listed, ["a", "b"]); // the candidates, scored
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn values(&self) -> &[CandidateEstimate] {
        match &self.found {
            Found::Estimates(v) | Found::HeavyHitters(v) => v,
        }
    }
}


/// The running state of a heavy-hitter aggregator.
#[derive(Debug, Clone)]
enum Counts {
    /// Reports per group (CMS: row; HCMS: row and column) and set bits per
    /// row and column.
    Sketch { groups: Vec<u64>, ones: Vec<u64> },
    /// Every report, per level.
    Discovery { levels: Vec<Level> },
}

/// Aggregates heavy-hitter reports.
#[derive(Debug, Clone)]
pub struct HeavyHitterAggregator {
    metric: HeavyHitterMetric,
    counts: Counts,
    tally: Tally,
}

impl AggregateState for HeavyHitterAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        match &self.counts {
            Counts::Sketch { groups, ones } => {
                out.counts(groups);
                out.counts(ones);
            }
            Counts::Discovery { levels } => {
                out.counts(&levels.iter().map(|l| l.len() as u64).collect::<Vec<_>>());
                // In one canonical order, so that the state of merged shards
                // is the same bytes as that of one aggregator fed everything.
                for level in levels {
                    let mut pairs: Vec<(u32, u32)> = level.seeds.iter().copied().zip(level.values.iter().copied()).collect();
                    pairs.sort_unstable();
                    out.counts(&pairs.iter().map(|&(s, _)| u64::from(s)).collect::<Vec<_>>());
                    out.counts(&pairs.iter().map(|&(_, v)| u64::from(v)).collect::<Vec<_>>());
                }
            }
        }
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        let inconsistent = |what| Error::from(StateError::Inconsistent { what });
        match (&mut self.counts, &self.metric.mechanism()) {
            (Counts::Sketch { groups, ones }, Mechanism::Sketch(_) | Mechanism::Fragments(_)) => {
                let sketch = self.metric.counting_sketch().expect("a sketch counts");
                input.counts(groups, n, "a group holds more reports than the state")?;
                if groups.iter().map(|&c| u128::from(c)).sum::<u128>() != u128::from(n) {
                    return Err(inconsistent("the groups do not hold the number of reports"));
                }
                input.counts(ones, n, "a bit count exceeds the number of reports")?;
                let m = sketch.width() as usize;
                let within = |cell: usize, o: u64| match sketch.kind() {
                    SketchKind::Cms => o <= groups[cell / m],
                    SketchKind::Hcms => o <= groups[cell],
                };
                if !ones.iter().enumerate().all(|(cell, &o)| within(cell, o)) {
                    return Err(inconsistent("a bit count exceeds its group's reports"));
                }
            }
            (Counts::Discovery { levels }, Mechanism::Discovery(d)) => {
                let mut sizes = vec![0u64; levels.len()];
                input.counts(&mut sizes, n, "a level holds more reports than the state")?;
                if sizes.iter().map(|&c| u128::from(c)).sum::<u128>() != u128::from(n) {
                    return Err(inconsistent("the levels do not hold the number of reports"));
                }
                for (level, &size) in levels.iter_mut().zip(&sizes) {
                    let seeds = read_u32s(input, size, u32::MAX, "a seed is not 32 bits")?;
                    let values = read_u32s(input, size, (d.buckets() - 1) as u32, "a bucket is not below g")?;
                    // The order write_counts gives, so that a state reads back to the same bytes.
                    if !(1..seeds.len()).all(|i| (seeds[i - 1], values[i - 1]) <= (seeds[i], values[i])) {
                        return Err(inconsistent("a level's reports are not in canonical order"));
                    }
                    (level.seeds, level.values) = (seeds, values);
                }
            }
            _ => unreachable!("the counts are made for the mechanism"),
        }
        Ok(())
    }
}

/// A list of `len` numbers written by [`StateWriter::counts`], each at most
/// `max`. It grows as numbers are read (each takes at least a byte), so a
/// forged length fails as truncated instead of allocating it up front.
fn read_u32s(input: &mut StateReader<'_>, len: u64, max: u32, what: &'static str) -> Result<Vec<u32>> {
    let inconsistent = || Error::from(StateError::Inconsistent { what });
    if input.u64()? != len {
        return Err(inconsistent());
    }
    let mut out = Vec::new();
    for _ in 0..len {
        out.push(u32::try_from(input.u64()?).ok().filter(|&x| x <= max).ok_or_else(inconsistent)?);
    }
    Ok(out)
}

impl Aggregate for HeavyHitterAggregator {
    type Mechanism = HeavyHitterMetric;
    type Estimate = HeavyHitterEstimate;

    fn new(metric: HeavyHitterMetric) -> Self {
        let counts = match &metric.mechanism() {
            Mechanism::Sketch(s) => Counts::Sketch { groups: vec![0; s.groups_len()], ones: vec![0; s.ones_len()] },
            Mechanism::Discovery(d) => Counts::Discovery { levels: vec![Level::default(); d.levels() as usize] },
            Mechanism::Fragments(f) => {
                let parts = f.parts() as usize;
                Counts::Sketch { groups: vec![0; parts * f.sketch().groups_len()], ones: vec![0; parts * f.sketch().ones_len()] }
            }
        };
        HeavyHitterAggregator { metric, counts, tally: Tally::default() }
    }

    fn mechanism(&self) -> &HeavyHitterMetric {
        &self.metric
    }

    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        match (&mut self.counts, &self.metric.mechanism()) {
            (Counts::Sketch { groups, ones }, Mechanism::Sketch(s)) => s.accumulate(&report.payload, groups, ones),
            (Counts::Sketch { groups, ones }, Mechanism::Fragments(f)) => f.sketch().accumulate(&report.payload, groups, ones),
            (Counts::Discovery { levels }, _) => {
                if let Payload::Grouped { group, seed, value } = report.payload {
                    let level = &mut levels[group as usize];
                    level.seeds.push(seed);
                    level.values.push(value as u32);
                }
            }
            _ => unreachable!("the counts are made for the mechanism"),
        }
        self.tally.accept();
        Ok(())
    }

    fn merge(&mut self, other: &HeavyHitterAggregator) -> Result<()> {
        // The state's identity: protocol, ε and fingerprint (the fingerprint
        // alone leaves out ε, and counts made at another ε decode wrongly).
        if Aggregate::state_id(self) != Aggregate::state_id(other) {
            return Err(Error::MergeMismatch {
                ours: Aggregate::state_id(self),
                theirs: Aggregate::state_id(other),
                conflict: MergeConflict::Configuration,
            });
        }
        let tally = self.tally.merged(&other.tally)?;
        match (&mut self.counts, &other.counts) {
            (Counts::Sketch { groups, ones }, Counts::Sketch { groups: g2, ones: o2 }) => {
                let (g, o) = (summed(groups, g2)?, summed(ones, o2)?);
                (*groups, *ones) = (g, o);
            }
            (Counts::Discovery { levels }, Counts::Discovery { levels: theirs }) => {
                for (ours, theirs) in levels.iter_mut().zip(theirs) {
                    ours.seeds.extend_from_slice(&theirs.seeds);
                    ours.values.extend_from_slice(&theirs.values);
                }
            }
            _ => unreachable!("equal fingerprints make equal mechanisms"),
        }
        self.tally = tally;
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// Sketches: every candidate's frequency; discovery: the top values.
    fn estimate(&self) -> Result<HeavyHitterEstimate> {
        let n = self.tally.n();
        if n == 0 {
            return Err(Error::NoReports);
        }
        let found = match (&self.counts, &self.metric.mechanism()) {
            (Counts::Sketch { groups, ones }, Mechanism::Sketch(s)) => {
                if self.metric.candidates().is_empty() {
                    return Err(Error::invalid("candidates", Requirement::Required { by: "a sketch's estimate" }));
                }
                let table = s.table(groups, ones);
                let estimates = self.metric.candidates().iter().map(|value| {
                    let (count, std_error) = s.estimate(&table, n, key64(value.as_bytes()));
                    let (frequency, std_error) = (count / n as f64, std_error / n as f64);
                    CandidateEstimate {
                        value: value.clone(),
                        frequency,
                        std_error,
                        ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
                    }
                });
                Found::Estimates(estimates.collect())
            }
            (Counts::Discovery { levels }, Mechanism::Discovery(d)) => Found::HeavyHitters(Decoder(d).discover(levels, n)),
            (Counts::Sketch { groups, ones }, Mechanism::Fragments(f)) => Found::HeavyHitters(Decoder(f).discover(groups, ones, n)),
            _ => unreachable!("the counts are made for the mechanism"),
        };
        Ok(HeavyHitterEstimate { protocol: self.metric.protocol(), epsilon: self.metric.epsilon(), n, rejected: *self.tally.rejected(), found })
    }
}
