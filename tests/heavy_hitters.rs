//! Heavy hitters over open domains: the sketches' estimator against its
//! closed form, discovery on a Zipf population of URL paths, the coverage of
//! the intervals of what was found, and the config and value errors.
//!
//! Seeded, so every outcome is the same on every run; the statistical
//! checks use α = 1e-6 (Bonferroni-split) as `tests/statistics.rs` does.

mod common;

use common::{binomial_critical, demo, z_critical};
use localdp::heavy::Found;
use localdp::state::StateWriter;
use localdp::{
    Aggregate, Error, ExpectedValue, HeavyHitterAggregator, HeavyHitterMetric, HeavyHitterProtocol, Metric,
    Requirement, SimulationRng,
};

const ALPHA: f64 = 1e-6;

/// `d` distinct URL paths of at most 16 bytes, most popular first.
fn paths(d: usize) -> Vec<String> {
    const SECTIONS: [&str; 8] = ["/", "/blog", "/shop", "/docs", "/help", "/news", "/user", "/tag"];
    let base36 = |mut i: usize| {
        let mut s = Vec::new();
        while {
            s.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[i % 36]);
            i /= 36;
            i > 0
        } {}
        String::from_utf8(s).unwrap()
    };
    (0..d).map(|i| if i < 8 { SECTIONS[i].to_string() } else { format!("{}/{}", SECTIONS[i % 8], base36(i)) }).collect()
}

/// Fixed counts of a Zipf(`s`) population of `n` devices over `d` values.
fn zipf(n: usize, d: usize, s: f64) -> Vec<usize> {
    let weights: Vec<f64> = (1..=d).map(|r| 1.0 / (r as f64).powf(s)).collect();
    let total: f64 = weights.iter().sum();
    let mut counts: Vec<usize> = weights.iter().map(|w| (n as f64 * w / total).floor() as usize).collect();
    counts[0] += n - counts.iter().sum::<usize>();
    counts
}

/// An aggregator fed one report per device.
fn collect(metric: &HeavyHitterMetric, values: &[String], counts: &[usize], rng: &mut SimulationRng) -> HeavyHitterAggregator {
    let mut aggregator = HeavyHitterAggregator::new(metric.clone());
    for (value, &count) in values.iter().zip(counts) {
        for _ in 0..count {
            aggregator.add(&localdp::Randomizer::randomize(metric, value.as_str(), rng).unwrap()).unwrap();
        }
    }
    aggregator
}

