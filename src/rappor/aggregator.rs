//! RAPPOR's server half: per-cohort bit counts and the decoding against the
//! candidates (LASSO selection, then least squares).

use localdp_core::rappor::RapporMetric;
use crate::aggregate::tally::{RejectionCounts, summed, Tally, Z95};
use localdp_core::error::{Error, MergeConflict, Requirement, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::protocol::OpenDomainProtocol;
use localdp_core::report::{Payload, Report};
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

/// The most candidates fitted jointly by least squares (an `O(c³)` solve, run
/// twice per estimate); with more, each half fits the candidates the other
/// selected.
const JOINT_FIT: usize = 1024;

/// One candidate's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateEstimate {
    /// The candidate.
    pub value: String,
    /// Its estimated frequency (share of reports).
    pub frequency: f64,
    /// The standard error of the frequency.
    pub std_error: f64,
    /// The 95% normal interval.
    pub ci95: [f64; 2],
}

/// The estimate of a RAPPOR metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RapporEstimate {
    /// `"rappor"`.
    pub protocol: OpenDomainProtocol,
    /// `ε_1`, of one report.
    pub epsilon: f64,
    /// `ε_∞`, the long-run bound per value.
    pub epsilon_infinity: f64,
    /// Accepted reports.
    pub n: u64,
    /// Rejected reports by reason.
    pub rejected: RejectionCounts,
    /// The candidates the regression selected, most frequent first.
    pub estimates: Vec<CandidateEstimate>,
    /// The candidates it did not.
    pub not_detected: Vec<String>,
}

/// Aggregates RAPPOR reports: per cohort, the count of reports and of each
/// set bit.
#[derive(Debug, Clone)]
pub struct RapporAggregator {
    metric: RapporMetric,
    per_cohort: Vec<u64>,
    counts: Vec<u64>,
    tally: Tally,
}

impl AggregateState for RapporAggregator {
    crate::mechanism::state_accessors!(metric);

    fn write_counts(&self, out: &mut StateWriter) {
        out.counts(&self.per_cohort);
        out.counts(&self.counts);
    }

    fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()> {
        input.counts(&mut self.per_cohort, n, "a cohort holds more reports than the state")?;
        if self.per_cohort.iter().map(|&c| u128::from(c)).sum::<u128>() != u128::from(n) {
            return Err(StateError::Inconsistent { what: "the cohorts do not hold the number of reports" }.into());
        }
        input.counts(&mut self.counts, n, "a bit count exceeds the number of reports")?;
        let k = self.metric.bits();
        if self.counts.chunks(k).zip(&self.per_cohort).any(|(bits, &reports)| bits.iter().any(|&c| c > reports)) {
            return Err(StateError::Inconsistent { what: "a bit count exceeds its cohort's reports" }.into());
        }
        Ok(())
    }
}

impl Aggregate for RapporAggregator {
    type Mechanism = RapporMetric;
    type Estimate = RapporEstimate;

    fn new(metric: RapporMetric) -> Self {
        let (m, k) = (metric.cohorts() as usize, metric.bits());
        RapporAggregator { metric, per_cohort: vec![0; m], counts: vec![0; m * k], tally: Tally::default() }
    }

    fn mechanism(&self) -> &RapporMetric {
        &self.metric
    }


    fn add(&mut self, report: &Report) -> Result<()> {
        if let Err(e) = self.metric.validate(report) {
            return Err(self.tally.reject(e));
        }
        if let Payload::Cohort { cohort, bits } = &report.payload {
            let j = *cohort as usize;
            self.per_cohort[j] += 1;
            for i in bits.ones() {
                self.counts[j * self.metric.bits() + i] += 1;
            }
        }
        self.tally.accept();
        Ok(())
    }

    fn merge(&mut self, other: &RapporAggregator) -> Result<()> {
        if self.metric.fingerprint() != other.metric.fingerprint() {
            return Err(Error::MergeMismatch {
                ours: Aggregate::state_id(self),
                theirs: Aggregate::state_id(other),
                conflict: MergeConflict::Configuration,
            });
        }
        let counts = summed(&self.counts, &other.counts)?;
        let per_cohort = summed(&self.per_cohort, &other.per_cohort)?;
        let tally = self.tally.merged(&other.tally)?;
        (self.counts, self.per_cohort, self.tally) = (counts, per_cohort, tally);
        Ok(())
    }

    fn state_id(&self) -> String {
        localdp_core::metric::id_of(&self.metric)
    }

