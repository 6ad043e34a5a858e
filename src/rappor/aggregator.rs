//! RAPPOR's server half: per-cohort bit counts and the decoding against the
//! candidates (non-negative least squares, shrunk by the non-negative Lasso;
//! intervals given the Bonferroni test).

use localdp_core::rappor::RapporMetric;
use crate::aggregate::tally::{RejectionCounts, summed, Tally, Z95};
use localdp_core::error::{Error, MergeConflict, Requirement, Result};
use crate::mechanism::{sealed::AggregateState, Aggregate};
use localdp_core::protocol::OpenDomainProtocol;
use localdp_core::report::{Payload, Report};
use crate::state::{StateError, StateReader, StateWriter};
use serde::Serialize;

/// The most candidates estimated: non-negative least squares solves once
/// per candidate that enters, `O(s³)` each. With at most this many
/// candidates, the test and the intervals are from least squares on every
/// one of them (one `O(c³)` solve).
const SUPPORT: usize = 256;

/// One candidate's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateEstimate {
    /// The candidate.
    pub value: String,
    /// Its estimated frequency (share of reports), by the non-negative
    /// Lasso on non-negative least squares' support.
    pub frequency: f64,
    /// The standard error of the estimate that the test and the interval
    /// use: least squares on every candidate (on the support where that
    /// cannot be solved).
    pub std_error: f64,
    /// The 95% interval: given that it passed the Bonferroni test over the
    /// candidates, else from 0.
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
    /// The candidates the non-negative Lasso fitted above 0, most frequent
    /// first.
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
        // Non-negative least squares over every candidate and every row gives
        // the support; the non-negative Lasso on it, at the penalty of least
        // estimated risk, gives the counts, and the candidates it fits above
        // 0 are what is reported. The Bonferroni test
        // over the candidates and each interval are from least squares on
        // every candidate (unbiased: the small candidates NNLS fits above 0
        // pull the large ones down by about 0.2 standard errors), or, where
        // that cannot be solved (more than `SUPPORT` candidates, rows too
        // few or filters that coincide), on the support, as before.
        let (support, fit) = nnls(&design, &target, &weight);
        let shrunk = lasso(&design, &support, &target, &weight);
        let every: Vec<usize> = (0..c).collect();
        let tested = if c <= SUPPORT { least_squares(&design, &every, &target, &weight) } else { None };
        let z = normal_quantile(1.0 - 0.05 / (2.0 * c as f64));
        let mut fitted = vec![None; c];
        if let Some(fit) = fit {
            for (((&v, &b), &count), variance) in support.iter().zip(&fit.beta).zip(&shrunk).zip(fit.variances()) {
                fitted[v] = Some((count, b, variance)).filter(|_| count > 0.0);
            }
        }
        if let Some(tested) = tested {
            for ((b, variance), fitted) in tested.beta.iter().zip(tested.variances()).zip(&mut fitted) {
                if let Some((_, test, var)) = fitted {
                    (*test, *var) = (*b, variance);
                }
            }
        }
        let mut estimates = Vec::new();
        let mut not_detected = Vec::new();
        for (v, name) in metric.candidates().iter().enumerate() {
            // A count without a finite, positive variance estimates nothing.
            let Some((count, tested, variance)) =
                fitted[v].filter(|&(b, t, var)| b.is_finite() && t.is_finite() && var.is_finite() && var > 0.0)
            else {
                not_detected.push(name.clone());
                continue;
            };
            let std_error = variance.sqrt();
            // Above the test, the interval given that it passed; below, from
            // 0 (so a candidate nobody holds is shown above 0 in at most 5%
            // of collections) to the normal interval's end.
            let [low, high] = if tested > z * std_error {
                selective_interval(tested / std_error, z, n / std_error).map(|mu| mu * std_error / n)
            } else {
                [0.0, (tested + Z95 * std_error).max(0.0) / n]
            };
            estimates.push(CandidateEstimate { value: name.clone(), frequency: count / n, std_error: std_error / n, ci95: [low, high] });
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

/// Weighted non-negative least squares, `min ½ Σ_r w_r² (t_r − Σ_v X_rv β_v)²`
/// over `β ≥ 0`, by Lawson and Hanson's active set: the candidate whose
/// scaled gradient `X_vᵀW²r / ‖WX_v‖` is largest enters, least squares is
/// solved on the entered ones, and a count that turns negative moves back
/// to 0 and leaves. A candidate whose entry [`least_squares`] cannot solve
/// (its filters coincide with entered ones', or the rows are too few) or
/// fits at or below 0 (rounding) is barred; at most [`SUPPORT`] enter.
/// Returns the support and its fit.
fn nnls(design: &[Vec<(usize, f64)>], target: &[f64], weight: &[f64]) -> (Vec<usize>, Option<Fit>) {
    let c = design.len();
    let norms: Vec<f64> = design.iter().map(|rows| rows.iter().map(|&(r, x)| (weight[r] * x).powi(2)).sum()).collect();
    let tolerance = 1e-9 * target.iter().zip(weight).map(|(t, w)| (t * w).powi(2)).sum::<f64>().sqrt();
    let mut barred: Vec<bool> = norms.iter().map(|&norm| norm == 0.0).collect();
    let mut beta = vec![0.0; c];
    let (mut support, mut fit): (Vec<usize>, Option<Fit>) = (Vec::new(), None);
    // Each pass enters or bars a candidate (a bound against cycling by
    // rounding; Lawson and Hanson's finishes in fewer).
    for _ in 0..4 * c {
        let mut residual = target.to_vec();
        for (&v, &b) in support.iter().zip(fit.iter().flat_map(|f| &f.beta)) {
            for &(r, x) in &design[v] {
                residual[r] -= b * x;
            }
        }
        let scaled_gradient =
            |v: usize| design[v].iter().map(|&(r, x)| weight[r] * weight[r] * x * residual[r]).sum::<f64>() / norms[v].sqrt();
        let entering = (0..c)
            .filter(|&v| !barred[v] && beta[v] == 0.0)
            .map(|v| (v, scaled_gradient(v)))
            .filter(|&(_, g)| g > tolerance)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((v, _)) = entering.filter(|_| support.len() < SUPPORT) else { break };
        let mut trial = support.clone();
        trial.push(v);
        match enter(design, target, weight, &beta, trial) {
            Some((entered, solved)) => {
                beta.iter_mut().for_each(|b| *b = 0.0);
                for (&u, &b) in entered.iter().zip(&solved.beta) {
                    beta[u] = b;
                }
                (support, fit) = (entered, Some(solved));
            }
            None => barred[v] = true,
        }
    }
    (support, fit)
}

/// The non-negative Lasso on the `support` of [`nnls`],
/// `min ½‖W(t − Xβ)‖² + λ·Σ_v β_v` over `β ≥ 0`, at the `λ` whose Stein
/// unbiased risk estimate `‖W(t − Xβ̂_λ)‖² + 2·#{v: β̂_v > 0}` is least
/// (Mallows' Cp with the Lasso's degrees of freedom, the number of
/// candidates it fits above 0: Zou, Hastie and Tibshirani, "On the degrees
/// of freedom of the lasso", Ann. Statist. 35(5), 2007; the rows' noise
/// variance is 1 in the weighted units). The `λ` run over [`STEPS`]
/// geometric steps from the largest gradient, where every count is 0, down
/// to `10⁻⁴` of it, each solved by coordinate descent on `X̃ᵀX̃` from the
/// last. Shrinking the counts trades a little bias for much less variance
/// where most candidates are near the noise (10⁵ reports of 200
/// candidates). Returns the counts on the support, in its order.
fn lasso(design: &[Vec<(usize, f64)>], support: &[usize], target: &[f64], weight: &[f64]) -> Vec<f64> {
    let s = support.len();
    let (_, normal, moment) = normal_equations(design, support, target, weight);
    let total: f64 = target.iter().zip(weight).filter(|&(_, &w)| w > 0.0).map(|(t, w)| (t * w).powi(2)).sum();
    let top = moment.iter().copied().fold(0.0, f64::max);
    let mut beta = vec![0.0; s];
    let mut gradient: Vec<f64> = moment.iter().copied().collect();
    let (mut least, mut best) = (total, beta.clone());
    // The ratio of the steps, `10^(−4/(STEPS − 1))`, by `exp` and `ln`,
    // which the module already carries (`powf` would add its own).
    let ratio = (1e-4f64.ln() / (STEPS - 1) as f64).exp();
    let mut lambda = top;
    for _ in 0..STEPS {
        // Sweeps until no count moves the fit by more than 10⁻⁴ of the
        // noise (a bound against rounding's cycles).
        for _ in 0..1000 {
            let mut moved = 0.0f64;
            for a in 0..s {
                let updated = (beta[a] + (gradient[a] - lambda) / normal[(a, a)]).max(0.0);
                let change = updated - beta[a];
                if change != 0.0 {
                    for (g, x) in gradient.iter_mut().zip(normal.column(a).iter()) {
                        *g -= change * x;
                    }
                    beta[a] = updated;
                    moved = moved.max(change * change * normal[(a, a)]);
                }
            }
            if moved <= 1e-8 {
                break;
            }
        }
        // ‖W(t − Xβ)‖² = ‖Wt‖² − βᵀX̃ᵀỹ − βᵀ(X̃ᵀỹ − X̃ᵀX̃β).
        let residual = total - beta.iter().zip(moment.iter().zip(&gradient)).map(|(b, (m, g))| b * (m + g)).sum::<f64>();
        let risk = residual + 2.0 * beta.iter().filter(|&&b| b > 0.0).count() as f64;
        if risk < least {
            (least, best) = (risk, beta.clone());
        }
        lambda *= ratio;
    }
    best
}

/// The `λ` steps of [`lasso`].
const STEPS: usize = 100;

/// One step of [`nnls`]: least squares on `trial` (the support and the
/// candidate entering, last), then, while a count is at or below 0, a move
/// from the feasible counts `beta` toward the solve until the first reaches
/// 0, which leaves. `None` where a solve fails or the entering candidate
/// fits at or below 0.
fn enter(
    design: &[Vec<(usize, f64)>],
    target: &[f64],
    weight: &[f64],
    beta: &[f64],
    mut trial: Vec<usize>,
) -> Option<(Vec<usize>, Fit)> {
    let mut solved = least_squares(design, &trial, target, weight).filter(|fit| fit.beta[fit.beta.len() - 1] > 0.0)?;
    let mut at: Vec<f64> = trial.iter().map(|&u| beta[u]).collect();
    loop {
        let step = at.iter().zip(&solved.beta).filter(|&(_, &b)| b <= 0.0).map(|(&a, &b)| a / (a - b)).min_by(f64::total_cmp);
        let Some(step) = step else { return Some((trial, solved)) };
        for (a, &b) in at.iter_mut().zip(&solved.beta) {
            *a += step * (b - *a);
        }
        (trial, at) = trial.iter().zip(&at).filter(|&(_, &a)| a > 0.0).map(|(&u, &a)| (u, a)).unzip();
        solved = least_squares(design, &trial, target, weight)?;
    }
}

/// Weighted least squares on the selected candidates: the counts, and their
/// variances scaled by the residual variance; `None` where the rows of
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
) -> Option<Fit> {
    let s = selected.len();
    let observed = weight.iter().filter(|&&w| w > 0.0).count();
    if s == 0 || observed <= s {
        return None;
    }
    let (rows, normal, moment) = normal_equations(design, selected, target, weight);
    let largest = normal.diagonal().max();
    let cholesky = normal.cholesky()?;
    // A pivot far below the largest diagonal entry: nearly singular, and a
    // solve would return numbers, not estimates.
    let (pivot, floor) = (cholesky.l_dirty().diagonal().min(), 1e-10 * largest);
    if pivot.powi(2).partial_cmp(&floor) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let beta = cholesky.solve(&moment);
    let residual: f64 = rows
        .iter()
        .enumerate()
        .filter(|&(r, _)| weight[r] > 0.0)
        .map(|(r, entries)| (weight[r] * target[r] - entries.iter().map(|&(a, xa)| xa * beta[a]).sum::<f64>()).powi(2))
        .sum();
    Some(Fit { beta: beta.iter().copied().collect(), cholesky, sigma2: residual / (observed - s) as f64 })
}

