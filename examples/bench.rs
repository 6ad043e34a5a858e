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
//! Then every numeric mechanism on the same n and ε over `[0, 100]` with
//! bimodal data: client and aggregator reports/s, and the squared error of
//! the mean over R = 1000 runs of 10^4 reports ÷ the exact closed form
//! (about 1 ± 0.045).
//!
//! Run with `npm run bench` (or `cargo run --release --example bench`).

use localdp::privacy::exp;
use localdp::simulate::Population;
use localdp::{
    Aggregate, FrequencyAggregator, FrequencyOracle, FrequencyProtocol, NumericAggregator, NumericMetric,
    ProtocolFamily, Randomizer, SimulationRng,
};
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
    let mut rng = SimulationRng::seed_from_u64(2024);
    let values: Vec<usize> = (0..n).map(|_| population.sample(&mut rng)).collect();
    let optimum = ye_barg_optimum(d, epsilon, n);

    for &protocol in FrequencyProtocol::ALL {
        if protocol == FrequencyProtocol::DBitFlip {
            continue; // for repeated collection, not one-shot accuracy
        }
        let config = format!(r#"{{"protocol":"{}","epsilon":{epsilon},"domain":{d}}}"#, protocol.name());
        let oracle = FrequencyOracle::from_json(&config).expect("valid config");

        let start = Instant::now();
        let reports: Vec<_> = values.iter().map(|&v| oracle.randomize_index(v, &mut rng).expect("a value of the domain")).collect();
        let client_rate = n as f64 / start.elapsed().as_secs_f64();
        let lines: Vec<String> = reports.iter().map(|r| r.to_json()).collect();
        drop(reports);

        let start = Instant::now();
        let mut aggregator = FrequencyAggregator::new(oracle.clone());
        for line in &lines {
            aggregator.add_json(black_box(line.as_bytes())).expect("a valid report");
        }
        let estimate = aggregator.estimate().expect("reports");
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
    numeric(n, epsilon, &mut rng);
}

fn numeric(n: u64, epsilon: f64, rng: &mut SimulationRng) {
    println!("\nnumeric means over [0, 100], bimodal data, n={n}, ε={epsilon}");
    println!("{:<14}{:>8}{:>18}{:>22}{:>14}", "proto", "outputs", "client reports/s", "aggregator reports/s", "MSE÷closed");
    let values: Vec<f64> = (0..n).map(|i| if i % 10 < 7 { (i % 20) as f64 } else { 90.0 + (i % 10) as f64 }).collect();
    for protocol in ["duchi", "laplace", "piecewise", "hybrid", "one_bit_mean", "auto"] {
        let metric = NumericMetric::from_json(&format!(r#"{{"protocol":"{protocol}","epsilon":{epsilon},"range":[0,100]}}"#))
            .expect("valid config");
        let start = Instant::now();
        let reports: Vec<_> = values.iter().map(|&x| metric.randomize(&[x], rng).expect("a number")).collect();
        let client_rate = n as f64 / start.elapsed().as_secs_f64();
        let lines: Vec<String> = reports.iter().map(|r| r.to_json()).collect();
        let start = Instant::now();
        let mut aggregator = NumericAggregator::new(metric.clone());
        for line in &lines {
            aggregator.add_json(black_box(line.as_bytes())).expect("a valid report");
        }
        black_box(aggregator.estimate().expect("reports"));
        let aggregator_rate = n as f64 / start.elapsed().as_secs_f64();

        let (runs, size) = (1000, 10_000usize);
        let sample = &values[..size];
        let truth = sample.iter().sum::<f64>() / size as f64;
        let closed = sample.iter().map(|&x| metric.variance_at(0, x)).sum::<f64>() / (size * size) as f64;
        let mut squared = 0.0;
        for _ in 0..runs {
            let mut aggregator = NumericAggregator::new(metric.clone());
            for &x in sample {
                aggregator.add(&metric.randomize(&[x], rng).expect("a number")).expect("valid");
            }
            squared += (aggregator.estimate().expect("reports").attributes[0].mean - truth).powi(2);
        }
        let name = if protocol == "auto" { format!("auto→{}", metric.protocol().name()) } else { protocol.to_string() };
        println!(
            "{name:<14}{:>8}{client_rate:>18.0}{aggregator_rate:>22.0}{:>14.3}",
            metric.outputs(),
            squared / runs as f64 / closed
        );
    }
}