    /// Decodes against the candidates (see the module docs).
    fn estimate(&self) -> Result<RapporEstimate> {
        if self.tally.n() == 0 {
            return Err(Error::NoReports);
        }
        let metric = &self.metric;
        if metric.candidates().is_empty() {
            return Err(Error::invalid("candidates", Requirement::Required { by: "RAPPOR decoding" }));
        }
        let (f, p, q) = metric.parameters();
        let (k, m, c) = (metric.bits(), metric.cohorts() as usize, metric.candidates().len());
        let scale = (1.0 - f) * (q - p);
        let background = p + f * q / 2.0 - f * p / 2.0;
        // Rows (cohort, bit): the unbiased target and its noise weight.
        let mut target = Vec::with_capacity(m * k);
        let mut weight = Vec::with_capacity(m * k);
        for j in 0..m {
            let n_j = self.per_cohort[j] as f64;
            let sigma = (n_j * 0.25).sqrt().max(0.5) / scale;
            for i in 0..k {
                target.push((self.counts[j * k + i] as f64 - background * n_j) / scale);
                weight.push(1.0 / sigma);
            }
        }
        // The design: candidate v's Bloom bits, per cohort, times the cohort's
        // share of the reports (a value's count in cohort j is about its
        // total count times N_j/n).
        let n = self.tally.n() as f64;
        let design: Vec<Vec<(usize, f64)>> = metric
            .candidates()
            .iter()
            .map(|v| {
                (0..m)
                    .flat_map(|j| {
                        let share = self.per_cohort[j] as f64 / n;
                        metric.bloom(j as u32, v).ones().map(move |i| (j * k + i, share)).collect::<Vec<_>>()
                    })
                    .collect()
            })
            .collect();
        // Cross-fitted: the cohorts are split in two halves by parity (a
        // device's cohort is drawn independently of its value); the LASSO on
        // each half selects the candidates that least squares estimates on
        // the other half, so no interval is computed on the reports that
        // selected its candidate. With one cohort there is nothing to split:
        // it selects and estimates.
        let in_half = |r: usize, h: usize| m == 1 || (r / k) % 2 == h;
        let half_weight = |h: usize| -> Vec<f64> { weight.iter().enumerate().map(|(r, &w)| if in_half(r, h) { w } else { 0.0 }).collect() };
        let halves = if m > 1 { 2 } else { 1 };
        let reports: Vec<f64> =
            (0..halves).map(|h| (0..m).filter(|&j| in_half(j * k, h)).map(|j| self.per_cohort[j] as f64).sum()).collect();
        // Per candidate, per estimating half: the count and its variance.
        let mut by_half = vec![[None::<(f64, f64)>; 2]; c];
        for h in 0..halves {
            let estimating = half_weight((h + 1) % halves);
            let selected = lasso(&design, &target, &half_weight(h), c);
            if selected.is_empty() {
                continue;
            }
            // Least squares on every candidate, so that no undetected one
            // leaves its Bloom bits to the detected; on the selected ones
            // alone where the half cannot tell every candidate apart (or
            // there are more than JOINT_FIT of them).
            let all: Vec<usize> = (0..c).collect();
            let fit = (c <= JOINT_FIT)
                .then(|| least_squares(&design, &all, &target, &estimating))
                .flatten()
                .map(|(beta, variance)| {
                    (selected.iter().map(|&v| beta[v]).collect(), selected.iter().map(|&v| variance[v]).collect())
                })
                .or_else(|| least_squares(&design, &selected, &target, &estimating));
            let Some((beta, variance)) = fit else { continue };
            for (s, &v) in selected.iter().enumerate() {
                // A count without a finite, positive variance estimates nothing.
                if beta[s].is_finite() && variance[s].is_finite() && variance[s] > 0.0 {
                    by_half[v][(h + 1) % halves] = Some((beta[s], variance[s]));
                }
            }
        }
        let mut estimates = Vec::new();
        let mut not_detected = Vec::new();
        for (v, name) in metric.candidates().iter().enumerate() {
            if by_half[v].iter().all(Option::is_none) {
                not_detected.push(name.clone());
                continue;
            }
            let (frequency, std_error) = combined(by_half[v], &reports, n);
            estimates.push(CandidateEstimate {
                value: name.clone(),
                frequency,
                std_error,
                ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
            });
        }
        estimates.sort_by(|a, b| b.frequency.total_cmp(&a.frequency));
        Ok(RapporEstimate {
            protocol: OpenDomainProtocol::Rappor,
            epsilon: metric.report_epsilon(),
            epsilon_infinity: metric.epsilon_infinity(),
            n: self.tally.n(),
            rejected: *self.tally.rejected(),
            estimates,
            not_detected,
        })
    }
}

/// A candidate's frequency and standard error from the counts (and their
/// variances) that the halves of the cohorts not selecting it estimated,
/// `reports[h]` reports in half `h` and `n` in all: weighted by inverse
/// variance, `f̂ = Σ w_h β_h / n`, `Var[f̂] = 1/(n² Σ 1/V_h)` plus the
/// sampling of which devices fell in which half (each `β_h / n` is the
/// share among half `h`'s devices): `f(1−f)(w_0 N_1 − w_1 N_0)²/(N_0 N_1 (n−1))`,
/// 0 when both halves weigh by their reports, `f(1−f) N_1/(N_0 (n−1))` when
/// half 0 alone estimates.
fn combined(by_half: [Option<(f64, f64)>; 2], reports: &[f64], n: f64) -> (f64, f64) {
    let precision: Vec<f64> = by_half.iter().map(|h| h.map_or(0.0, |(_, variance)| 1.0 / variance)).collect();
    let total: f64 = precision.iter().sum();
    let weights: Vec<f64> = precision.iter().map(|p| p / total).collect();
    let frequency = by_half.iter().zip(&weights).map(|(h, w)| h.map_or(0.0, |(beta, _)| w * beta)).sum::<f64>() / n;
    let share = frequency.clamp(0.0, 1.0);
    let sampling = match reports {
        [n0, n1] => share * (1.0 - share) * (weights[0] * n1 - weights[1] * n0).powi(2) / (n0 * n1 * (n - 1.0)).max(1.0),
        _ => 0.0,
    };
    (frequency, ((1.0 / total) / (n * n) + sampling).max(0.0).sqrt())
}

