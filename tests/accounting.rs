//! The privacy accountant against independent computations: Kairouz–Oh–
//! Viswanath's closed form, brute-force enumeration of randomized-response
//! products and of the shuffling paper's clone pair, and values recorded from
//! Google's `dp_accounting`.

use localdp::accounting::{compose, shuffle, shuffle_randomized_response, MAX_CLONES, MAX_SUPPORT};
use localdp::{Error, Requirement};

/// `(1 − e^(ε − L))₊` averaged over `(probability, L)` pairs.
fn hockey_stick(outcomes: &[(f64, f64)], epsilon: f64) -> f64 {
    outcomes.iter().map(|&(p, l)| p * (1.0 - (epsilon - l).exp()).max(0.0)).sum()
}

/// Every sign vector of the reports (one ε each): `(probability, loss)`.
fn enumerate(epsilons: &[f64]) -> Vec<(f64, f64)> {
    (0u32..1 << epsilons.len())
        .map(|signs| {
            epsilons.iter().enumerate().fold((1.0, 0.0), |(p, l), (i, &e)| {
                let plus = e.exp() / (1.0 + e.exp());
                if signs >> i & 1 == 1 { (p * plus, l + e) } else { (p * (1.0 - plus), l - e) }
            })
        })
        .collect()
}

#[test]
fn homogeneous_composition_is_kairouz_oh_viswanath() {
    // KOV (ICML 2015), the optimal composition theorem: k-fold ε-DP is exactly
    // ((k − 2i)ε, δ_i)-DP, δ_i = Σ_{l<i} C(k,l)(e^((k−l)ε) − e^((k−2i+l)ε)) / (1 + e^ε)^k.
    let (k, epsilon) = (20u64, 0.5f64);
    let binomial = |l: u64| (0..l).fold(1.0, |c, j| c * (k - j) as f64 / (j + 1) as f64);
    for i in 1..10u64 {
        let delta_i: f64 = (0..i)
            .map(|l| binomial(l) * (((k - l) as f64 * epsilon).exp() - ((k as f64 - 2.0 * i as f64 + l as f64) * epsilon).exp()))
            .sum::<f64>()
            / (1.0 + epsilon.exp()).powi(k as i32);
        let exact = (k - 2 * i) as f64 * epsilon;
        let found = compose(&[(epsilon, k)], delta_i).unwrap().epsilon;
        assert!((found - exact).abs() < 1e-9 * exact, "i = {i}: {found} vs {exact}");
    }
}

#[test]
fn mixed_composition_is_tight_and_never_below_brute_force() {
    let groups = [(1.0, 3u64), (0.3, 4), (0.7, 3), (0.05, 2)];
    let epsilons: Vec<f64> = groups.iter().flat_map(|&(e, k)| std::iter::repeat_n(e, k as usize)).collect();
    let outcomes = enumerate(&epsilons);
    for delta in [1e-9, 1e-6, 1e-3, 0.05, 0.3] {
        let found = compose(&groups, delta).unwrap().epsilon;
        // Sound: the true δ at the reported ε is within the target (up to
        // the brute force's own float error), and tight: a hair less ε is not.
        assert!(hockey_stick(&outcomes, found) <= delta * (1.0 + 1e-12), "δ {delta}: ε {found} is below the truth");
        assert!(hockey_stick(&outcomes, found - 1e-7) > delta, "δ {delta}: ε {found} is loose");
    }
    // Order and splitting of the groups do not change ε.
    let split = compose(&[(0.05, 1), (0.7, 3), (0.3, 4), (0.05, 1), (1.0, 3)], 1e-6).unwrap();
    assert_eq!(split.epsilon, compose(&groups, 1e-6).unwrap().epsilon);
}

#[test]
fn composition_meets_dp_accounting() {
    // dp_accounting 0.6.0 (pip), PLD of `from_privacy_parameters(ε, 0)` at
    // value_discretization_interval 1e-4, `self_compose(k)`, composed across
    // groups, `get_epsilon_for_delta(δ)`. PLD's discretization is
    // pessimistic, so the exact value may be below it by that rounding; here
    // the ε are multiples of the interval and the two agree to 1e-9.
    for (groups, delta, pld) in [
        (vec![(0.1, 365u64)], 1e-6, 10.313864609391837),
        (vec![(0.1, 365)], 1e-3, 7.101592704166306),
        (vec![(0.5, 10), (0.1, 365)], 1e-6, 13.552389258493411),
        (vec![(1.0, 5), (0.3, 4), (0.7, 3)], 1e-6, 8.299852568851527),
    ] {
        let found = compose(&groups, delta).unwrap();
        assert!(found.epsilon >= pld && found.epsilon <= pld * 1.02, "{groups:?}: {} vs {pld}", found.epsilon);
        assert!((found.epsilon - pld).abs() < 1e-7 * pld, "{groups:?}: {} vs {pld}", found.epsilon);
        let sum: f64 = groups.iter().map(|&(e, k)| e * k as f64).sum();
        assert!(found.sum >= sum && found.sum < sum * (1.0 + 1e-12) && found.delta == delta);
    }
}

