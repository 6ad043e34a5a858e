//! The benchmark (not a test): for every protocol at d = 1024, n = 10^6, ε = 1
//! (change with `--d`, `--n`, `--epsilon`), on one thread:
//!
//! * client reports/s: `randomize_index` with a seeded generator;
//! * aggregator reports/s: parsing and validating every report's JSON line,
//!   adding it, and the final estimate;
//! * MSE ÷ closed form: the mean over values of `(f̂_v − f_v)²` over the mean
//!   of the exact variance — about 1 for a correct protocol (one run, so it
//!   fluctuates by a few percent);
//! * MSE ÷ R*: against the Ye–Barg optimum of PROTOCOLS.md §7.
//!
//! Run with `npm run bench` (or `cargo run --release --example bench`).

use localdp::privacy::exp;
use localdp::simulate::Population;
use localdp::{FrequencyAggregator, FrequencyOracle, PostProcessing, Protocol, SimulationRng};
use std::hint::black_box;
use std::time::Instant;

fn flag(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} takes a number")))
        .unwrap_or(default)
}

/// R*(d, ε, n): the smallest per-value variance of an unbiased estimator
/// (subset selection with the best subset size).
fn ye_barg_optimum(d: usize, epsilon: f64, n: u64) -> f64 {
    let (e, df) = (exp(epsilon), d as f64);
    (1..d)
        .map(|s| {
            let s = s as f64;
            let p = s * e / (s * e + df - s);
            let q = s * ((s - 1.0) * e + df - s) / ((df - 1.0) * (s * e + df - s));
            (df * q * (1.0 - q) + (p - q) * (1.0 - p - q)) / (df * n as f64 * (p - q) * (p - q))
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let d = flag("--d", 1024.0) as usize;
    let n = flag("--n", 1e6) as u64;
    let epsilon = flag("--epsilon", 1.0);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    println!("localdp native bench: d={d}, n={n}, ε={epsilon}; one thread (machine has {cores} cores)");
    println!(
        "{:<6}{:>12}{:>18}{:>22}{:>14}{:>12}",
        "proto", "bits/report", "client reports/s", "aggregator reports/s", "MSE÷closed", "MSE÷R*"
    );

    let population = Population::zipf(d, 1.1);
    let truth = population.frequencies();
    let mut rng = SimulationRng::from_seed(2024);
    let values: Vec<usize> = (0..n).map(|_| population.sample(&mut rng)).collect();
    let optimum = ye_barg_optimum(d, epsilon, n);

    for protocol in Protocol::ALL {
        let config = format!(r#"{{"protocol":"{}","epsilon":{epsilon},"domain":{d}}}"#, protocol.name());
        let oracle = FrequencyOracle::from_json(&config).expect("valid config");

        let start = Instant::now();
        let reports: Vec<_> = values.iter().map(|&v| oracle.randomize_index(v, &mut rng)).collect();
        let client_rate = n as f64 / start.elapsed().as_secs_f64();
        let lines: Vec<String> = reports.iter().map(|r| r.to_json()).collect();
        drop(reports);

        let start = Instant::now();
        let mut aggregator = FrequencyAggregator::new(oracle.clone());
        for line in &lines {
            aggregator.add_json(black_box(line)).expect("a valid report");
        }
        let estimate = aggregator.estimate(PostProcessing::None).expect("reports");
        let aggregator_rate = n as f64 / start.elapsed().as_secs_f64();

        let mse = estimate.estimates.iter().zip(&truth).map(|(e, f)| (e.unbiased_frequency - f).powi(2)).sum::<f64>()
            / d as f64;
        let closed_form = truth.iter().map(|&f| oracle.variance(f, n)).sum::<f64>() / d as f64;
        println!(
            "{:<6}{:>12}{:>18.0}{:>22.0}{:>14.3}{:>12.3}",
            protocol.name(),
            oracle.report_bits(),
            client_rate,
            aggregator_rate,
            mse / closed_form,
            mse / optimum
        );
    }
    let auto = FrequencyOracle::from_json(&format!(r#"{{"protocol":"auto","epsilon":{epsilon},"domain":{d}}}"#))
        .expect("valid config");
    println!("auto resolves to {} for these parameters", auto.protocol().name());
}
