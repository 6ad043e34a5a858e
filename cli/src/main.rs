//! `localdp`: randomize values, aggregate reports, simulate a collection.

use clap::{Parser, Subcommand, ValueEnum};
use localdp::simulate::Population;
use localdp::{DistributionAggregator, DistributionMetric};
use localdp::{
    Aggregate, Error, Estimate, FrequencyAggregator, FrequencyOracle, NumericAggregator, NumericMetric,
    PostProcessing, RapporAggregator, RapporMetric, Randomizer, SecureRng, SimulationRng,
};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// The binary's own modules (cli/src/).
mod columnar;
mod config;
mod inputs;
mod output;
mod plan;
mod plot;
mod progress;
mod serve;
mod shuffle;
mod tables;

use config::{load_config, load_metric};
use inputs::open_input;
use output::{say, stdout_failed, CliResult};
use tables::{
    candidates_csv, csv, distribution_csv, distribution_table, heavy_hitter_table, numeric_csv, numeric_table,
    quantile_name, rappor_table, table,
};

#[derive(Parser)]
#[command(name = "localdp", version, about = "Local differential privacy for telemetry")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Randomize values, one per line (stdin if no file), into JSON Lines
    /// reports. Lines of the form `user<TAB>value[<TAB>time in ms]` simulate
    /// many users, each with their own memos and ledger.
    Randomize {
        /// The metric's config (JSON).
        #[arg(long)]
        config: PathBuf,
        /// Seed a reproducible generator. FOR SIMULATION ONLY: anyone who
        /// knows the seed can undo the randomization. Without it, reports use
        /// the operating system's CSPRNG.
        #[arg(long)]
        seed: Option<u64>,
        /// Values, one per line.
        values_file: Option<PathBuf>,
    },
    /// Estimate the distribution from JSON Lines reports (stdin if no file)
    /// or Parquet files of reports (`*.parquet`, as `localdp export` writes
    /// them).
    Aggregate {
        /// The metric's config (JSON).
        #[arg(long)]
        config: PathBuf,
        /// Post-processing of the reported `frequency`.
        #[arg(long, default_value = "none", value_parser = ["none", "norm-sub", "project"])]
        post: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Fail on the first rejected report instead of skipping and counting it.
        #[arg(long)]
        strict: bool,
        /// Also draw the estimate into this SVG file: bars with 95% intervals
        /// (frequency), means with 95% intervals (numeric), or the histogram
        /// with its quantiles marked (distribution).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Distribution metrics: the quantiles to estimate, levels in [0, 1]
        /// separated by commas (default 0.5,0.9,0.95,0.99).
        #[arg(long, value_name = "Q,Q,...")]
        quantiles: Option<String>,
        /// Threads that read the files, each into its own aggregator, merged
        /// exactly at the end: the estimate is the same for any number.
        /// JSON Lines files are split at line boundaries, Parquet files by row
        /// group; stdin is read by one. Default: the available cores.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Files of reports: JSON Lines (one JSON object per line), or
        /// Parquet when the name ends in `.parquet`.
        report_files: Vec<PathBuf>,
    },
    /// Validate JSON Lines reports (stdin if no file) and write the accepted
    /// ones as a Parquet file (schema: docs/COLUMNAR.md); rejected reports
    /// are counted on stderr, as `aggregate` counts them, and in the file's
    /// metadata (`localdp.rejected`), so aggregating the file gives the
    /// estimate of the lines.
    Export {
        /// The metric's config (JSON).
        #[arg(long)]
        config: PathBuf,
        /// The output format.
        #[arg(long, value_enum)]
        format: columnar::ExportFormat,
        /// The file to write (replaced whole, once complete).
        #[arg(short, long, value_name = "OUT.parquet")]
        output: PathBuf,
        /// Reports per row group (the unit `aggregate --threads` splits a
        /// file by).
        #[arg(long, value_name = "N", default_value_t = localdp_arrow::ROW_GROUP_ROWS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        row_group_size: usize,
        /// Files of reports, one JSON object per line.
        report_files: Vec<PathBuf>,
    },
    /// Audit the configured randomizer as a black box: a lower bound on its
    /// realized ε from its reports on two neighbouring inputs (JSON). Exits
    /// with 1 when the bound exceeds the claimed ε.
    Audit {
        /// The metric's config (JSON).
        #[arg(long)]
        config: PathBuf,
        /// Reports drawn per input (half choose the witness, half measure it).
        #[arg(long, default_value_t = 200_000)]
        samples: u64,
        /// Confidence of the lower bound.
        #[arg(long, default_value_t = 0.999999)]
        confidence: f64,
        /// Seed the randomizer's generator (reproducible audits); by default
        /// the OS CSPRNG, as in production.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Privacy accounting (JSON): the central ε of many reports of one user
    /// (`compose`), or of many users' reports after a shuffler (`shuffle`).
    #[command(subcommand)]
    Privacy(PrivacyCommand),
    /// Simulate a collection: draw users from a skewed distribution, randomize
    /// and aggregate, and print the estimate beside the truth.
    Simulate {
        /// The metric's config (JSON).
        #[arg(long)]
        config: PathBuf,
        /// Number of simulated users.
        #[arg(long, default_value_t = 100_000)]
        users: u64,
        /// Seed of the simulation.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How many values to show.
        #[arg(long, default_value_t = 12)]
        top: usize,
    },
    /// Plan a metric before collecting: for every protocol its family allows,
    /// the expected standard error and 95% half-width at N users, bytes and
    /// work per report, and with a target error the users and the ε it
    /// needs (closed forms: docs/choosing-epsilon.md).
    Plan(plan::PlanArgs),
    /// Run the collector: an HTTP server that stores reports in SQLite or
    /// PostgreSQL, keeps each metric's running estimate, and serves the demo
    /// page. Prints its URL as the first line of stdout.
    Serve(serve::ServeArgs),
    /// Run a shuffler between the pages and the collector: it takes the
    /// collector's report posts, holds the reports on disk, and forwards each
    /// metric's in batches of at least N, in a random order, so the collector
    /// cannot tell who sent which (docs/shuffler.md). Prints its URL as the
    /// first line of stdout.
    Shuffle(shuffle::ShuffleArgs),
    /// The collector's stores.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Import a metric's export (JSON Lines, or Parquet when the name ends
    /// in `.parquet`: what the collector's `…/export` and
    /// `…/reports.parquet` give) into a store, checking every report as a
    /// post's. One transaction: a report the collector would reject refuses
    /// the whole file, naming its line or row. A file already imported into
    /// the metric (same SHA-256) stores nothing again.
    Import {
        /// The collector's SQLite file (created if missing; not in use), or
        /// its PostgreSQL database, `postgres://…` (collectors may run on
        /// it: they count the import within a second).
        #[arg(long, value_name = "FILE|URL")]
        db: PathBuf,
        /// The collector's metrics file (`localdp serve --metrics`).
        #[arg(long, value_name = "FILE")]
        metrics: PathBuf,
        /// The metric the export is of.
        #[arg(long, value_name = "NAME")]
        metric: String,
        /// The export.
        #[arg(value_name = "EXPORT")]
        export: PathBuf,
    },
    #[cfg(unix)]
    /// Copy a collector's SQLite store, consistently, while the collector
    /// runs (through its control socket, FILE.control) or not (from the
    /// file): every report, rejection count and shuffled-batch record, and
    /// what retention compacted. The copy is its owner's only (mode 0600).
    /// OUT must not exist; it appears only once the copy is complete and
    /// checked. Says what it copied.
    Backup {
        /// The collector's SQLite file (`localdp serve --db FILE`).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// The copy to write (a new file).
        #[arg(value_name = "OUT")]
        out: PathBuf,
        /// How long the running collector may stay silent on its control
        /// socket (making the copy, or sending it) before the backup gives
        /// up, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
        timeout: u64,
    },
}