/// For CMS and HCMS with a sketch small enough for values to collide: the
/// mean estimate of every candidate over R runs is its expectation given
/// the (public, fixed) hash functions, and the mean squared error is the
/// closed-form variance, both within `z·SE` (the module docs of
/// `localdp::heavy` give the formulas; `π` is the share of rows where two
/// values collide).
#[test]
fn sketches_are_unbiased_with_the_closed_form_variance() {
    const RUNS: usize = 400;
    let values: Vec<String> = ["/", "/blog", "/shop", "/docs", "/help", "/news"].map(String::from).to_vec();
    let counts = [1500, 1000, 600, 400, 300, 200];
    let n: usize = counts.iter().sum();
    let candidates = ["/", "/blog", "/docs", "/news", "/absent"];
    let z = z_critical(ALPHA, 2 * 2 * candidates.len());
    for protocol in ["cms", "hcms"] {
        let config = format!(
            r#"{{"protocol":"{protocol}","epsilon":2,"sketch":{{"hashes":8,"width":32}},"candidates":{}}}"#,
            serde_json::to_string(&candidates).unwrap()
        );
        let metric = HeavyHitterMetric::from_json(&config).unwrap();
        let sketch = metric.sketch().unwrap();
        let (k, m, f) = (sketch.rows(), sketch.width() as f64, sketch.flip_probability());
        let share = |a: &str, b: &str| (0..k).filter(|&j| sketch.column(j, a) == sketch.column(j, b)).count() as f64 / k as f64;
        let scale = m / (m - 1.0);
        let mut collisions = 0;
        let expected: Vec<(f64, f64)> = candidates
            .iter()
            .map(|v| {
                let (mut mean, mut variance) = (-(n as f64) / m, 0.0);
                for (w, &c) in values.iter().zip(&counts) {
                    let pi = share(v, w);
                    collisions += usize::from(pi > 0.0 && pi < 1.0);
                    mean += c as f64 * pi;
                    variance += c as f64
                        * match protocol {
                            "cms" => pi * (1.0 - pi) + f * (1.0 - f) / (1.0 - 2.0 * f).powi(2),
                            _ => 1.0 / (1.0 - 2.0 * f).powi(2) - pi * pi,
                        };
                }
                (scale * mean, scale * scale * variance)
            })
            .collect();
        assert!(collisions > 0, "{protocol}: the test should exercise collisions");
        let mut rng = SimulationRng::seed_from_u64(1300);
        let mut estimates = vec![Vec::with_capacity(RUNS); candidates.len()];
        for _ in 0..RUNS {
            let estimate = collect(&metric, &values, &counts, &mut rng).estimate().unwrap();
            assert!(matches!(estimate.found, Found::Estimates(_)));
            for (i, e) in estimate.values().iter().enumerate() {
                assert_eq!(e.value, candidates[i], "candidates keep the config's order");
                estimates[i].push(e.frequency * n as f64);
            }
        }
        for (i, (mean, variance)) in expected.iter().enumerate() {
            let observed = estimates[i].iter().sum::<f64>() / RUNS as f64;
            let tolerance = z * (variance / RUNS as f64).sqrt();
            assert!((observed - mean).abs() <= tolerance, "{protocol} {}: mean {observed} vs {mean} ± {tolerance}", candidates[i]);
            let squares: Vec<f64> = estimates[i].iter().map(|e| (e - mean).powi(2)).collect();
            let mse = squares.iter().sum::<f64>() / RUNS as f64;
            let sd = (squares.iter().map(|s| (s - mse).powi(2)).sum::<f64>() / (RUNS - 1) as f64).sqrt();
            let tolerance = z * sd / (RUNS as f64).sqrt();
            assert!((mse - variance).abs() <= tolerance, "{protocol} {}: MSE {mse} vs variance {variance} ± {tolerance}", candidates[i]);
        }
    }
}

/// Precision and recall of the true top 10 among the values found.
fn recall(found: &[String], truth: &[String]) -> f64 {
    truth.iter().filter(|t| found.contains(t)).count() as f64 / truth.len() as f64
}

#[test]
fn discovery_finds_the_top_values_of_a_zipf_population() {
    let values = paths(10_000);
    let counts = zipf(200_000, values.len(), 1.1);
    let truth = &values[..10];
    for (protocol, least) in [("pem", 1.0), ("treehist", 0.6), ("sfp", 0.2), ("heavy_hitters", 1.0)] {
        let metric = HeavyHitterMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":4,"top":10}}"#)).unwrap();
        let mut rng = SimulationRng::seed_from_u64(1301);
        let estimate = collect(&metric, &values, &counts, &mut rng).estimate().unwrap();
        assert!(matches!(estimate.found, Found::HeavyHitters(_)), "{protocol}: discovery lists heavy_hitters");
        let found: Vec<String> = estimate.values().iter().map(|e| e.value.clone()).collect();
        assert!(found.iter().all(|v| values.contains(v)), "{protocol}: every value found is one the devices hold: {found:?}");
        let distinct: std::collections::HashSet<&String> = found.iter().collect();
        assert_eq!(distinct.len(), found.len(), "{protocol}: each value listed once: {found:?}");
        assert!(estimate.values().windows(2).all(|w| w[0].frequency >= w[1].frequency), "{protocol}: ranked");
        let recall = recall(&found, truth);
        assert!(recall >= least, "{protocol}: recall {recall} of the top 10, found {found:?}");
        // What was found is as frequent as it says: within 5 standard errors.
        for e in estimate.values() {
            let truth = values.iter().position(|v| *v == e.value).map_or(0, |i| counts[i]) as f64 / 200_000.0;
            assert!((e.frequency - truth).abs() <= 5.0 * e.std_error, "{protocol} {}: {} vs {truth}", e.value, e.frequency);
        }
    }
}

