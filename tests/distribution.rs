//! Distribution metrics (Square Wave, hierarchical histograms): accuracy,
//! unbiasedness, interval coverage over seeded collections, configs and
//! hostile reports. The channels' exact ε checks are in the shared list of
//! `tests/common/channel.rs` (native and wasm).

mod common;

use localdp::client::{new_secret, Client};
use localdp::{
    Aggregate, Aggregator, DistributionAggregator, DistributionEstimate, DistributionMetric, DistributionProtocol, Error,
    Metric, Payload, PostProcessing, Randomizer, SimulationRng,
};

/// A fixed population of `n` values: value `i` is `quantile((i + 1/2)/n)`,
/// so the population is the same in every run.
fn population(n: usize, quantile: impl Fn(f64) -> f64) -> Vec<f64> {
    (0..n).map(|i| quantile((i as f64 + 0.5) / n as f64)).collect()
}

/// Page-load times (ms): log-normal, median 800, σ = 0.6 in logs, clipped
/// to the range by the metric. On `[0, 5000]` its low tail rises steeply
/// (from 0.3% to 13% of the values within two bins of 32).
fn load_times(n: usize) -> Vec<f64> {
    population(n, |u| 800.0 * libm::exp(0.6 * normal_quantile(u)))
}

/// Two modes: 60% normal (600, 120), 40% normal (2400, 400).
fn two_modes(n: usize) -> Vec<f64> {
    population(n, |u| if u < 0.6 { 600.0 + 120.0 * normal_quantile(u / 0.6) } else { 2400.0 + 400.0 * normal_quantile((u - 0.6) / 0.4) })
}

/// `Φ^{-1}(u)` by bisection on `erfc`.
fn normal_quantile(u: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if 0.5 * libm::erfc(-mid / std::f64::consts::SQRT_2) < u {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The population's `q`-quantile: the smallest value with at least a share
/// `q` of the population at or below it (values sorted).
fn true_quantile(sorted: &[f64], q: f64) -> f64 {
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn metric(protocol: DistributionProtocol, epsilon: f64, bins: u64) -> DistributionMetric {
    DistributionMetric::from_json(&format!(
        r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,5000],"bins":{bins}}}"#
    ))
    .unwrap()
}

fn collect(metric: &DistributionMetric, values: &[f64], rng: &mut SimulationRng) -> DistributionEstimate {
    let mut aggregator = DistributionAggregator::new(metric.clone());
    for x in values {
        aggregator.add(&metric.randomize(x, rng).unwrap()).unwrap();
    }
    aggregator.estimate().unwrap()
}

/// The bins' shares in the population.
fn bin_shares(metric: &DistributionMetric, values: &[f64]) -> Vec<f64> {
    let mut shares = vec![0.0; metric.bins() as usize];
    for &x in values {
        shares[metric.bin_of(x) as usize] += 1.0 / values.len() as f64;
    }
    shares
}

/// Over seeded collections of 5,000 values (ε = 1, 32 bins), the 95%
/// intervals of p50, p90, p95 and p99, of every bin and of the mean cover
/// the population's own values 95% of the time, and the intervals are not
/// vacuous (the median's narrower than a fifth of the range). Each count of
/// covers is tested against Binomial(R, 0.95) at a false-alarm rate `alpha`
/// shared (Bonferroni) by the 37 counts. For the tree, whose estimate is
/// unbiased, within the exact two-sided acceptance region, and the bins'
/// mean estimates within `z·√(se²/R)` of the truth. Square Wave's
/// intervals add a bound on EMS's bias, so covering too often is no
/// alarm: only too few covers fail (one-sided).
///
/// The page-load times (a steep low tail): R = 800, α = 1e-3, so a count
/// fails under 733 covers (91.6%; each count's false-alarm rate 2.1e-5):
/// one bin that covers 90% fails with probability 0.93 (91%: 0.71), and
/// one that covers 96.5% (this shape's least bin over these 800, #42)
/// 1e-11. The test this
/// replaces (R = 500, α = 1e-6 two-sided, 444 covers) caught a bin at 90%
/// with probability 0.17. Two modes (R = 300, α = 1e-6): EMS's
/// bias at the narrow mode is larger than the margin's bound, and its
/// least bins cover 88–90% (docs/PROTOCOLS.md §13.3, hence the dashboard's
/// "≈95%"); this count (261 covers) only guards that from falling further
/// (a bin at 86% fails with probability 0.66, at 80% 0.999). A smooth shape
/// (least bin 0.977) is measured by `bench/square_wave_coverage.py`.
#[test]
fn square_wave_intervals_cover_over_800_collections() {
    intervals_cover(DistributionProtocol::SquareWave, &load_times(5000), 800, 1e-3);
}