#[derive(Subcommand)]
enum StoreCommand {
    /// Copy a collector's SQLite database into PostgreSQL, in one
    /// transaction: every report, rejection count and batch id, and the
    /// aggregate states the collectors there read. Refuses a metric that
    /// already holds reports there (nothing is stored twice); says what it
    /// moved.
    Copy {
        /// The SQLite file (`localdp serve --db FILE`); not in use.
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// The PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

#[derive(Subcommand)]
enum PrivacyCommand {
    /// The optimal composition of pure ε-DP reports at a δ: prints
    /// `{"epsilon", "delta", "sum"}`, `sum` being the basic composition Σ ε.
    Compose {
        /// The δ of the composed guarantee, in (1e-200, 1).
        #[arg(long)]
        delta: f64,
        /// Reports as `EPSILONxCOUNT` (`0.1x365`: 365 reports at ε = 0.1), or
        /// `EPSILON` for one report.
        #[arg(required = true, value_name = "EPSILONxCOUNT")]
        reports: Vec<String>,
    },
    /// Amplification by shuffling (Feldman, McMillan, Talwar 2021): prints
    /// `{"epsilon", "lower", "closed_form"}` for n shuffled ε₀-DP reports.
    Shuffle {
        /// The ε₀ of each local report.
        #[arg(long)]
        epsilon: f64,
        /// The number of reports shuffled together.
        #[arg(long)]
        n: u64,
        /// The δ of the central guarantee, in (1e-200, 1).
        #[arg(long)]
        delta: f64,
        /// A mechanism with a tighter bound than any ε₀-DP randomizer's:
        /// `grr` (k-ary randomized response, with `--domain`).
        #[arg(long, value_enum, requires = "domain")]
        protocol: Option<ShuffledProtocol>,
        /// The domain's size k, with `--protocol grr`.
        #[arg(long, requires = "protocol")]
        domain: Option<u64>,
    },
}

/// The mechanisms `privacy shuffle --protocol` has a bound of its own for.
#[derive(Clone, Copy, ValueEnum)]
enum ShuffledProtocol {
    /// k-ary randomized response.
    Grr,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Csv,
    Table,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Randomize { config, seed, values_file } => randomize(&config, seed, values_file.as_deref()),
        Command::Aggregate { config, post, format, strict, plot, quantiles, threads, report_files } => {
            let post = post.parse().expect("checked by clap");
            aggregate(&config, post, format, strict, plot.as_deref(), quantiles.as_deref(), threads.map(usize::from), &report_files)
        }
        Command::Export { config, format, output, row_group_size, report_files } => {
            columnar::export(&config, format, &output, row_group_size, &report_files)
        }
        Command::Serve(args) => serve::run(args),
        Command::Shuffle(args) => shuffle::run(args),
        Command::Store(StoreCommand::Copy { from, to }) => serve::copy::run(&from, &to),
        Command::Import { db, metrics, metric, export } => serve::import::run(&db, &metrics, &metric, &export),
        #[cfg(unix)]
        Command::Backup { db, out, timeout } => serve::backup::run(&db, &out, std::time::Duration::from_secs(timeout)),
        Command::Plan(args) => plan::run(&args),
        Command::Simulate { config, users, seed, top } => simulate(&config, users, seed, top),
        Command::Audit { config, samples, confidence, seed } => audit(&config, samples, confidence, seed),
        Command::Privacy(command) => privacy(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("localdp: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn randomize(config: &Path, seed: Option<u64>, values: Option<&Path>) -> CliResult {
    let (metric, config_text) = load_config(config)?;
    let source = values.map_or("stdin".to_string(), |p| p.display().to_string());
    let mut input = Vec::new();
    open_input(values)?.read_to_end(&mut input).map_err(|e| format!("{source}: {e}"))?;
    // Check every value before writing anything: a bad line fails the whole
    // run with no partial output. Errors name the line, never the value.
    let text = input.strip_suffix(b"\n").unwrap_or(&input);
    let mut rng: Box<dyn localdp::rng::CryptoRng> = match seed {
        Some(s) => Box::new(SimulationRng::seed_from_u64(s)),
        None => Box::new(SecureRng::new().map_err(|e| e.to_string())?),
    };
    let lines: Vec<&[u8]> = if input.is_empty() { Vec::new() } else { text.split(|&b| b == b'\n').collect() };
    // `user<TAB>value[<TAB>time in ms]`: simulated users, each with their own
    // secret, memos and ledger (the config's memoize and budget apply).
    let users = lines.first().is_some_and(|l| l.contains(&b'\t'));
    let mut clients: std::collections::HashMap<String, localdp::client::Client> = std::collections::HashMap::new();
    let mut refused = 0u64;
    let mut reports = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let at = |e: &dyn std::fmt::Display| format!("{source}: line {}: {e}", i + 1);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = std::str::from_utf8(line).map_err(|_| at(&"not valid UTF-8"))?;
        if !users {
            reports.push(metric.randomize_text(line, &mut &mut *rng).map_err(|e| at(&e))?);
            continue;
        }
        let mut fields = line.split('\t');
        let (user, value, time) = (fields.next().unwrap_or(""), fields.next(), fields.next());
        let value = value.filter(|_| fields.next().is_none()).ok_or_else(|| at(&"expected user<TAB>value[<TAB>time in ms]"))?;
        let now: u64 = time.map_or(Ok(0), str::parse).map_err(|_| at(&"the time must be whole milliseconds"))?;
        let client = match clients.entry(user.to_string()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let secret = localdp::client::new_secret(&mut &mut *rng);
                e.insert(localdp::client::Client::new(&config_text, &secret, None).map_err(|e| at(&e))?)
            }
        };
        match client.randomize_text(value, now, &mut &mut *rng) {
            Ok(report) => reports.push(report),
            Err(Error::PrivacyBudgetExceeded { .. }) => refused += 1,
            Err(e) => return Err(at(&e)),
        }
    }
    if refused > 0 {
        eprintln!("localdp: {refused} reports refused by the privacy budget (nothing written for them)");
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for report in reports {
        writeln!(out, "{}", report.to_json()).map_err(stdout_failed)?;
    }
    out.flush().map_err(stdout_failed)
}

fn aggregate(
    config: &Path,
    post: PostProcessing,
    format: Format,
    strict: bool,
    plot: Option<&Path>,
    quantiles: Option<&str>,
    threads: Option<usize>,
    files: &[PathBuf],
) -> CliResult {
    let metric = load_metric(config)?;
    let quantiles = quantiles.map(parse_quantiles).transpose()?;
    if quantiles.is_some() && metric.family() != "distribution" {
        return Err("--quantiles applies to distribution metrics only".into());
    }
    // A progress line on a terminal; the total is known when reading files.
    let size: Option<u64> = files.iter().map(|f| std::fs::metadata(f).ok().map(|m| m.len())).sum();
    let mut progress = progress::Progress::new(size.filter(|_| !files.is_empty()));
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let plan = inputs::Source::plan(files, threads)?;
    let mut aggregator = inputs::aggregate(&metric, &plan.sources, threads, strict, &mut progress)?;
    // Once per Parquet file: the rejections it was exported with.
    for file in &plan.parquet {
        columnar::add_exported_rejections(&mut aggregator, file, strict)?;
    }
    columnar::print_rejected(aggregator.rejected());
    let estimate = match (aggregator.estimate(post).map_err(|e| e.to_string())?, quantiles) {
        (Estimate::Distribution(e), Some(levels)) => {
            Estimate::Distribution(e.with_quantiles(&levels).map_err(|e| e.to_string())?)
        }
        (estimate, _) => estimate,
    };
    let rendered = match (format, &estimate) {
        (Format::Json, _) => serde_json::to_string_pretty(&estimate).expect("an estimate serializes"),
        (Format::Csv, Estimate::Frequency(e)) => csv(e),
        (Format::Csv, Estimate::Numeric(e)) => numeric_csv(e),
        (Format::Table, Estimate::Frequency(e)) => table(e, None, usize::MAX),
        (Format::Table, Estimate::Numeric(e)) => numeric_table(e, None),
        (Format::Csv, Estimate::Rappor(e)) => candidates_csv(&e.estimates),
        (Format::Table, Estimate::Rappor(e)) => rappor_table(e, None),
        (Format::Csv, Estimate::HeavyHitter(e)) => candidates_csv(e.values()),
        (Format::Table, Estimate::HeavyHitter(e)) => heavy_hitter_table(e),
        (Format::Csv, Estimate::Distribution(e)) => distribution_csv(e),
        (Format::Table, Estimate::Distribution(e)) => distribution_table(e),
        // A family without a table or CSV form yet prints its JSON.
        (_, _) => serde_json::to_string_pretty(&estimate).expect("an estimate serializes"),
    };
    if let Some(path) = plot {
        plot::write(path, &aggregator, &estimate)?;
    }
    say(rendered)
}

/// `--quantiles`: levels in [0, 1] separated by commas.
fn parse_quantiles(text: &str) -> CliResult<Vec<f64>> {
    let levels = text
        .split(',')
        .map(|q| q.trim().parse::<f64>().ok().filter(|q| (0.0..=1.0).contains(q)))
        .collect::<Option<Vec<f64>>>();
    levels.ok_or_else(|| format!("--quantiles must be levels in [0, 1] separated by commas, not {text:?}"))
}

fn audit(config: &Path, samples: u64, confidence: f64, seed: Option<u64>) -> CliResult {
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err("--confidence must be strictly between 0 and 1".into());
    }
    if samples < 2 {
        return Err("--samples must be at least 2".into());
    }
    let metric = load_metric(config)?;
    let mut rng: Box<dyn localdp::rng::CryptoRng> = match seed {
        Some(s) => Box::new(SimulationRng::seed_from_u64(s)),
        None => Box::new(SecureRng::new().map_err(|e| e.to_string())?),
    };
    let result = localdp::audit::audit(&metric, samples, confidence, &mut &mut *rng);
    say(serde_json::to_string_pretty(&result).expect("serializes"))?;
    if let Some(note) = localdp::audit::unused_budget(result.epsilon, result.realized_epsilon) {
        eprintln!("localdp: note: {note}");
    }
    if result.violated() {
        return Err(format!(
            "the realized epsilon is at least {} (confidence {confidence}), above the claimed {}",
            result.epsilon_lower_bound, result.epsilon
        ));
    }
    Ok(())
}

fn privacy(command: PrivacyCommand) -> CliResult {
    let json = match command {
        PrivacyCommand::Compose { delta, reports } => {
            let reports = reports.iter().map(|r| parse_reports(r)).collect::<CliResult<Vec<_>>>()?;
            serde_json::to_string_pretty(&localdp::accounting::compose(&reports, delta).map_err(|e| e.to_string())?)
        }
        PrivacyCommand::Shuffle { epsilon, n, delta, protocol, domain } => {
            let amplification = match (protocol, domain) {
                (Some(ShuffledProtocol::Grr), Some(k)) => {
                    localdp::accounting::shuffle_randomized_response(epsilon, k, n, delta)
                }
                _ => localdp::accounting::shuffle(epsilon, n, delta),
            };
            serde_json::to_string_pretty(&amplification.map_err(|e| e.to_string())?)
        }
    };
    say(json.expect("serializes"))
}

/// `EPSILONxCOUNT` (or `EPSILON`, one report) as `(ε, count)`; the library
/// checks the ranges.
fn parse_reports(text: &str) -> CliResult<(f64, u64)> {
    let (epsilon, count) = text.split_once('x').unwrap_or((text, "1"));
    let bad = || format!("{text:?}: expected EPSILONxCOUNT, such as 0.1x365");
    Ok((epsilon.parse().map_err(|_| bad())?, count.parse().map_err(|_| bad())?))
}

fn simulate(config: &Path, users: u64, seed: u64, top: usize) -> CliResult {
    let metric = load_metric(config)?;
    let mut rng = SimulationRng::seed_from_u64(seed);
    let fail = |e: Error| e.to_string();
    if let Some(oracle) = metric.mechanism::<FrequencyOracle>() {
        let mut aggregator = FrequencyAggregator::new(oracle.clone());
        let population = Population::zipf(oracle.domain().len(), 1.1);
        for _ in 0..users {
            aggregator.add(&oracle.randomize_index(population.sample(&mut rng), &mut rng).map_err(fail)?).map_err(fail)?;
        }
        let estimate = aggregator.estimate().map_err(fail)?;
        say(format_args!(
            "Simulated {users} users with a Zipf(1.1) distribution over {} values (seed {seed}).\n{}",
            oracle.domain().len(),
            table(&estimate, Some(&population.frequencies()), top)
        ))?;
    } else if let Some(numeric) = metric.mechanism::<NumericMetric>() {
        let mut aggregator = NumericAggregator::new(numeric.clone());
        let ranges = numeric.ranges();
        let mut totals = vec![0.0; ranges.len()];
        for _ in 0..users {
            let record = localdp::simulate::bimodal_record(ranges, &mut rng);
            totals.iter_mut().zip(&record).for_each(|(t, x)| *t += x);
            aggregator.add(&numeric.randomize(&record, &mut rng).map_err(fail)?).map_err(fail)?;
        }
        let estimate = aggregator.estimate().map_err(fail)?;
        let truth: Vec<f64> = totals.iter().map(|t| t / users as f64).collect();
        say(format_args!(
            "Simulated {users} users with a bimodal distribution on each range (seed {seed}).\n{}",
            numeric_table(&estimate, Some(&truth))
        ))?;
    } else if let Some(rappor) = metric.mechanism::<RapporMetric>() {
        // Zipf over the candidates; one user in ten holds a value outside them.
        let candidates = rappor.candidates();
        if candidates.is_empty() {
            return Err("simulating RAPPOR needs \"candidates\" in the config".into());
        }
        let mut aggregator = RapporAggregator::new(rappor.clone());
        let population = Population::zipf(candidates.len(), 1.1);
        for u in 0..users {
            let value = if u % 10 == 9 { format!("unlisted-{u}") } else { candidates[population.sample(&mut rng)].clone() };
            aggregator.add(&rappor.randomize(value.as_str(), &mut rng).map_err(fail)?).map_err(fail)?;
        }
        let estimate = aggregator.estimate().map_err(fail)?;
        let truth: Vec<(String, f64)> =
            candidates.iter().cloned().zip(population.frequencies().iter().map(|f| f * 0.9)).collect();
        say(format_args!(
            "Simulated {users} users, Zipf(1.1) over the candidates plus 10% unlisted values (seed {seed}).\n{}",
            rappor_table(&estimate, Some(&truth))
        ))?;
    } else if let Some(distribution) = metric.mechanism::<DistributionMetric>() {
        let mut aggregator = DistributionAggregator::new(distribution.clone());
        let range = distribution.range();
        let mut values = Vec::with_capacity(users as usize);
        for _ in 0..users {
            let x = localdp::simulate::bimodal_record(&[range], &mut rng)[0];
            values.push(x);
            aggregator.add(&distribution.randomize(&x, &mut rng).map_err(fail)?).map_err(fail)?;
        }
        let estimate = aggregator.estimate().map_err(fail)?;
        values.sort_by(f64::total_cmp);
        let truth: Vec<String> = estimate
            .quantiles
            .iter()
            .map(|q| {
                let k = ((q.q * values.len() as f64).ceil() as usize).clamp(1, values.len());
                format!("{} {:.4}", quantile_name(q.q), values[k - 1])
            })
            .collect();
        say(format_args!(
            "Simulated {users} users with a bimodal distribution on the range (seed {seed}).\n{}\n\ntrue quantiles: {}",
            distribution_table(&estimate),
            truth.join(", ")
        ))?;
    } else {
        return Err(format!("simulate does not support {} metrics yet", metric.family()));
    }
    Ok(())
}