/// Non-negative LASSO by coordinate descent on the weighted problem
/// `½ Σ_r w_r² (t_r − Σ_v X_rv β_v)² + Σ_v λ_v β_v`, with `λ_v` the
/// Bonferroni normal threshold (α = 0.05 over the candidates) times the
/// noise of `X_vᵀ W² r`. Returns the candidates with `β > 0`.
fn lasso(design: &[Vec<(usize, f64)>], target: &[f64], weight: &[f64], c: usize) -> Vec<usize> {
    let z = normal_quantile(1.0 - 0.05 / (2.0 * c as f64));
    let norms: Vec<f64> =
        design.iter().map(|rows| rows.iter().map(|&(r, x)| (weight[r] * x).powi(2)).sum()).collect();
    let mut beta = vec![0.0; c];
    let mut residual: Vec<f64> = target.to_vec();
    for _ in 0..200 {
        let mut change: f64 = 0.0;
        for v in 0..c {
            if norms[v] == 0.0 {
                continue;
            }
            let gradient: f64 =
                design[v].iter().map(|&(r, x)| weight[r] * weight[r] * x * residual[r]).sum::<f64>() + norms[v] * beta[v];
            let updated = ((gradient - z * norms[v].sqrt()) / norms[v]).max(0.0);
            let delta = updated - beta[v];
            if delta != 0.0 {
                for &(r, x) in &design[v] {
                    residual[r] -= delta * x;
                }
                beta[v] = updated;
                change = change.max(delta.abs());
            }
        }
        if change < 1e-6 {
            break;
        }
    }
    (0..c).filter(|&v| beta[v] > 0.0).collect()
}

/// Weighted least squares on the selected candidates: the counts and their
/// variances, scaled by the residual variance; `None` where the rows of
/// nonzero weight cannot tell them apart: no more of them than candidates,
/// or normal equations singular or nearly so (candidates whose Bloom bits
/// coincide in every cohort, or that the rounding of a solve could not
/// separate). `XᵀW²X` is summed row by row over the few candidates each row
/// holds, so the work is that of the `s × s` solve.
fn least_squares(
    design: &[Vec<(usize, f64)>],
    selected: &[usize],
    target: &[f64],
    weight: &[f64],
) -> Option<(Vec<f64>, Vec<f64>)> {
    use nalgebra::{DMatrix, DVector};
    let s = selected.len();
    let observed = weight.iter().filter(|&&w| w > 0.0).count();
    if s == 0 || observed <= s {
        return None;
    }
    // Each row's selected candidates, with their weighted coefficients.
    let mut rows = vec![Vec::new(); target.len()];
    for (col, &v) in selected.iter().enumerate() {
        for &(r, coefficient) in &design[v] {
            if weight[r] > 0.0 {
                rows[r].push((col, weight[r] * coefficient));
            }
        }
    }
    let mut normal = DMatrix::<f64>::zeros(s, s);
    let mut moment = DVector::<f64>::zeros(s);
    for (r, entries) in rows.iter().enumerate() {
        let y = weight[r] * target[r];
        for &(a, xa) in entries {
            moment[a] += xa * y;
            for &(b, xb) in entries {
                normal[(a, b)] += xa * xb;
            }
        }
    }
    let largest = normal.diagonal().max();
    let cholesky = normal.cholesky()?;
    // A pivot far below the largest diagonal entry: nearly singular, and a
    // solve would return numbers, not estimates.
    if !(cholesky.l_dirty().diagonal().min().powi(2) > 1e-10 * largest) {
        return None;
    }
    let beta = cholesky.solve(&moment);
    let residual: f64 = rows
        .iter()
        .enumerate()
        .filter(|&(r, _)| weight[r] > 0.0)
        .map(|(r, entries)| (weight[r] * target[r] - entries.iter().map(|&(a, xa)| xa * beta[a]).sum::<f64>()).powi(2))
        .sum();
    let sigma2 = residual / (observed - s) as f64;
    let inverse = cholesky.inverse();
    Some((beta.iter().copied().collect(), (0..s).map(|i| sigma2 * inverse[(i, i)]).collect()))
}

/// `Φ^{-1}(p)` by bisection on `erfc`.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if 0.5 * libm::erfc(-mid / std::f64::consts::SQRT_2) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}