#[test]
fn composition_with_a_large_delta_is_free_and_within_the_sum() {
    // δ above the total variation of one RR(0.1) pair: nothing to pay.
    assert_eq!(compose(&[(0.1, 1)], 0.1).unwrap().epsilon, 0.0);
    let one = compose(&[(2.0, 1)], 1e-6).unwrap();
    assert!(one.epsilon <= one.sum && one.epsilon > 2.0 - 1e-5, "{one:?}");
}

#[test]
fn shuffling_matches_the_paper_and_brute_force() {
    // FMT 2021's reference example: n = 1e5, ε₀ = 4, δ = 1e-6 lies in
    // [0.1675, 0.1728] by their stepped numerical method; closed form 0.5378.
    let found = shuffle(4.0, 100_000, 1e-6).unwrap();
    assert!(found.lower <= found.epsilon && found.epsilon - found.lower < 1e-6, "{found:?}");
    assert!((0.1675..=0.1728).contains(&found.epsilon), "{found:?}");
    assert!((found.closed_form.unwrap() - 0.5378).abs() < 5e-5, "{found:?}");
    // Out of the closed form's range, it is null.
    assert_eq!(shuffle(4.0, 1000, 1e-6).unwrap().closed_form, None);

    // Brute force of the clone pair for small n: C ~ Bin(n−1, e^−ε₀),
    // A ~ Bin(C, ½), Δ ~ Bern(e^ε₀/(1+e^ε₀)); P = (A+Δ, C−A+1−Δ), Q swaps Δ.
    let binomial = |n: u64, k: u64| (0..k).fold(1.0, |c, j| c * (n - j) as f64 / (j + 1) as f64);
    let pmf = |n: u64, k: u64, p: f64| binomial(n, k) * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
    for (epsilon0, n, delta) in [(1.0, 12u64, 0.01), (2.0, 30, 1e-3), (0.5, 8, 0.05)] {
        let alpha = f64::exp(epsilon0) / (1.0 + f64::exp(epsilon0));
        let divergence = |epsilon: f64| -> f64 {
            let mut total = 0.0;
            for c in 0..n {
                let weight = pmf(n - 1, c, f64::exp(-epsilon0));
                for x in 0..=c + 1 {
                    let below = if x >= 1 { pmf(c, x - 1, 0.5) } else { 0.0 };
                    let at = if x <= c { pmf(c, x, 0.5) } else { 0.0 };
                    let p = alpha * below + (1.0 - alpha) * at;
                    let q = (1.0 - alpha) * below + alpha * at;
                    total += weight * (p - epsilon.exp() * q).max(0.0);
                }
            }
            total
        };
        let found = shuffle(epsilon0, n, delta).unwrap();
        assert!(divergence(found.epsilon) <= delta * (1.0 + 1e-9), "{found:?} is below the truth");
        assert!(found.lower == 0.0 || divergence(found.lower) > delta, "{found:?}: lower is not");
        assert!(found.epsilon - found.lower < 1e-6 && found.epsilon <= epsilon0, "{found:?}");
    }
}

/// The exact distribution of the shuffled output of k-ary randomized
/// response at ε₀, users holding `values` (0, 1 or 2), seen through the
/// counts of 0 and of 1 (for k = 3 the whole histogram; for more values a
/// post-processing of it): `counts[i][j]` is the probability of `i` reports
/// of 0 and `j` of 1.
fn shuffled_histogram(epsilon0: f64, k: u32, values: &[usize]) -> Vec<Vec<f64>> {
    let n = values.len();
    let q = 1.0 / (epsilon0.exp() + (k - 1) as f64);
    let mut counts = vec![vec![0.0; n + 1]; n + 1];
    counts[0][0] = 1.0;
    for (user, &v) in values.iter().enumerate() {
        let r = |y: usize| if y == v { epsilon0.exp() * q } else { q };
        let mut next = vec![vec![0.0; n + 1]; n + 1];
        for i in 0..=user {
            for j in 0..=user - i {
                let p = counts[i][j];
                next[i + 1][j] += p * r(0);
                next[i][j + 1] += p * r(1);
                next[i][j] += p * (1.0 - r(0) - r(1));
            }
        }
        counts = next;
    }
    counts
}

/// The least ε at which the two histograms are (ε, δ)-indistinguishable in
/// both directions: the exact ε of these two datasets, which the true ε of
/// the shuffled mechanism (the worst over all datasets) is at least.
fn exact_epsilon(p: &[Vec<f64>], q: &[Vec<f64>], delta: f64) -> f64 {
    let divergence = |a: &[Vec<f64>], b: &[Vec<f64>], e: f64| -> f64 {
        a.iter().flatten().zip(b.iter().flatten()).map(|(x, y)| (x - e.exp() * y).max(0.0)).sum()
    };
    let (mut lo, mut hi) = (0.0, 30.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if divergence(p, q, mid).max(divergence(q, p, mid)) <= delta { hi = mid } else { lo = mid }
    }
    lo
}