#[test]
fn square_wave_intervals_cover_on_two_modes() {
    intervals_cover(DistributionProtocol::SquareWave, &two_modes(5000), 300, 1e-6);
}

#[test]
fn hierarchical_intervals_cover_over_500_collections() {
    intervals_cover(DistributionProtocol::Hierarchical, &load_times(5000), 500, 1e-6);
}

fn intervals_cover(protocol: DistributionProtocol, values: &[f64], runs: usize, alpha: f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    {
        let metric = metric(protocol, 1.0, 32);
        let truth = bin_shares(&metric, values);
        // The mean's target: the bins' midpoints, weighted by their shares.
        let true_mean: f64 = truth.iter().enumerate().map(|(b, f)| f * 0.5 * (metric.edge(b as u64) + metric.edge(b as u64 + 1))).sum();
        let mut rng = SimulationRng::seed_from_u64(500 + protocol as u64);
        let (mut quantiles, mut bins, mut mean, mut median_width) = ([0usize; 4], vec![0usize; truth.len()], 0usize, 0.0);
        let (mut sums, mut variances) = (vec![0.0; truth.len()], vec![0.0; truth.len()]);
        for _ in 0..runs {
            let estimate = collect(&metric, values, &mut rng);
            for (covered, q) in quantiles.iter_mut().zip(&estimate.quantiles) {
                let t = true_quantile(&sorted, q.q);
                *covered += usize::from(q.ci95[0] <= t && t <= q.ci95[1]);
            }
            median_width += (estimate.quantiles[0].ci95[1] - estimate.quantiles[0].ci95[0]) / runs as f64;
            for (b, bin) in estimate.histogram.iter().enumerate() {
                bins[b] += usize::from(bin.ci95[0] <= truth[b] && truth[b] <= bin.ci95[1]);
                sums[b] += bin.frequency;
                let se = (bin.ci95[1] - bin.ci95[0]) / (2.0 * 1.959_963_984_540_054);
                variances[b] += se * se;
            }
            mean += usize::from(estimate.mean.ci95[0] <= true_mean && true_mean <= estimate.mean.ci95[1]);
        }
        let rate = |c: usize, of: usize| c as f64 / of as f64;
        println!("{protocol}: p50/p90/p95/p99 {:?}, bins {:?}, mean {:.3}, median width {median_width:.0} ms",
            quantiles.map(|c| rate(c, runs)), bins.iter().map(|&c| rate(c, runs)).collect::<Vec<_>>(), rate(mean, runs));
        let alpha = alpha / (quantiles.len() + bins.len() + 1) as f64;
        let square_wave = protocol == DistributionProtocol::SquareWave;
        // Square Wave's margins add a bound on EMS's bias, and the tree's
        // p95 and p99 intervals are wide where F is flat: covering too
        // often is no alarm, too rarely is. Square Wave's test is one-sided
        // (its whole α in the lower tail); the tree's p95 and p99 keep the
        // lower end of its two-sided region.
        let least = *common::binomial_acceptance(runs, 0.95, if square_wave { 2.0 * alpha } else { alpha }).start();
        let at_least = |what: String, c: usize| assert!(c >= least, "{what}: {c} of {runs} covered, fewer than {least}");
        for (i, &c) in quantiles.iter().enumerate() {
            let what = format!("{protocol}: quantile {i}");
            if square_wave || i >= 2 {
                at_least(what, c);
            } else {
                common::assert_coverage(&what, c, runs, alpha);
            }
        }
        for (b, &c) in bins.iter().enumerate() {
            let what = format!("{protocol}: bin {b}");
            if square_wave {
                at_least(what, c);
            } else {
                common::assert_coverage(&what, c, runs, alpha);
            }
        }
        if square_wave {
            at_least(format!("{protocol}: mean"), mean);
        } else {
            common::assert_coverage(&format!("{protocol}: mean"), mean, runs, alpha);
        }
        assert!(median_width < 1000.0, "{protocol}: the median's interval is {median_width} ms wide");
        if protocol == DistributionProtocol::Hierarchical {
            let z = common::z_critical(1e-6, truth.len());
            for b in 0..truth.len() {
                let (average, se) = (sums[b] / runs as f64, (variances[b] / runs as f64 / runs as f64).sqrt());
                assert!((average - truth[b]).abs() <= z * se, "bin {b}: mean estimate {average}, truth {}", truth[b]);
            }
        }
    }
}