/// Over repeated seeded collections, the 95% intervals of the true values found
/// cover their true frequency 95% of the time (within `z·sqrt(0.95·0.05/R)`,
/// counting one independent draw per run), and PEM finds the heavy values
/// every time.
#[test]
fn intervals_of_found_values_cover_95_percent() {
    const RUNS: usize = 300;
    let values: Vec<String> = ["/", "/blog", "/shop", "/é", "/docs", "/help", "/a/b/c"].map(String::from).to_vec();
    let counts = [3000, 2000, 1500, 1000, 800, 400, 300];
    let n: usize = counts.iter().sum();
    let z = z_critical(ALPHA, 2);
    for protocol in ["pem", "treehist", "sfp"] {
        let metric =
            HeavyHitterMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":3,"max_length":6,"top":4}}"#)).unwrap();
        let mut rng = SimulationRng::seed_from_u64(1302);
        let (mut covered, mut found, mut false_finds) = (0, 0, 0);
        for _ in 0..RUNS {
            let estimate = collect(&metric, &values, &counts, &mut rng).estimate().unwrap();
            for e in estimate.values() {
                let Some(i) = values.iter().position(|v| *v == e.value) else {
                    false_finds += 1;
                    continue;
                };
                found += 1;
                let truth = counts[i] as f64 / n as f64;
                covered += usize::from(e.ci95[0] <= truth && truth <= e.ci95[1]);
            }
        }
        // TreeHist spreads the devices over 8 times as many levels as PEM,
        // and SFP's fragments go through a sketch: with 9,000 devices they
        // find fewer values, but what they find is covered as well.
        let least = if protocol == "pem" { 4 * RUNS } else { RUNS };
        assert!(found >= least, "{protocol}: {found} values found in {RUNS} runs");
        // Each tests the values it lists at α = 0.05 (Bonferroni) on reports
        // that did not select them: SFP on its whole-value sketch, PEM and
        // TreeHist on their held-out halves.
        assert!(false_finds <= RUNS / 10, "{protocol}: {false_finds} values found that nobody holds");
        let rate = covered as f64 / found as f64;
        println!("{protocol}: {found} found, {false_finds} held by nobody, coverage {rate:.4}");
        let tolerance = z * (0.95 * 0.05 / RUNS as f64).sqrt();
        assert!((rate - 0.95).abs() <= tolerance, "{protocol}: coverage {rate} ± {tolerance}");
    }
}

/// The demo's metric at ε = `epsilon` (the demo's is 4).
fn demo_metric(epsilon: f64) -> HeavyHitterMetric {
    HeavyHitterMetric::from_json(&demo::config(epsilon)).unwrap()
}

/// What collections of the demo's population listed.
#[derive(Debug, Default)]
struct FalseDiscoveries {
    /// Pages listed.
    pages: usize,
    /// Those whose 95% interval covers their share.
    covered: usize,
    /// Values listed that no device holds.
    listed: usize,
    /// Those whose 95% interval excludes 0.
    excluding_zero: usize,
    /// Collections that listed at least one of those.
    collections: usize,
}

