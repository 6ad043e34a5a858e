//! RAPPOR's server half: per-cohort bit counts and the decoding against the
//! candidates (LASSO selection, then least squares).

use localdp_core::rappor::RapporMetric;
use crate::aggregate::{summed, RejectionCounts, Tally, Z95};
use localdp_core::error::{Error, MergeConflict, Requirement, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::protocol::OpenDomainProtocol;
use localdp_core::report::{Payload, Report};
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

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
        let selected = lasso(&design, &target, &weight, c);
        let mut estimates = Vec::new();
        let mut not_detected = Vec::new();
        if !selected.is_empty() {
            let (beta, covariance) = least_squares(&design, &selected, &target, &weight, m * k);
            for (s, &v) in selected.iter().enumerate() {
                let frequency = beta[s] / n;
                let std_error = covariance[s].max(0.0).sqrt() / n;
                estimates.push(CandidateEstimate {
                    value: metric.candidates()[v].clone(),
                    frequency,
                    std_error,
                    ci95: [frequency - Z95 * std_error, frequency + Z95 * std_error],
                });
            }
        }
        for (v, name) in metric.candidates().iter().enumerate() {
            if !selected.contains(&v) {
                not_detected.push(name.clone());
            }
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
/// variances, scaled by the residual variance.
fn least_squares(
    design: &[Vec<(usize, f64)>],
    selected: &[usize],
    target: &[f64],
    weight: &[f64],
    rows: usize,
) -> (Vec<f64>, Vec<f64>) {
    use nalgebra::{DMatrix, DVector};
    let s = selected.len();
    let mut x = DMatrix::<f64>::zeros(rows, s);
    for (col, &v) in selected.iter().enumerate() {
        for &(r, coefficient) in &design[v] {
            x[(r, col)] += weight[r] * coefficient;
        }
    }
    let y = DVector::from_iterator(rows, target.iter().zip(weight).map(|(t, w)| t * w));
    // The normal equations by Cholesky: candidates whose Bloom bits coincide
    // in every cohort cannot be told apart, and are reported with no estimate.
    let Some(cholesky) = (x.transpose() * &x).cholesky() else {
        return (vec![f64::NAN; s], vec![f64::NAN; s]);
    };
    let beta = cholesky.solve(&(x.transpose() * &y));
    let residual = &y - &x * &beta;
    let dof = rows.saturating_sub(s).max(1) as f64;
    let sigma2 = residual.norm_squared() / dof;
    let inverse = cholesky.inverse();
    (beta.iter().copied().collect(), (0..s).map(|i| sigma2 * inverse[(i, i)]).collect())
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
