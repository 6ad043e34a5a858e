//! Every error's text, as users read it (CLI stderr, the collector's JSON, JS
//! error messages): pinned byte for byte, so that typed errors keep saying
//! exactly what they said.

mod common;

use localdp::accounting::{compose, shuffle};
use localdp::client::{new_secret, parse_window, Client, ClientState};
use localdp::rng::{Bernoulli, UniformBelow};
use localdp::{
    Aggregator, Domain, DomainKind, Error, ExpectedValue, FrequencyOracle, MergeConflict, Metric, NumericConfig,
    NumericMetric, PostProcessing, Rejection, Requirement, SimulationRng,
};

fn config_error(text: &str) -> Error {
    Metric::from_json(text).unwrap_err()
}

fn aggregator(text: &str) -> Aggregator {
    Aggregator::new(Metric::from_json(text).unwrap())
}

/// A memoizing client whose one stored memo was replaced by `memo`.
fn corrupt_memo(config: &str, value: &str) -> Error {
    let mut rng = SimulationRng::seed_from_u64(7);
    let secret = new_secret(&mut rng);
    let mut client = Client::new(config, &secret, None).unwrap();
    client.randomize_text(value, 0, &mut rng).unwrap();
    let mut state = ClientState::from_bytes(&client.state_bytes()).unwrap();
    for memo in state.memos.values_mut() {
        *memo = vec![0xff];
    }
    let mut client = Client::new(config, &secret, Some(&state.to_bytes())).unwrap();
    client.randomize_text(value, 1, &mut rng).unwrap_err()
}