/// k-ary randomized response's own shuffle bound: below the generic one,
/// and above the exact ε of the shuffled outputs of neighbouring datasets
/// (every count enumerated), a lower bound on the true ε that uses nothing
/// of the clone analysis.
#[test]
fn randomized_response_shuffling_is_tighter_and_above_the_truth() {
    let generic = shuffle(4.0, 100_000, 1e-6).unwrap();
    for k in [2, 3, 16, 1000, 1 << 22] {
        let grr = shuffle_randomized_response(4.0, k, 100_000, 1e-6).unwrap();
        println!("n 1e5, ε₀ 4, δ 1e-6, k {k}: {} (generic {})", grr.epsilon, generic.epsilon);
        assert!(grr.epsilon < generic.epsilon && grr.lower <= grr.epsilon, "k {k}: {grr:?} vs {generic:?}");
        assert_eq!(grr.closed_form, generic.closed_form);
    }
    let cases = [
        (2.0, 3, 40usize, 1e-3),
        (1.0, 3, 30, 0.01),
        (3.0, 3, 60, 1e-4),
        (0.5, 3, 12, 0.05),
        (2.0, 20, 10, 1e-3),
        (4.0, 100, 200, 1e-6),
        (2.0, 50, 3, 0.01),
    ];
    for (epsilon0, k, n, delta) in cases {
        let bound = shuffle_randomized_response(epsilon0, k as u64, n as u64, delta).unwrap();
        let generic = shuffle(epsilon0, n as u64, delta).unwrap();
        assert!(bound.epsilon <= generic.epsilon, "{bound:?} vs {generic:?}");
        // User 0 holds 0 or 1; the others hold 2, or 0, or half of each.
        for others in [vec![2; n - 1], vec![0; n - 1], (0..n - 1).map(|i| 2 * (i % 2)).collect()] {
            let world = |first: usize| shuffled_histogram(epsilon0, k, &[&[first][..], &others].concat());
            let truth = exact_epsilon(&world(0), &world(1), delta);
            println!("ε₀ {epsilon0}, k {k}, n {n}, δ {delta}: exact {truth:.5} ≤ grr {:.5} ≤ generic {:.5}", bound.epsilon, generic.epsilon);
            assert!(bound.epsilon >= truth, "ε₀ {epsilon0}, k {k}, n {n}: {bound:?} is below the exact {truth}");
        }
    }
    // The domain's size matters where few users report: at k = 1000 one
    // report at ε₀ = 2 is within total variation 0.0064 of another, so
    // (0, 0.01) holds; at k = 2 it does not.
    let few = |k| shuffle_randomized_response(2.0, k, 3, 0.01).unwrap().epsilon;
    assert!(few(1000) == 0.0 && few(50) < few(2) && few(2) > 1.9, "{} {} {}", few(1000), few(50), few(2));
    let error = shuffle_randomized_response(4.0, 1, 10, 1e-6).unwrap_err();
    assert!(matches!(error, Error::InvalidConfig { parameter: "domain", requirement: Requirement::IntegerRange { min: 2, .. } }));
}

#[test]
fn bad_parameters_are_typed_errors() {
    let invalid = |e: Error| match e {
        Error::InvalidConfig { parameter, requirement } => (parameter, requirement),
        other => panic!("{other}"),
    };
    for delta in [0.0, 1e-250, 1.0, -1e-6, f64::NAN] {
        let (parameter, requirement) = invalid(compose(&[(0.1, 3)], delta).unwrap_err());
        assert!(parameter == "delta" && matches!(requirement, Requirement::ExclusiveRange { .. }));
        assert_eq!(invalid(shuffle(1.0, 10, delta).unwrap_err()).0, "delta");
    }
    for epsilon in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(invalid(compose(&[(epsilon, 3)], 1e-6).unwrap_err()).0, "epsilon");
        assert_eq!(invalid(shuffle(epsilon, 10, 1e-6).unwrap_err()).0, "epsilon");
    }
    assert_eq!(invalid(compose(&[(0.1, 0)], 1e-6).unwrap_err()).0, "count");
    assert_eq!(invalid(compose(&[], 1e-6).unwrap_err()).0, "reports");
    assert_eq!(invalid(shuffle(1.0, 0, 1e-6).unwrap_err()).0, "n");
    // The numerical method's work is bounded: n·e^−ε₀ ≤ MAX_CLONES.
    let largest = (MAX_CLONES * 4f64.exp()).floor() as u64;
    let (parameter, requirement) = invalid(shuffle(4.0, largest + 1, 1e-6).unwrap_err());
    assert_eq!((parameter, requirement), ("n", Requirement::IntegerRange { min: 1, max: largest, found: largest + 1 }));
    let (parameter, requirement) = invalid(compose(&[(0.1, 3999), (0.2, 3999)], 1e-6).unwrap_err());
    assert_eq!((parameter, requirement), ("support", Requirement::IntegerRange { min: 1, max: MAX_SUPPORT, found: 16_000_000 }));
}