/// Collection `seed` randomizes the demo's population as `localdp randomize
/// --seed` does (one seeded generator, the pages' lines in order), then
/// estimates; printed (`--nocapture`): each value listed that nobody holds.
fn false_discoveries(metric: &HeavyHitterMetric, seeds: std::ops::Range<u64>) -> FalseDiscoveries {
    let (pages, counts): (Vec<String>, Vec<usize>) = demo::PAGES.iter().map(|&(p, c)| (p.to_string(), c)).unzip();
    let n: usize = counts.iter().sum();
    let mut out = FalseDiscoveries::default();
    for seed in seeds {
        let estimate = collect(metric, &pages, &counts, &mut SimulationRng::seed_from_u64(seed)).estimate().unwrap();
        let unheld: Vec<_> = estimate.values().iter().filter(|e| !pages.contains(&e.value)).collect();
        for e in &unheld {
            println!("seed {seed}: {:?} at {:.4}, ci95 [{:.4}, {:.4}]", e.value, e.frequency, e.ci95[0], e.ci95[1]);
        }
        out.pages += estimate.values().len() - unheld.len();
        for e in estimate.values() {
            let share = pages.iter().position(|p| *p == e.value).map(|i| counts[i] as f64 / n as f64);
            out.covered += usize::from(share.is_some_and(|f| e.ci95[0] <= f && f <= e.ci95[1]));
        }
        out.listed += unheld.len();
        out.excluding_zero += unheld.iter().filter(|e| e.ci95[0] > 0.0).count();
        out.collections += usize::from(unheld.iter().any(|e| e.ci95[0] > 0.0));
    }
    out
}

/// A value nobody holds is listed, with an interval that excludes 0, in at
/// most 2.5% of collections: each value found is tested one-sided at
/// α = 0.05 over all the values found (Bonferroni) on reports that did not
/// select it, so the collections listing one are at most Binomial(R,
/// 0.025); the bound is its upper 10⁻⁶ quantile.
fn assert_few_false_discoveries(epsilon: f64, seeds: std::ops::Range<u64>) {
    let runs = (seeds.end - seeds.start) as usize;
    let found = false_discoveries(&demo_metric(epsilon), seeds);
    let bound = binomial_critical(ALPHA, runs, 0.025);
    println!("ε = {epsilon}, {runs} collections: {found:?}");
    assert!(found.collections <= bound, "ε = {epsilon}: {found:?}, at most {bound} of {runs} collections may list a value nobody holds");
}

/// At ε = 2 a level's noise is large beside the values' shares, so a value
/// scored by the reports that selected it (the best of thousands of
/// extensions) passes for found in most collections.
#[test]
fn values_nobody_holds_are_rarely_listed() {
    assert_few_false_discoveries(2.0, 0..20);
}

/// The demo's ε = 4 over 200 collections (about a minute):
/// `cargo test --test heavy_hitters -- --ignored --nocapture`.
#[test]
#[ignore]
fn values_nobody_holds_are_rarely_listed_in_200_demo_collections() {
    assert_few_false_discoveries(4.0, 0..200);
}