/// Configs: the defaults, `"distribution"`'s choice, and every error names
/// its parameter.
#[test]
fn configs_are_checked_and_resolved() {
    let m = Metric::from_json(r#"{"protocol":"distribution","epsilon":1,"range":[0,5000]}"#).unwrap();
    assert_eq!(m.protocol().name(), "square_wave");
    assert_eq!(m.family(), "distribution");
    let typed = m.mechanism::<DistributionMetric>().unwrap();
    assert_eq!((typed.bins(), typed.range()), (64, [0.0, 5000.0]));
    let tree = DistributionMetric::from_json(r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":64}"#).unwrap();
    let sizes: Vec<u64> = tree.hierarchy().unwrap().levels().iter().map(|l| l.oracle().domain().len() as u64).collect();
    assert_eq!(sizes, [4, 16, 64]);
    // Square Wave's cells stand for public numbers of the widened range.
    let sw = DistributionMetric::from_json(r#"{"protocol":"square_wave","epsilon":1,"range":[0,100],"bins":10}"#).unwrap();
    let (inputs, cells) = (sw.inputs(), sw.square_wave().unwrap().cells());
    assert_eq!((inputs, tree.inputs()), (1030, 64), "a fine grid of B*ceil(1024/B) inputs; the tree's bins");
    assert!(sw.cell_value(0).unwrap() < 0.0 && sw.cell_value(cells - 1).unwrap() > 100.0);
    assert!(tree.cell_value(0).is_none());
    let parameter = |config: &str| match Metric::from_json(config) {
        Err(Error::InvalidConfig { parameter, .. }) => parameter.to_string(),
        Err(Error::MalformedConfig { .. }) => "malformed".to_string(),
        other => panic!("{config}: {other:?}"),
    };
    for (config, expected) in [
        (r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":1}"#, "bins"),
        (r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":4097}"#, "bins"),
        (r#"{"protocol":"hierarchical","epsilon":1,"range":[1,0]}"#, "range"),
        (r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1e309]}"#, "malformed"),
        (r#"{"protocol":"square_wave","epsilon":0.001,"range":[0,1]}"#, "epsilon"),
        (r#"{"protocol":"square_wave","epsilon":31,"range":[0,1]}"#, "epsilon"),
        (r#"{"protocol":"square_wave","epsilon":1,"range":[[0,1],[0,2]]}"#, "malformed"),
        (r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"steps":3}"#, "malformed"),
        (r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"instantaneous_epsilon":0.5}"#, "instantaneous_epsilon"),
    ] {
        assert_eq!(parameter(config), expected, "{config}");
    }
}

/// Values: clipped to the range, located in their bin; NaN, infinities and
/// lists are refused without echoing the value.
#[test]
fn values_are_clipped_into_bins_and_refused_when_not_numbers() {
    let m = DistributionMetric::from_json(r#"{"protocol":"square_wave","epsilon":1,"range":[0,100],"bins":10}"#).unwrap();
    for (x, bin) in [(-5.0, 0), (0.0, 0), (9.99, 0), (10.0, 1), (99.9, 9), (100.0, 9), (1e300, 9)] {
        assert_eq!(m.bin_of(x), bin, "{x}");
    }
    let metric = Metric::from_json(r#"{"protocol":"hierarchical","epsilon":1,"range":[0,100]}"#).unwrap();
    let mut rng = SimulationRng::seed_from_u64(3);
    for text in ["NaN", "inf", "1,2", "12345abc"] {
        match metric.randomize_text(text, &mut rng) {
            Err(e @ Error::InvalidValue { .. }) => assert!(!e.to_string().contains(text), "{e}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// Reports made for another configuration or forged are refused, counted
/// by reason, and change nothing; no input panics.
#[test]
fn hostile_reports_are_refused_and_counted() {
    for config in [
        r#"{"protocol":"square_wave","epsilon":1,"range":[0,100],"bins":8}"#,
        r#"{"protocol":"hierarchical","epsilon":1,"range":[0,100],"bins":300}"#,
    ] {
        let metric = Metric::from_json(config).unwrap();
        let typed = metric.mechanism::<DistributionMetric>().unwrap();
        let good = metric.randomize_text("50", &mut SimulationRng::seed_from_u64(4)).unwrap().to_json();
        let envelope = good.split(",\"").take(4).collect::<Vec<_>>().join(",\"");
        let hostile = [
            format!("{envelope},\"value\":{}}}", typed.square_wave().map_or(0, |sw| sw.cells())),
            format!("{envelope},\"value\":18446744073709551615}}"),
            format!("{envelope},\"cohort\":3,\"bits\":\"ff\"}}"),
            format!("{envelope},\"cohort\":4294967295,\"seed\":1,\"value\":0}}"),
            format!("{envelope},\"cohort\":0,\"bits\":\"fff\"}}"),
            format!("{envelope},\"cohort\":2,\"seed\":4294967295,\"value\":7}}"),
            good.replace("\"epsilon\":1.0", "\"epsilon\":2.0"),
        ];
        let mut aggregator = Aggregator::new(metric.clone());
        aggregator.add_json(&good).unwrap();
        let histogram = |a: &Aggregator| serde_json::to_value(a.estimate(PostProcessing::None).unwrap()).unwrap()["histogram"].clone();
        let before = histogram(&aggregator);
        for report in &hostile {
            assert!(matches!(aggregator.add_json(report), Err(Error::Rejected { .. })), "{config}: accepted {report}");
        }
        assert_eq!(aggregator.n(), 1);
        assert_eq!(aggregator.rejected().total(), hostile.len() as u64);
        assert_eq!(histogram(&aggregator), before);
    }
}

/// Memoization: one permanent report per input of the grid (values that
/// share it share the report), and for the tree one level per install.
#[test]
fn memoization_keeps_one_report_per_bin() {
    for protocol in ["square_wave", "hierarchical"] {
        let config = format!(r#"{{"protocol":"{protocol}","epsilon":1,"range":[0,100],"bins":10,"memoize":true}}"#);
        let mut rng = SimulationRng::seed_from_u64(6);
        let mut client = Client::new(&config, &new_secret(&mut rng), None).unwrap();
        let first = client.randomize_text("41", 0, &mut rng).unwrap();
        for (t, value) in ["41", "41.01", "41.05"].iter().enumerate() {
            assert_eq!(client.randomize_text(value, t as u64, &mut rng).unwrap(), first, "{protocol}: {value}");
        }
        let levels: std::collections::BTreeSet<_> = (0..10)
            .map(|b| match client.randomize_text(&format!("{}", b * 10 + 1), 9, &mut rng).unwrap().payload {
                Payload::Cohort { cohort, .. } => cohort,
                _ => 0,
            })
            .collect();
        assert_eq!(levels.len(), 1, "{protocol}: one level per install");
    }
}

/// `with_quantiles` lists the levels asked for, in order, monotone, within
/// the range, with intervals on both sides of the inner ones, and refuses a
/// level outside `[0, 1]`.
#[test]
fn other_quantiles_are_answered_from_the_same_estimate() {
    let metric = metric(DistributionProtocol::SquareWave, 2.0, 64);
    let estimate = collect(&metric, &load_times(20_000), &mut SimulationRng::seed_from_u64(8));
    let levels = [0.0, 0.25, 0.5, 0.75, 1.0];
    let listed = estimate.clone().with_quantiles(&levels).unwrap().quantiles;
    assert_eq!(listed.iter().map(|q| q.q).collect::<Vec<_>>(), levels);
    assert!(listed.windows(2).all(|w| w[0].value <= w[1].value), "{listed:?}");
    assert!(listed.iter().all(|q| (0.0..=5000.0).contains(&q.value)), "{listed:?}");
    // An interval's ends are where the band crosses q (exactly: the unit
    // test of `Cdf::quantile`); at the inner levels the band brackets the
    // estimate on both sides by itself, not by the widening to hold it.
    for q in &listed[1..4] {
        assert!(q.ci95[0] < q.value && q.value < q.ci95[1], "{q:?}");
    }
    assert_eq!(listed[2], estimate.quantiles[0], "the median is the default list's");
    for bad in [-0.1, 1.5, f64::NAN] {
        assert!(matches!(estimate.clone().with_quantiles(&[bad]), Err(Error::InvalidConfig { .. })), "{bad}");
    }
    let total: f64 = estimate.histogram.iter().map(|b| b.frequency).sum();
    assert!((total - 1.0).abs() < 1e-9, "EMS's histogram sums to {total}");
}
