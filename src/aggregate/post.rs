//! Post-processing of a histogram estimate into a distribution
//! (Wang et al., NDSS 2020, "Locally Differentially Private Frequency
//! Estimation with Consistency"). Post-processing costs no privacy, but the
//! results are biased: only the unbiased estimate has the closed-form variance.

use localdp_core::text::text;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// How the unbiased estimates are turned into the reported `frequency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum PostProcessing {
    /// The unbiased estimates, as they are (may be negative, need not sum to 1).
    #[default]
    #[serde(rename = "none")]
    None,
    /// Norm-Sub: zero the negatives, shift the positives by a common amount so
    /// the total is 1, repeat until nothing is negative.
    #[serde(rename = "norm-sub")]
    NormSub,
    /// Euclidean projection onto the probability simplex (the ℓ2-closest
    /// distribution).
    #[serde(rename = "project")]
    Project,
}

impl FromStr for PostProcessing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(PostProcessing::None),
            "norm-sub" => Ok(PostProcessing::NormSub),
            "project" => Ok(PostProcessing::Project),
            _ => Err(text!("unknown post-processing ", localdp_core::json::quoted(s), " (expected none, norm-sub or project)")),
        }
    }
}

impl PostProcessing {
    /// Applies the post-processing to unbiased frequency estimates.
    ///
    /// ```
    /// use localdp::PostProcessing;
    /// let unbiased = [0.7, 0.5, -0.2];
    /// assert_eq!(PostProcessing::None.apply(&unbiased), unbiased);
    /// assert_eq!("norm-sub".parse::<PostProcessing>(), Ok(PostProcessing::NormSub));
    /// let projected = PostProcessing::Project.apply(&unbiased);
    /// assert!((projected.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    /// ```
    pub fn apply(self, unbiased: &[f64]) -> Vec<f64> {
        match self {
            PostProcessing::None => unbiased.to_vec(),
            PostProcessing::NormSub => norm_sub(unbiased),
            PostProcessing::Project => project_onto_simplex(unbiased),
        }
    }
}

/// Norm-Sub. If no estimate is positive, the uniform distribution.
///
/// ```
/// use localdp::aggregate::norm_sub;
/// // Negatives go to 0; the positives shift by the same amount to sum to 1.
/// assert_eq!(norm_sub(&[0.7, 0.5, -0.2]), [0.6, 0.4, 0.0]);
/// assert_eq!(norm_sub(&[-0.1, -0.3]), [0.5, 0.5]);
/// ```
pub fn norm_sub(f: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = f.iter().map(|&x| x.max(0.0)).collect();
    loop {
        let positive: Vec<usize> = (0..out.len()).filter(|&i| out[i] > 0.0).collect();
        if positive.is_empty() {
            return vec![1.0 / f.len() as f64; f.len()];
        }
        let shift = (1.0 - positive.iter().map(|&i| out[i]).sum::<f64>()) / positive.len() as f64;
        let mut clipped = false;
        for &i in &positive {
            out[i] += shift;
            if out[i] < 0.0 {
                out[i] = 0.0;
                clipped = true;
            }
        }
        if !clipped {
            return out;
        }
    }
}

/// Projection onto `{x ≥ 0, Σx = 1}`: `x_i = max(f_i − θ, 0)` with `θ` found
/// by sorting (Held, Wolfe, Crowder 1974; Duchi et al. 2008).
///
/// ```
/// use localdp::aggregate::project_onto_simplex;
/// let x = project_onto_simplex(&[0.9, 0.4, -0.1]);
/// // θ = 0.15: each value less θ, floored at 0.
/// assert!(x.iter().zip([0.75, 0.25, 0.0]).all(|(a, b)| (a - b).abs() < 1e-12));
/// ```
pub fn project_onto_simplex(f: &[f64]) -> Vec<f64> {
    let mut sorted = f.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut prefix = 0.0;
    let mut theta = 0.0;
    for (i, &x) in sorted.iter().enumerate() {
        prefix += x;
        let t = (prefix - 1.0) / (i + 1) as f64;
        if x - t > 0.0 {
            theta = t;
        }
    }
    f.iter().map(|&x| (x - theta).max(0.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(v: &[f64]) -> f64 {
        v.iter().sum()
    }

    #[test]
    fn both_give_distributions() {
        for f in [vec![0.5, 0.7, -0.3, 0.05], vec![-0.1, -0.2, 0.1], vec![0.2, 0.2, 0.2], vec![-1.0, -1.0]] {
            for post in [PostProcessing::NormSub, PostProcessing::Project] {
                let g = post.apply(&f);
                assert!((sum(&g) - 1.0).abs() < 1e-12, "{post:?} {f:?} -> {g:?}");
                assert!(g.iter().all(|&x| x >= 0.0));
            }
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(project_onto_simplex(&[0.5, 0.7, -0.3]), vec![0.4, 0.6, 0.0]);
        let g = norm_sub(&[0.2, 0.2, -0.5]);
        assert!((g[0] - 0.5).abs() < 1e-15 && (g[1] - 0.5).abs() < 1e-15 && g[2] == 0.0);
        // Norm-Sub keeps a zeroed value at zero even when mass is added back;
        // the projection does not.
        let f = [0.3, 0.3, -0.01];
        assert_eq!(norm_sub(&f)[2], 0.0);
        assert!(project_onto_simplex(&f)[2] > 0.0);
        assert_eq!(PostProcessing::None.apply(&f), f.to_vec());
    }
}