/// The weighted normal equations on the selected candidates, `X̃ᵀX̃` and
/// `X̃ᵀỹ` (`X̃ = WX`, `ỹ = Wt`, rows of nonzero weight), with each row's
/// selected candidates and their weighted coefficients.
#[allow(clippy::type_complexity)]
fn normal_equations(
    design: &[Vec<(usize, f64)>],
    selected: &[usize],
    target: &[f64],
    weight: &[f64],
) -> (Vec<Vec<(usize, f64)>>, nalgebra::DMatrix<f64>, nalgebra::DVector<f64>) {
    use nalgebra::{DMatrix, DVector};
    let s = selected.len();
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
    (rows, normal, moment)
}

/// A least squares fit: the counts, and what their variances are computed
/// from (once, for the last fit).
struct Fit {
    beta: Vec<f64>,
    cholesky: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    sigma2: f64,
}

impl Fit {
    /// `σ̂²·diag((X̃ᵀX̃)⁻¹)`.
    fn variances(&self) -> Vec<f64> {
        let inverse = self.cholesky.inverse();
        (0..self.beta.len()).map(|i| self.sigma2 * inverse[(i, i)]).collect()
    }
}

/// The 95% interval of a normal mean `μ ∈ [0, top]` (standard error 1)
/// given that its estimate `x` passed the test `x > c`: the `μ` at which
/// `P(X ≥ x | X > c)`, `X ~ N(μ, 1)`, is 2.5% and 97.5% (it increases with
/// `μ`), by bisection; an end where the probability is already past its
/// level at 0 or at `top` is that bound. A count selected for being large
/// is not trusted for its size.
fn selective_interval(x: f64, c: f64, top: f64) -> [f64; 2] {
    let survival = |mu: f64| (log_upper_tail(x - mu) - log_upper_tail(c - mu)).exp();
    [0.025, 0.975].map(|level| {
        if survival(0.0) >= level {
            return 0.0;
        }
        if survival(top) <= level {
            return top;
        }
        let (mut lo, mut hi) = (0.0, top);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if survival(mid) < level {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    })
}

/// `ln P(Z > x)` for a standard normal `Z`: from `erfc` up to 30, then its
/// asymptotic series (`erfc` underflows near 38).
fn log_upper_tail(x: f64) -> f64 {
    if x < 30.0 {
        (0.5 * libm::erfc(x / std::f64::consts::SQRT_2)).ln()
    } else {
        let inverse = 1.0 / (x * x);
        -0.5 * x * x - (x * (2.0 * std::f64::consts::PI).sqrt()).ln() + (1.0 - inverse + 3.0 * inverse * inverse).ln()
    }
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