fn errors() -> Vec<(&'static str, Error)> {
    let mut rng = SimulationRng::seed_from_u64(1);
    let grr = r#"{"protocol":"grr","epsilon":1,"domain":4}"#;
    let labels = r#"{"protocol":"grr","epsilon":1,"domain":["a","b","c"]}"#;
    let duchi = r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#;
    let record = r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[0,1],[0,1]]}"#;
    let rappor = r#"{"protocol":"rappor"}"#;
    let client_error = |config: &str| Client::new(config, &"0".repeat(64), None).unwrap_err();
    let value_error = |config: &str, value: &str| {
        Metric::from_json(config).unwrap().randomize_text(value, &mut SimulationRng::seed_from_u64(1)).unwrap_err()
    };
    let merge_error = |a: &str, b: &str| aggregator(a).merge(&aggregator(b)).unwrap_err();
    let numeric = |epsilon: f64, range: &str, granularity: Option<u64>| {
        let mut config: NumericConfig =
            serde_json::from_str(&format!(r#"{{"protocol":"one_bit_mean","epsilon":{epsilon},"range":{range}}}"#)).unwrap();
        config.granularity = granularity;
        config
    };
    let numeric_error = |config: &NumericConfig| NumericMetric::new(config).unwrap_err();
    let mut budget = Client::new(
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1.5,"window":"1d"}}"#,
        &"0".repeat(64),
        None,
    )
    .unwrap();
    budget.randomize_text("1", 0, &mut rng).unwrap();
    let mut infinite = numeric(1.0, "[0,1]", None);
    infinite.range = localdp::RangeSpec::Vector(vec![[0.0, 1.0], [0.0, f64::INFINITY]]);

    vec![
        // Malformed configurations.
        ("not json", config_error("{")),
        ("not an object", config_error("[1]")),
        ("protocol not a string", config_error(r#"{"protocol":1,"epsilon":1,"domain":4}"#)),
        ("missing protocol", config_error(r#"{"epsilon":1,"domain":4}"#)),
        ("missing protocol, range", config_error(r#"{"epsilon":1,"range":[0,1]}"#)),
        ("unknown frequency protocol", config_error(r#"{"protocol":"nope","epsilon":1,"domain":4}"#)),
        ("unknown numeric protocol", config_error(r#"{"protocol":"grr","epsilon":1,"range":[0,1]}"#)),
        ("unknown rappor protocol", config_error(r#"{"protocol":"nope","cohorts":4}"#)),
        ("epsilon not a number", config_error(r#"{"protocol":"grr","epsilon":"1","domain":4}"#)),
        ("serde frequency", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"x":1}"#)),
        ("serde frequency domain", config_error(r#"{"protocol":"grr","epsilon":1,"domain":true}"#)),
        ("serde numeric", config_error(r#"{"protocol":"duchi","epsilon":1,"range":[0,1,2]}"#)),
        ("serde rappor", config_error(r#"{"protocol":"rappor","bits":"many"}"#)),
        ("serde sketch", config_error(r#"{"protocol":"hcms","epsilon":1,"sketch":{"rows":1}}"#)),
        ("serde negative", config_error(r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":-1}"#)),
        ("oracle from_json", FrequencyOracle::from_json(r#"{"protocol":"grr"}"#).unwrap_err()),
        ("numeric from_json", NumericMetric::from_json(r#"{"protocol":"duchi"}"#).unwrap_err()),
        ("memoize not a bool", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"memoize":1}"#)),
        ("budget not an object", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":1}"#)),
        ("budget without epsilon", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{}}"#)),
        ("budget without window", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1}}"#)),
        (
            "budget extra key",
            config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1d","x":1}}"#),
        ),
        ("client config not an object", Client::new("[1]", &"0".repeat(64), None).unwrap_err()),
        (
            "instantaneous_epsilon not a number",
            config_error(r#"{"protocol":"grr","epsilon":2,"domain":4,"memoize":true,"instantaneous_epsilon":"1"}"#),
        ),
        // Invalid configurations.
        ("epsilon 0", config_error(r#"{"protocol":"grr","epsilon":0,"domain":4}"#)),
        ("epsilon -1.5", config_error(r#"{"protocol":"grr","epsilon":-1.5,"domain":4}"#)),
        ("frequency epsilon range", config_error(r#"{"protocol":"grr","epsilon":31,"domain":4}"#)),
        ("numeric epsilon range", config_error(r#"{"protocol":"duchi","epsilon":0.001,"range":[0,1]}"#)),
        ("domain size 1", config_error(r#"{"protocol":"grr","epsilon":1,"domain":1}"#)),
        ("domain size huge", config_error(r#"{"protocol":"grr","epsilon":1,"domain":99999999999999999}"#)),
        ("one label", config_error(r#"{"protocol":"grr","epsilon":1,"domain":["a"]}"#)),
        ("repeated label", config_error(r#"{"protocol":"grr","epsilon":1,"domain":["a","b","a"]}"#)),
        ("Domain::size", Domain::size(0).unwrap_err()),
        ("d not for grr", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"d":2}"#)),
        ("d not for auto", config_error(r#"{"protocol":"auto","epsilon":1,"domain":4,"d":2}"#)),
        ("d 0", config_error(r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":0}"#)),
        ("d 5", config_error(r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":5}"#)),
        ("empty range list", config_error(r#"{"protocol":"duchi","epsilon":1,"range":[]}"#)),
        ("empty range", config_error(r#"{"protocol":"duchi","epsilon":1,"range":[2,1.5]}"#)),
        ("empty range[1]", config_error(r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[1,1]]}"#)),
        ("huge range", config_error(r#"{"protocol":"duchi","epsilon":1,"range":[-1e308,1e308]}"#)),
        ("infinite range[1]", numeric_error(&infinite)),
        ("granularity 0", numeric_error(&numeric(1.0, "[0,1]", Some(0)))),
        ("granularity huge", numeric_error(&numeric(1.0, "[0,1]", Some(1 << 21)))),
        ("grid steps", NumericMetric::with_grid_steps(&numeric(1.0, "[0,1]", None), 1).unwrap_err()),
        ("rappor bits", config_error(r#"{"protocol":"rappor","bits":0}"#)),
        ("rappor hashes", config_error(r#"{"protocol":"rappor","bits":8,"hashes":9}"#)),
        ("rappor cohorts", config_error(r#"{"protocol":"rappor","cohorts":2000}"#)),
        ("hcms cells", config_error(r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":65,"width":65536}}"#)),
        ("sfp hashes", config_error(r#"{"protocol":"sfp","epsilon":1,"max_length":4,"sketch":{"hashes":257,"width":16}}"#)),
        ("sfp cells", config_error(r#"{"protocol":"sfp","epsilon":1,"max_length":64,"sketch":{"hashes":2,"width":65536}}"#)),
        ("sketch width", config_error(r#"{"protocol":"cms","epsilon":1,"sketch":{"width":24}}"#)),
        ("top 101", config_error(r#"{"protocol":"pem","epsilon":1,"top":101}"#)),
        ("rappor f", config_error(r#"{"protocol":"rappor","f":1}"#)),
        ("rappor p q", config_error(r#"{"protocol":"rappor","p":0.8,"q":0.7}"#)),
        ("rappor candidates", config_error(r#"{"protocol":"rappor","candidates":["a","a"]}"#)),
        ("rappor small f", config_error(r#"{"protocol":"rappor","f":1e-300}"#)),
        ("budget epsilon", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":-2,"window":"1d"}}"#)),
        ("budget window", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"soon"}}"#)),
        ("budget delta", config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"delta":1,"window":"1d"}}"#)),
        (
            "budget delta not a number",
            config_error(r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"delta":null,"window":"1d"}}"#),
        ),
        ("parse_window empty", parse_window("").unwrap_err()),
        ("parse_window 0d", parse_window("0d").unwrap_err()),
        ("parse_window 1日", parse_window("1日").unwrap_err()),
        ("client secret", Client::new(grr, "abc", None).unwrap_err()),
        ("memoize duchi", client_error(r#"{"protocol":"duchi","epsilon":1,"range":[0,1],"memoize":true}"#)),
        ("memoize laplace", client_error(r#"{"protocol":"laplace","epsilon":1,"range":[0,1],"memoize":true}"#)),
        (
            "memoize one_bit_mean record",
            client_error(r#"{"protocol":"one_bit_mean","epsilon":1,"range":[[0,1],[0,1]],"memoize":true}"#),
        ),
        ("instantaneous_epsilon unmemoized", config_error(r#"{"protocol":"grr","epsilon":2,"domain":4,"instantaneous_epsilon":1}"#)),
        (
            "instantaneous_epsilon = epsilon",
            config_error(r#"{"protocol":"grr","epsilon":2,"domain":4,"memoize":true,"instantaneous_epsilon":2}"#),
        ),
        (
            "instantaneous_epsilon 0",
            config_error(r#"{"protocol":"oue","epsilon":2,"domain":4,"memoize":true,"instantaneous_epsilon":0}"#),
        ),
        (
            "instantaneous_epsilon for hr",
            config_error(r#"{"protocol":"hr","epsilon":2,"domain":4,"memoize":true,"instantaneous_epsilon":1}"#),
        ),
        (
            "instantaneous_epsilon for one_bit_mean",
            client_error(r#"{"protocol":"one_bit_mean","epsilon":2,"range":[0,1],"memoize":true,"instantaneous_epsilon":1}"#),
        ),
        ("instantaneous_epsilon for rappor", config_error(r#"{"protocol":"rappor","instantaneous_epsilon":1}"#)),
        ("uniform below 0", UniformBelow::new(0).unwrap_err()),
        ("bernoulli 1.5", Bernoulli::rounded_up(1.5).unwrap_err()),
        ("bernoulli NaN", Bernoulli::rounded_up(f64::NAN).unwrap_err()),
        ("bernoulli -0.25", Bernoulli::rounded_up(-0.25).unwrap_err()),
        ("post for numeric", {
            let mut a = aggregator(duchi);
            a.add(&Metric::from_json(duchi).unwrap().randomize_text("0.5", &mut rng).unwrap()).unwrap();
            a.estimate(PostProcessing::Project).map(drop).unwrap_err()
        }),
        ("epsilon NaN", {
            let mut config: localdp::FrequencyConfig = serde_json::from_str(grr).unwrap();
            config.epsilon = f64::NAN;
            FrequencyOracle::new(&config).unwrap_err()
        }),
        ("rappor candidates missing", {
            let mut a = aggregator(rappor);
            let report = Metric::from_json(rappor).unwrap().randomize_text("x", &mut rng).unwrap();
            a.add(&report).unwrap();
            a.estimate(PostProcessing::None).map(drop).unwrap_err()
        }),
        // Values.
        ("value not in sized domain", value_error(grr, "7")),
        ("value not a sized-domain integer", value_error(grr, "secret")),
        ("value not a label", value_error(labels, "secret")),
        (
            "index outside the domain",
            FrequencyOracle::from_json(grr).unwrap().randomize_index(9, &mut rng).unwrap_err(),
        ),
        ("not a number", value_error(duchi, "fast")),
        ("not finite", value_error(duchi, "NaN")),
        ("record of 2", value_error(record, "1,2")),
        ("one of 3", value_error(duchi, "1,2,3")),
        ("memoized one_bit_mean record", {
            let config = r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1],"memoize":true}"#;
            Client::new(config, &"0".repeat(64), None).unwrap().randomize_text("1,2", 0, &mut rng).unwrap_err()
        }),
        ("memoized one_bit_mean inf", {
            let config = r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1],"memoize":true}"#;
            Client::new(config, &"0".repeat(64), None).unwrap().randomize_text("inf", 0, &mut rng).unwrap_err()
        }),
        // Budgets, merges, estimates, memos.
        ("budget exceeded", budget.randomize_text("2", 1000, &mut rng).unwrap_err()),
        ("merge frequency", merge_error(grr, r#"{"protocol":"grr","epsilon":2,"domain":4}"#)),
        ("merge numeric", merge_error(duchi, r#"{"protocol":"duchi","epsilon":1,"range":[0,2]}"#)),
        ("merge rappor", merge_error(rappor, r#"{"protocol":"rappor","cohorts":8}"#)),
        ("merge families", merge_error(grr, duchi)),
        ("no reports", aggregator(grr).estimate(PostProcessing::None).map(drop).unwrap_err()),
        ("no reports numeric", aggregator(duchi).estimate(PostProcessing::None).map(drop).unwrap_err()),
        ("no reports rappor", aggregator(rappor).estimate(PostProcessing::None).map(drop).unwrap_err()),
        ("corrupt frequency memo", corrupt_memo(r#"{"protocol":"oue","epsilon":1,"domain":4,"memoize":true}"#, "1")),
        (
            "corrupt numeric memo",
            corrupt_memo(r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1],"memoize":true}"#, "0.5"),
        ),
        ("corrupt rappor memo", corrupt_memo(rappor, "x")),
        ("rejected", aggregator(grr).add_json("junk").unwrap_err()),
        ("state", Aggregator::from_bytes(Metric::from_json(grr).unwrap(), b"LDPS").map(drop).unwrap_err()),
        ("Error::NoReports", Error::NoReports),
        ("compose delta 0", compose(&[(0.1, 3)], 0.0).unwrap_err()),
        ("compose count 0", compose(&[(0.1, 0)], 1e-6).unwrap_err()),
        ("compose nothing", compose(&[], 1e-6).unwrap_err()),
        ("compose support", compose(&[(0.1, 3999), (0.2, 3999)], 1e-6).unwrap_err()),
        ("shuffle n 0", shuffle(4.0, 0, 1e-6).unwrap_err()),
    ]
}

/// Each case's exact text; a text ending in `…` is a prefix (the rest is
/// serde_json's own wording).
const TEXTS: &[(&str, &str)] = &[
    ("not json", "malformed configuration: not JSON: …"),
    ("not an object", "malformed configuration: a configuration must be a JSON object"),
    ("protocol not a string", r#"malformed configuration: "protocol" must be a string"#),
    ("missing protocol", r#"malformed configuration: missing "protocol" (one of grr, sue, oue, blh, olh, hr, hrr, ss, dbitflip, auto)"#),
    ("missing protocol, range", r#"malformed configuration: missing "protocol" (one of duchi, laplace, piecewise, hybrid, one_bit_mean, auto)"#),
    ("unknown frequency protocol", r#"malformed configuration: "protocol" of a frequency ("domain") metric must be one of grr, sue, oue, blh, olh, hr, hrr, ss, dbitflip, auto"#),
    ("unknown numeric protocol", r#"malformed configuration: "protocol" of a numeric ("range") metric must be one of duchi, laplace, piecewise, hybrid, one_bit_mean, auto"#),
    ("unknown rappor protocol", r#"malformed configuration: "protocol" of a RAPPOR metric must be one of rappor"#),
    ("epsilon not a number", r#"malformed configuration: "epsilon" must be a number"#),
    ("serde frequency", "malformed configuration: unknown field `x`, expected one of `protocol`, `epsilon`, `domain`, `d`, `instantaneous_epsilon`, `memoize`, `budget`"),
    ("serde frequency domain", "malformed configuration: domain is missing, or is neither a size (a whole number) nor a list of strings"),
    ("serde numeric", "malformed configuration: range must be [lo, hi] (two numbers) or a list of such pairs, one per attribute"),
    ("serde rappor", r#"malformed configuration: invalid type: string "many", expected u64"#),
    ("serde sketch", "malformed configuration: unknown field `rows`, expected one of `hashes`, `width`"),
    ("serde negative", "malformed configuration: invalid value: integer `-1`, expected u64"),
    ("oracle from_json", "malformed configuration: missing field `epsilon`"),
    ("numeric from_json", "malformed configuration: missing field `epsilon`"),
    ("memoize not a bool", r#"malformed configuration: "memoize" must be true or false"#),
    ("budget not an object", r#"malformed configuration: "budget" must be an object"#),
    ("budget without epsilon", r#"malformed configuration: "budget" needs "epsilon" (a number) and "window" (e.g. "1d")"#),
    ("budget without window", r#"malformed configuration: "budget" needs "window", e.g. "1d", "12h", "30m""#),
    ("budget extra key", r#"malformed configuration: "budget" takes only "epsilon", "window" and "delta""#),
    ("client config not an object", "malformed configuration: a configuration must be a JSON object"),
    ("instantaneous_epsilon not a number", r#"malformed configuration: "instantaneous_epsilon" must be a number"#),
    ("epsilon 0", "invalid configuration: epsilon must be a finite number > 0, got 0.0"),
    ("epsilon -1.5", "invalid configuration: epsilon must be a finite number > 0, got -1.5"),
    ("frequency epsilon range", "invalid configuration: epsilon of a frequency metric must be in [0.01, 30.0], got 31.0"),
    ("numeric epsilon range", "invalid configuration: epsilon of a numeric metric must be in [0.01, 30.0], got 0.001"),
    ("domain size 1", "invalid configuration: domain size must be between 2 and 4194304, got 1"),
    ("domain size huge", "invalid configuration: domain size must be between 2 and 4194304, got 99999999999999999"),
    ("one label", "invalid configuration: a domain needs between 2 and 4194304 labels, got 1"),
    ("repeated label", "invalid configuration: domain labels must be distinct (label #2 repeats an earlier one)"),
    ("Domain::size", "invalid configuration: domain size must be between 2 and 4194304, got 0"),
    ("d not for grr", r#"invalid configuration: "d" does not apply to grr"#),
    ("d not for auto", r#"invalid configuration: "d" does not apply to grr"#),
    ("d 0", "invalid configuration: d must be in 1..=4 (the domain's size)"),
    ("d 5", "invalid configuration: d must be in 1..=4 (the domain's size)"),
    ("empty range list", "invalid configuration: range must list at least one attribute"),
    ("empty range", "invalid configuration: range is empty: lo 2.0 must be below hi 1.5"),
    ("empty range[1]", "invalid configuration: range[1] is empty: lo 1.0 must be below hi 1.0"),
    ("huge range", "invalid configuration: range is empty: lo -1e+308 must be below hi 1e+308"),
    ("infinite range[1]", "invalid configuration: range[1] must hold two finite numbers"),
    ("granularity 0", r#"invalid configuration: "granularity" must be an integer in 1..=1048576"#),
    ("granularity huge", r#"invalid configuration: "granularity" must be an integer in 1..=1048576"#),
    ("grid steps", "invalid configuration: a grid needs at least 2 steps"),
    ("rappor bits", "invalid configuration: bits must be in 1..=4096"),
    ("rappor hashes", "invalid configuration: hashes must be in 1..=min(bits, 64)"),
    ("rappor cohorts", "invalid configuration: cohorts must be in 1..=1024"),
    ("hcms cells", "invalid configuration: sketch.hashes must be in 1..=64"),
    ("sfp hashes", "invalid configuration: sketch.hashes must be in 1..=256"),
    ("sfp cells", "invalid configuration: sketch.width must be in 2..=64527"),
    ("sketch width", "invalid configuration: sketch.width must be a power of two in 2..=65536"),
    ("top 101", "invalid configuration: top must be in 1..=100"),
    ("rappor f", "invalid configuration: f must be in (0, 1)"),
    ("rappor p q", "invalid configuration: p and q must satisfy 0 ≤ p < q ≤ 1"),
    ("rappor candidates", "invalid configuration: candidates must be distinct"),
    ("rappor small f", "invalid configuration: f is too small: the long-run epsilon exceeds 60"),
    ("budget epsilon", "invalid configuration: budget epsilon must be > 0, got -2.0"),
    ("budget window", r#"invalid configuration: budget window must be a whole number of s, m, h or d, e.g. "1d""#),
    ("budget delta", "invalid configuration: budget delta must be in (1e-200, 1)"),
    ("budget delta not a number", r#"malformed configuration: "budget.delta" must be a number in (1e-200, 1)"#),
    ("parse_window empty", r#"invalid configuration: budget window must be a whole number of s, m, h or d, e.g. "1d""#),
    ("parse_window 0d", r#"invalid configuration: budget window must be a whole number of s, m, h or d, e.g. "1d""#),
    ("parse_window 1日", r#"invalid configuration: budget window must be a whole number of s, m, h or d, e.g. "1d""#),
    ("client secret", "invalid configuration: the client secret must be 64 hex digits"),
    ("memoize duchi", "invalid configuration: memoize applies to a numeric metric only through one_bit_mean of one number, not duchi"),
    ("memoize laplace", "invalid configuration: memoize applies to a numeric metric only through one_bit_mean of one number, not laplace"),
    (
        "memoize one_bit_mean record",
        "invalid configuration: memoize applies to a numeric metric only through one_bit_mean of one number, not one_bit_mean",
    ),
    ("instantaneous_epsilon unmemoized", r#"invalid configuration: "instantaneous_epsilon" applies to memoized metrics ("memoize": true) only"#),
    ("instantaneous_epsilon = epsilon", "invalid configuration: instantaneous_epsilon must be in (0.01, 2)"),
    ("instantaneous_epsilon 0", "invalid configuration: instantaneous_epsilon must be in (0.01, 2)"),
    ("instantaneous_epsilon for hr", r#"invalid configuration: "instantaneous_epsilon" does not apply to hr"#),
    ("instantaneous_epsilon for one_bit_mean", r#"invalid configuration: "instantaneous_epsilon" does not apply to one_bit_mean"#),
    ("instantaneous_epsilon for rappor", r#"invalid configuration: "instantaneous_epsilon" does not apply to rappor"#),
    ("uniform below 0", "invalid configuration: a uniform draw needs a non-empty range"),
    ("bernoulli 1.5", "invalid configuration: probability 1.5 is outside [0, 1]"),
    ("bernoulli NaN", "invalid configuration: probability NaN is outside [0, 1]"),
    ("bernoulli -0.25", "invalid configuration: probability -0.25 is outside [0, 1]"),
    ("post for numeric", "invalid configuration: post-processing applies to frequency estimates only"),
    ("epsilon NaN", "invalid configuration: epsilon must be a finite number > 0, got NaN"),
    ("rappor candidates missing", r#"invalid configuration: RAPPOR decoding needs "candidates" in the config"#),
    ("value not in sized domain", "value is not in the domain (expected an integer in 0..4)"),
    ("value not a sized-domain integer", "value is not in the domain (expected an integer in 0..4)"),
    ("value not a label", "value is not in the domain (not one of the 3 labels)"),
    ("index outside the domain", "value is not in the domain (expected an index below 4)"),
    ("not a number", "invalid value: not a number"),
    ("not finite", "invalid value: a value must be a finite number"),
    ("record of 2", "invalid value: expected 3 numbers, got 2"),
    ("one of 3", "invalid value: expected 1 number, got 3"),
    ("memoized one_bit_mean record", "invalid value: expected 1 finite number"),
    ("memoized one_bit_mean inf", "invalid value: expected 1 finite number"),
    ("budget exceeded", "privacy budget exceeded: this report would spend 1.0 more, with 1.0 of 1.5 spent in the window"),
    ("merge frequency", "cannot merge aggregators: the aggregators have different configurations"),
    ("merge numeric", "cannot merge aggregators: the aggregators have different configurations"),
    ("merge rappor", "cannot merge aggregators: the aggregators have different configurations"),
    ("merge families", "cannot merge aggregators: aggregators of different kinds of metric"),
    ("no reports", "no accepted reports to estimate from"),
    ("no reports numeric", "no accepted reports to estimate from"),
    ("no reports rappor", "no accepted reports to estimate from"),
    ("corrupt frequency memo", "invalid configuration: a stored memo is corrupt"),
    ("corrupt numeric memo", "invalid configuration: a stored memo is corrupt"),
    ("corrupt rappor memo", "invalid configuration: a stored memo is corrupt"),
    ("rejected", "report rejected (malformed): not a report: …"),
    ("state", "invalid aggregator state: the state is truncated"),
    ("Error::NoReports", "no accepted reports to estimate from"),
    ("compose delta 0", "invalid configuration: delta must be in (1e-200, 1)"),
    ("compose count 0", "invalid configuration: a count must be at least 1"),
    ("compose nothing", "invalid configuration: reports must not be empty"),
    ("compose support", "invalid configuration: the privacy loss takes 16000000 values, more than the 10000000 the exact accountant enumerates"),
    ("shuffle n 0", "invalid configuration: n must be in 1..=54598150 (at most a million times e^epsilon)"),
];

#[test]
fn every_message_is_unchanged() {
    let errors = errors();
    assert_eq!(errors.len(), TEXTS.len());
    for ((case, error), (expected_case, expected)) in errors.iter().zip(TEXTS) {
        assert_eq!(case, expected_case);
        let text = error.to_string();
        match expected.strip_suffix('…') {
            Some(prefix) => assert!(text.starts_with(prefix), "{case}: {text}"),
            None => assert_eq!(&text, expected, "{case}"),
        }
    }
}

#[test]
fn errors_carry_their_numbers_and_names_as_fields() {
    let errors = errors();
    let error = |case: &str| errors.iter().find(|(c, _)| *c == case).map(|(_, e)| e.clone()).unwrap();
    let invalid = |parameter, requirement| Error::InvalidConfig { parameter, requirement };
    assert_eq!(error("budget exceeded"), Error::PrivacyBudgetExceeded { cost: 1.0, spent: 1.0, budget: 1.5 });
    assert_eq!(
        error("frequency epsilon range"),
        invalid("epsilon", Requirement::Range { min: 0.01, max: 30.0, found: 31.0, metric: Some("frequency") })
    );
    assert_eq!(error("epsilon -1.5"), invalid("epsilon", Requirement::Positive { found: -1.5 }));
    assert_eq!(error("budget epsilon"), invalid("budget.epsilon", Requirement::Positive { found: -2.0 }));
    let delta_range = |found| Requirement::ExclusiveRange { min: 1e-200, max: 1.0, found };
    assert_eq!(error("budget delta"), invalid("budget.delta", delta_range(1.0)));
    assert!(matches!(error("budget delta not a number"), Error::MalformedConfig { key: Some(k), .. } if k == "budget.delta"));
    let integers = |min, max, found| Requirement::IntegerRange { min, max, found };
    assert_eq!(error("domain size 1"), invalid("domain", integers(2, 1 << 22, 1)));
    assert_eq!(error("one label"), invalid("domain", Requirement::Length { min: 2, max: 1 << 22, found: 1 }));
    assert_eq!(error("repeated label"), invalid("domain", Requirement::Distinct { repeated: 2 }));
    assert_eq!(error("rappor candidates"), invalid("candidates", Requirement::Distinct { repeated: 1 }));
    assert_eq!(error("d 5"), invalid("d", integers(1, 4, 5)));
    assert_eq!(error("rappor hashes"), invalid("hashes", integers(1, 8, 9)));
    assert_eq!(error("hcms cells"), invalid("sketch.hashes", integers(1, 64, 65)));
    assert_eq!(error("sfp hashes"), invalid("sketch.hashes", integers(1, 256, 257)));
    assert_eq!(error("sfp cells"), invalid("sketch.width", integers(2, (1 << 22) / 65, 65536)));
    assert_eq!(error("top 101"), invalid("top", integers(1, 100, 101)));
    assert_eq!(error("granularity huge"), invalid("granularity", integers(1, 1 << 20, 1 << 21)));
    let key = |case| match error(case) {
        Error::MalformedConfig { key, .. } => key,
        other => panic!("{case}: {other:?}"),
    };
    assert_eq!(key("serde frequency").as_deref(), Some("x"));
    assert_eq!(key("serde rappor").as_deref(), Some("bits"));
    assert_eq!(key("serde sketch").as_deref(), Some("sketch.rows"));
    assert_eq!(key("oracle from_json").as_deref(), Some("epsilon"));
    assert_eq!(key("serde numeric").as_deref(), Some("range"));
    let only_for = |protocol| Requirement::OnlyFor { protocol };
    assert_eq!(error("post for numeric"), invalid("post", only_for("frequency")));
    assert_eq!(error("empty range list"), invalid("range", Requirement::NonEmpty));
    assert_eq!(error("infinite range[1]"), invalid("range", Requirement::FiniteBounds { attribute: Some(1) }));
    assert_eq!(
        error("empty range[1]"),
        invalid("range", Requirement::NonEmptyRange { attribute: Some(1), lo: 1.0, hi: 1.0 })
    );
    assert_eq!(
        error("empty range"),
        invalid("range", Requirement::NonEmptyRange { attribute: None, lo: 2.0, hi: 1.5 })
    );
    assert_eq!(error("bernoulli 1.5"), invalid("probability", Requirement::Probability { found: 1.5 }));
    assert_eq!(error("client secret"), invalid("secret", Requirement::Format { expected: "64 hex digits" }));
    let parts = |case| match error(case) {
        Error::InvalidConfig { parameter, requirement } => (parameter, requirement),
        other => panic!("{case}: {other:?}"),
    };
    assert!(matches!(parts("budget window"), ("budget.window", Requirement::Format { .. })));
    assert!(matches!(parts("rappor small f"), ("f", Requirement::LongRunEpsilon { max: 60.0, found }) if found > 60.0));
    assert!(matches!(parts("rappor candidates missing"), ("candidates", Requirement::Required { .. })));
    let step = "instantaneous_epsilon";
    assert_eq!(
        error("instantaneous_epsilon = epsilon"),
        invalid(step, Requirement::ExclusiveRange { min: 0.01, max: 2.0, found: 2.0 })
    );
    let memoized = "memoized metrics (\"memoize\": true)";
    assert_eq!(error("instantaneous_epsilon unmemoized"), invalid(step, only_for(memoized)));
    assert!(matches!(error("instantaneous_epsilon not a number"), Error::MalformedConfig { key: Some(k), .. } if k == step));
    for (case, parameter, protocol) in [
        ("d not for grr", "d", "grr"),
        ("memoize duchi", "memoize", "duchi"),
        ("instantaneous_epsilon for hr", step, "hr"),
        ("instantaneous_epsilon for one_bit_mean", step, "one_bit_mean"),
        ("instantaneous_epsilon for rappor", step, "rappor"),
    ] {
        let (p, Requirement::NotFor { protocol: resolved }) = parts(case) else { panic!("{case}") };
        assert_eq!((p, resolved.name()), (parameter, protocol));
    }

    assert_eq!(error("value not a label"), Error::ValueNotInDomain { domain: DomainKind::Labels(3) });
    assert_eq!(error("value not in sized domain"), Error::ValueNotInDomain { domain: DomainKind::Size(4) });
    assert_eq!(error("index outside the domain"), Error::ValueNotInDomain { domain: DomainKind::Indices(4) });
    let expected = ExpectedValue::Numbers { count: 3, found: 2 };
    assert_eq!(error("record of 2"), Error::InvalidValue { expected });
    assert_eq!(error("not a number"), Error::InvalidValue { expected: ExpectedValue::Number });

    assert!(matches!(error("memoize not a bool"), Error::MalformedConfig { key: Some(k), .. } if k == "memoize"));
    assert!(matches!(error("missing protocol"), Error::MalformedConfig { key: Some(k), .. } if k == "protocol"));
    assert!(matches!(error("not an object"), Error::MalformedConfig { key: None, .. }));

    let Error::MergeMismatch { ours, theirs, conflict } = error("merge families") else { panic!() };
    assert!(ours.starts_with("grr:1.0:") && theirs.starts_with("duchi:1.0:"), "{ours} {theirs}");
    assert_eq!(conflict, MergeConflict::Kind);
    let Error::MergeMismatch { ours, theirs, conflict } = error("merge frequency") else { panic!() };
    let id = |config: &str| Metric::from_json(config).unwrap().id();
    let grr2 = r#"{"protocol":"grr","epsilon":2,"domain":4}"#;
    assert_eq!((ours, theirs), (id(r#"{"protocol":"grr","epsilon":1,"domain":4}"#), id(grr2)));
    assert_eq!(conflict, MergeConflict::Configuration);

    for case in ["corrupt frequency memo", "corrupt numeric memo", "corrupt rappor memo"] {
        assert_eq!(error(case), Error::CorruptMemo, "{case}");
    }
    assert!(matches!(error("rejected"), Error::Rejected { reason: Rejection::Malformed, .. }));
}

/// The hand-written config readers' errors, as the wasm build gives them too
/// (`tests/wasm.rs` runs the same checks on JS objects).
#[test]
fn config_errors_read_the_same() {
    common::readers::config_errors_read_the_same();
}

/// GRR's page reads its config's shape itself (js/raw.mjs) and writes the
/// core's texts for what is malformed: each is the core's, as the core
/// writes it, in that file (the families test holds the two to the same
/// answers on configs; this holds the texts a config there rarely reaches).
#[test]
fn the_grr_bindings_write_the_cores_texts() {
    let bindings = include_str!("../js/raw.mjs");
    let grr = r#""protocol":"grr","epsilon":1,"domain":4"#;
    for fields in [
        r#""memoize":1"#,
        r#""budget":[]"#,
        r#""budget":{"window":"1d"}"#,
        r#""budget":{"epsilon":1}"#,
        r#""budget":{"epsilon":1,"window":"1d","x":0}"#,
        r#""budget":{"epsilon":1,"window":"1d","delta":"x"}"#,
        r#""instantaneous_epsilon":"x""#,
        r#""domain":"x""#,
    ] {
        let Error::MalformedConfig { detail, .. } = config_error(&["{", grr, ",", fields, "}"].concat()) else { panic!("{fields}") };
        assert!(bindings.contains(&["'", &detail, "'"].concat()), "{detail}");
    }
    for (config, detail) in [(r#"{"protocol":"grr","epsilon":"x","domain":4}"#, "\"epsilon\" must be a number"),
        (r#"{"protocol":"grr","domain":4}"#, "missing field `epsilon`"),
        (r#"{"protocol":1,"epsilon":1,"domain":4}"#, "\"protocol\" must be a string")] {
        assert!(matches!(config_error(config), Error::MalformedConfig { detail: ref d, .. } if d == detail), "{config}");
        assert!(bindings.contains(&["'", detail, "'"].concat()), "{detail}");
    }
    // The keys an unknown key's text lists, in the core's order.
    let Error::MalformedConfig { detail, .. } = config_error(&["{", grr, r#","zeta":1}"#].concat()) else { panic!() };
    let keys: Vec<&str> = detail.split("expected one of ").nth(1).unwrap().split(", ").map(|k| k.trim_matches('`')).collect();
    let list = ["const KEYS = ['", &keys.join("', '"), "'];"].concat();
    assert!(bindings.contains(&list), "{list}");
}