#[test]
fn long_values_are_refused_or_truncated_and_keys_checked() {
    let mut rng = SimulationRng::seed_from_u64(1303);
    let strict = Metric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4}"#).unwrap();
    let error = strict.randomize_text("/secret-page", &mut rng).unwrap_err();
    assert_eq!(error, Error::InvalidValue { expected: ExpectedValue::Text { max_bytes: 4 } });
    assert!(!error.to_string().contains("secret"), "the value never appears: {error}");
    assert!(error.to_string().contains("truncate"), "{error}");
    assert!(strict.randomize_text("/abc", &mut rng).is_ok(), "four bytes fit");

    // Truncation cuts at a character boundary: "/éé" is 5 bytes, "/é" 3.
    let metric = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4,"truncate":true}"#).unwrap();
    assert_eq!(metric.prepare("/éé").unwrap(), "/é");
    assert_eq!(metric.prepare("/abcdef").unwrap(), "/abc");

    let invalid = |config: &str| match Metric::from_json(config) {
        Err(Error::InvalidConfig { parameter, requirement, .. }) => (parameter, requirement),
        other => panic!("{config}: {other:?}"),
    };
    let (parameter, requirement) = invalid(r#"{"protocol":"cms","epsilon":1,"top":5}"#);
    assert_eq!(parameter, "top");
    assert!(matches!(requirement, Requirement::NotFor { .. }));
    assert_eq!(invalid(r#"{"protocol":"pem","epsilon":1,"candidates":["a"]}"#).0, "candidates");
    assert_eq!(invalid(r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":24}}"#).0, "sketch.width");
    assert_eq!(invalid(r#"{"protocol":"pem","epsilon":1,"max_length":65}"#).0, "max_length");
    assert_eq!(invalid(r#"{"protocol":"treehist","epsilon":1,"top":0}"#).0, "top");
    assert_eq!(invalid(r#"{"protocol":"cms","epsilon":1,"candidates":["a","a"]}"#).0, "candidates");
    assert!(Metric::from_json(r#"{"protocol":"pem","epsilon":1,"colour":"red"}"#).is_err(), "unknown keys are refused");

    let chosen = Metric::from_json(r#"{"protocol":"heavy_hitters","epsilon":4}"#).unwrap();
    assert_eq!(chosen.protocol().name(), HeavyHitterProtocol::Pem.name());

    // A sketch needs candidates to estimate.
    let sketch = Metric::from_json(r#"{"protocol":"cms","epsilon":1}"#).unwrap();
    let mut aggregator = localdp::Aggregator::new(sketch.clone());
    aggregator.add(&sketch.randomize_text("anything at all, any length", &mut rng).unwrap()).unwrap();
    let error = aggregator.estimate(localdp::PostProcessing::None).unwrap_err();
    assert!(matches!(error, Error::InvalidConfig { parameter: "candidates", .. }), "{error:?}");
}

/// Reports of one configuration are refused by another, and hostile
/// payloads are counted by reason, never a panic.
#[test]
fn foreign_and_hostile_reports_are_refused() {
    let mut rng = SimulationRng::seed_from_u64(1304);
    let pem = Metric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":4}"#).unwrap();
    let longer = Metric::from_json(r#"{"protocol":"pem","epsilon":1,"max_length":5}"#).unwrap();
    let hcms = Metric::from_json(r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a"]}"#).unwrap();
    let mut aggregator = localdp::Aggregator::new(pem.clone());
    assert!(aggregator.add(&longer.randomize_text("/a", &mut rng).unwrap()).is_err());
    let report = pem.randomize_text("/a", &mut rng).unwrap().to_json_value();
    let domain = report["domain"].as_str().unwrap();
    let hostile = [
        format!(r#"{{"version":1,"protocol":"pem","epsilon":1.0,"domain":"{domain}","cohort":4,"seed":1,"value":0}}"#),
        format!(r#"{{"version":1,"protocol":"pem","epsilon":1.0,"domain":"{domain}","cohort":0,"seed":1,"value":99}}"#),
        format!(r#"{{"version":1,"protocol":"pem","epsilon":1.0,"domain":"{domain}","cohort":0,"bits":"ff"}}"#),
        format!(r#"{{"version":1,"protocol":"pem","epsilon":1.0,"domain":"{domain}","cohort":0,"seed":4294967296,"value":0}}"#),
    ];
    for line in &hostile {
        assert!(aggregator.add_json(line).is_err(), "{line}");
    }
    assert_eq!(aggregator.rejected().total(), 5);
    assert_eq!(aggregator.n(), 0);
    let mut sketch = localdp::Aggregator::new(hcms.clone());
    let report = hcms.randomize_text("a", &mut rng).unwrap().to_json_value();
    let domain = report["domain"].as_str().unwrap();
    let out_of_range = format!(r#"{{"version":1,"protocol":"hcms","epsilon":1.0,"domain":"{domain}","cohort":0,"seed":16,"value":1}}"#);
    assert!(sketch.add_json(&out_of_range).is_err());
    assert!(sketch.add_json(report.to_string()).is_ok());
}

/// A forged (correctly checksummed) PEM/TreeHist state is refused without
/// allocating what it claims: a level of 2^40 reports in a few bytes is
/// truncated, not an abort; and a state whose reports are not in the order
/// the aggregator writes them (so it would not read back to the same bytes)
/// is inconsistent.
#[test]
fn forged_discovery_states_are_refused_cheaply() {
    for protocol in ["pem", "treehist"] {
        let metric = HeavyHitterMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":1,"max_length":4}}"#)).unwrap();
        let levels = metric.discovery().unwrap().levels() as usize;
        let forge = |n: u64, first: &[(u64, u64)]| {
            let mut w = StateWriter::new(&HeavyHitterAggregator::new(metric.clone()).state_id());
            w.u64(n);
            w.counts(&[0; 6]);
            let mut sizes = vec![0; levels];
            sizes[0] = n;
            w.counts(&sizes);
            for level in 0..levels {
                let pairs = if level == 0 { first } else { &[] };
                w.counts(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
                w.counts(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
            }
            w.finish()
        };
        let state_error = |bytes: &[u8]| match HeavyHitterAggregator::from_bytes(metric.clone(), bytes) {
            Err(Error::State(e)) => e,
            other => panic!("{protocol}: {other:?}"),
        };
        assert_eq!(HeavyHitterAggregator::from_bytes(metric.clone(), &forge(2, &[(1, 0), (2, 0)])).unwrap().n(), 2);
        assert!(matches!(state_error(&forge(2, &[(2, 0), (1, 0)])), localdp::StateError::Inconsistent { .. }), "{protocol}");
        assert!(matches!(state_error(&forge(2, &[(1, 1), (1, 0)])), localdp::StateError::Inconsistent { .. }), "{protocol}");
        // A level claiming 2^40 reports with none written.
        let mut w = StateWriter::new(&HeavyHitterAggregator::new(metric.clone()).state_id());
        w.u64(1 << 40);
        w.counts(&[0; 6]);
        let mut sizes = vec![0; levels];
        sizes[0] = 1 << 40;
        w.counts(&sizes);
        w.u64(1 << 40);
        assert_eq!(state_error(&w.finish()), localdp::StateError::Truncated, "{protocol}");
    }
}

/// Cross-fitting's power: four values of all `max_length` bytes, each held
/// by 7% of the devices, are complete only at the last level, so each half
/// of that level's reports alone tests them near the listing threshold.
/// Measured over 1,120 (collection, value) pairs (seeds 4201 and 4202):
/// missed 1.4% of the time with both halves selecting for each other, 5.8%
/// with one half selecting and the other estimating (the design before).
/// Over `R` collections the misses are at most Binomial(4R, 0.025) if a
/// value is missed at most 2.5% of the time; the bound is its upper 10⁻³
/// quantile (the false alarm). The design before exceeds it with
/// probability 0.49 (with this seed it does: 20 missed, bound 18).
#[test]
fn cross_fitting_lists_values_complete_only_at_the_last_level() {
    const RUNS: usize = 80;
    let values: Vec<String> = ["/", "/a", "/b", "/abcdefg", "/bcdefgh", "/cdefghi", "/defghij"].map(String::from).to_vec();
    let counts = [4000, 2000, 2000, 800, 800, 800, 800];
    let metric = HeavyHitterMetric::from_json(r#"{"protocol":"pem","epsilon":4,"max_length":8,"top":8}"#).unwrap();
    let mut rng = SimulationRng::seed_from_u64(4202);
    let mut missed = 0;
    for _ in 0..RUNS {
        let estimate = collect(&metric, &values, &counts, &mut rng).estimate().unwrap();
        let found: Vec<String> = estimate.values().iter().map(|e| e.value.clone()).collect();
        assert!(values[..3].iter().all(|v| found.contains(v)), "the short values are always found: {found:?}");
        missed += values[3..].iter().filter(|v| !found.contains(v)).count();
    }
    let bound = binomial_critical(1e-3, 4 * RUNS, 0.025);
    println!("{missed} of {} missed (at most {bound})", 4 * RUNS);
    assert!(missed <= bound, "{missed} of {} long values missed, at most {bound}", 4 * RUNS);
}
