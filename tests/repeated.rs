//! Repeated collection: the averaging attack with and without memoization,
//! the ledger, persistence and resets.

mod common;

use localdp::accounting::compose;
use localdp::client::{new_secret, Client, ClientState, MEMO_REPORTS, PAID_OFF, STATE_VERSION};
use localdp::rappor::RapporMetric;
use localdp::report::{Payload, Report};
use localdp::{Aggregate, Error, FrequencyOracle, Metric, NumericAggregator, NumericMetric, SimulationRng};

const DAY: u64 = 86_400_000;
const HOUR: u64 = 3_600_000;

fn client(config: &str, rng: &mut SimulationRng) -> Client {
    Client::new(config, &new_secret(rng), None).unwrap()
}

/// Each of `users` users holds a bit and reports it `reports` times; the
/// attacker takes the majority of each user's reports. Returns the share of
/// users whose bit the attacker recovers.
fn majority_attack(config: &str, users: usize, reports: usize, seed: u64) -> f64 {
    let mut rng = SimulationRng::seed_from_u64(seed);
    let mut right = 0;
    for u in 0..users {
        let truth = u % 2;
        let mut c = client(config, &mut rng);
        let ones = (0..reports)
            .filter(|_| {
                let r = c.randomize_text(&truth.to_string(), 0, &mut rng).unwrap();
                matches!(r.payload, Payload::Index(1))
            })
            .count();
        right += usize::from((2 * ones > reports) == (truth == 1));
    }
    right as f64 / users as f64
}

#[test]
fn memoization_defeats_the_averaging_attack() {
    let (users, reports) = (2000, 301);
    let fresh = majority_attack(r#"{"protocol":"grr","epsilon":1,"domain":2}"#, users, reports, 1);
    let memo = majority_attack(r#"{"protocol":"grr","epsilon":1,"domain":2,"memoize":true}"#, users, reports, 2);
    // One report of randomized response at ε = 1 is right with p* ≈ e/(e+1).
    let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":2}"#).unwrap();
    let Some(o) = metric.mechanism::<FrequencyOracle>() else { unreachable!() };
    let p = o.support_probabilities().0;
    let tolerance = common::z_critical(1e-6, 1) * (p * (1.0 - p) / users as f64).sqrt();
    println!("majority vote over {reports} reports: fresh {fresh:.4}, memoized {memo:.4} (one report: {p:.4} ± {tolerance:.4})");
    assert!(fresh > 0.999, "without memoization the attack should win: {fresh}");
    assert!((memo - p).abs() < tolerance, "with memoization no better than one report: {memo} vs {p}");
}

#[test]
fn memo_keys_reveal_nothing_and_differ_per_install() {
    let config = r#"{"protocol":"oue","epsilon":1,"domain":["secret-label-xyz","other"],"memoize":true}"#;
    let mut rng = SimulationRng::seed_from_u64(3);
    let (mut a, mut b) = (client(config, &mut rng), client(config, &mut rng));
    let first = a.randomize_text("secret-label-xyz", 0, &mut rng).unwrap();
    for _ in 0..20 {
        assert_eq!(a.randomize_text("secret-label-xyz", 0, &mut rng).unwrap(), first, "a memo hit resends the report");
    }
    b.randomize_text("secret-label-xyz", 0, &mut rng).unwrap();
    let (sa, sb) = (common::legacy_state(&a), common::legacy_state(&b));
    assert!(!String::from_utf8_lossy(&a.state_bytes()).contains("secret-label-xyz") && !sa.to_string().contains("\"0\""), "{sa}");
    let key = |s: &serde_json::Value| s["memos"].as_object().unwrap().keys().next().unwrap().clone();
    assert_ne!(key(&sa), key(&sb), "keys are per-install");
}

#[test]
fn the_ledger_refuses_beyond_the_budget_and_rolls_over() {
    let mut rng = SimulationRng::seed_from_u64(4);
    let config = r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":2.5,"window":"1d"}}"#;
    let mut c = client(config, &mut rng);
    let t0 = 1_700_000_000_000;
    c.randomize_text("1", t0, &mut rng).unwrap();
    c.randomize_text("1", t0 + 1000, &mut rng).unwrap();
    assert!(matches!(c.randomize_text("1", t0 + 2000, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    assert_eq!(c.spent(t0 + 2000), 2.0, "a refused report spends nothing");
    assert!(matches!(c.randomize_text("2", t0 + DAY - 1, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    c.randomize_text("1", t0 + DAY, &mut rng).expect("the first report left the window");
    assert!(matches!(c.randomize_text("1", t0 + DAY + 10, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    c.randomize_text("3", t0 + DAY + 1000, &mut rng).expect("the second left too");

    // Memoized: an unchanged value costs nothing more; a changed one costs again.
    let config = r#"{"protocol":"olh","epsilon":1,"domain":4,"memoize":true,"budget":{"epsilon":2,"window":"12h"}}"#;
    let mut m = client(config, &mut rng);
    for i in 0..100 {
        m.randomize_text("0", t0 + i, &mut rng).unwrap();
    }
    assert_eq!(m.spent(t0 + 100), 1.0);
    m.randomize_text("1", t0 + 200, &mut rng).unwrap();
    assert!(matches!(m.randomize_text("2", t0 + 300, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    m.randomize_text("0", t0 + 400, &mut rng).expect("a memo hit is free");
}

/// The ledger adds toward refusal: ten reports at ε = 0.1 (the float 0.1 is
/// a little above 1/10) exceed a budget of 1 exactly, so the tenth is
/// refused; with a relative slack, or plain float sums (0.9999999999999999),
/// it went through.
#[test]
fn the_ledger_rounds_toward_refusal() {
    let mut rng = SimulationRng::seed_from_u64(40);
    let config = r#"{"protocol":"grr","epsilon":0.1,"domain":4,"budget":{"epsilon":1,"window":"1d"}}"#;
    let mut c = client(config, &mut rng);
    for i in 0..9 {
        c.randomize_text("1", i, &mut rng).unwrap();
    }
    assert!(c.spent(9) > 0.9, "nine reports spent");
    assert!(matches!(c.randomize_text("1", 9, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    // An exact fit is not refused: a budget of 1 holds four reports at 0.25.
    let exact = r#"{"protocol":"grr","epsilon":0.25,"domain":4,"budget":{"epsilon":1,"window":"1d"}}"#;
    let mut c = client(exact, &mut rng);
    for i in 0..4 {
        c.randomize_text("1", i, &mut rng).unwrap();
    }
    assert!(matches!(c.randomize_text("1", 4, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
}

/// The ledger with a δ: the same device sends the same reports (one an hour
/// at ε 0.1, one seed for both configs) against a budget of ε 10.5 over a
/// year. Summed, the 105th report is refused (105 × 0.1 is above 10.5 once
/// rounded up); composed at δ = 10⁻⁶ all 365 of a year's daily reports fit
/// (10.3139, the `privacy compose --delta 1e-6 0.1x365` figure) and the
/// refusal comes only at report 376, when the composition would pass 10.5.
#[test]
fn a_delta_budget_releases_what_the_sum_refuses() {
    let metric = r#""protocol":"grr","epsilon":0.1,"domain":4"#;
    let summed = format!(r#"{{{metric},"budget":{{"epsilon":10.5,"window":"365d"}}}}"#);
    let composed = format!(r#"{{{metric},"budget":{{"epsilon":10.5,"delta":1e-6,"window":"365d"}}}}"#);
    let secret = new_secret(&mut SimulationRng::seed_from_u64(70));
    let t0 = 1_700_000_000_000;
    // Reports until the first refusal: (released, the client, its reports).
    let run = |config: &str| {
        let mut rng = SimulationRng::seed_from_u64(71);
        let mut c = Client::new(config, &secret, None).unwrap();
        let mut reports = Vec::new();
        for i in 0..1000u64 {
            match c.randomize_text(&(i % 4).to_string(), t0 + i * HOUR, &mut rng) {
                Ok(report) => reports.push(report),
                Err(Error::PrivacyBudgetExceeded { cost, spent, budget }) => {
                    assert_eq!((cost, budget), (0.1, 10.5));
                    assert_eq!(spent, c.spent(t0 + i * HOUR), "nothing was charged for the refusal");
                    return (i, c, reports);
                }
                Err(other) => panic!("{other}"),
            }
        }
        unreachable!("the budget refuses within 1000 reports")
    };
    let (sum_released, sum_client, sum_reports) = run(&summed);
    let (released, client, reports) = run(&composed);
    let composition = |k: u64| compose(&[(0.1, k)], 1e-6).unwrap().epsilon;
    println!(
        "budget 10.5 at ε 0.1: the sum releases {sum_released} (spent {}), the composition at δ 1e-6 {released} \
         (spent {}; 365 reports: {})",
        sum_client.spent(t0 + sum_released * HOUR),
        client.spent(t0 + released * HOUR),
        composition(365)
    );
    assert_eq!(sum_released, 104);
    assert!(sum_client.spent(t0) > 10.39 && sum_client.spent(t0) <= 10.5);
    assert_eq!(released, 375);
    assert!(composition(375) <= 10.5 && composition(376) > 10.5);
    assert_eq!(client.spent(t0 + released * HOUR), composition(375));
    assert!((composition(365) - 10.3139).abs() < 1e-4, "{}", composition(365));
    assert_eq!(reports[..104], sum_reports[..], "the same reports, released by both");
    // The state is the same: each report's (time, ε) in the ledger.
    let state = common::legacy_state(&client);
    assert_eq!(state["ledger"].as_array().unwrap().len(), 375);
    assert_eq!(state["ledger"][374], serde_json::json!([t0 + 374 * HOUR, 0.1]));
    // A year of daily reports: none refused, the 365th spends what `compose` says.
    let mut rng = SimulationRng::seed_from_u64(72);
    let mut daily = Client::new(&composed, &secret, None).unwrap();
    for day in 0..365 {
        daily.randomize_text("1", t0 + day * DAY, &mut rng).unwrap();
    }
    assert_eq!(daily.spent(t0 + 364 * DAY), composition(365));

    // With an instantaneous step the charges of one memo are not independent
    // reports: the sum stands, δ or not (each value here is a new memo
    // charged ε_1 = 0.1).
    let stepped = r#"{"protocol":"grr","epsilon":1,"instantaneous_epsilon":0.1,"domain":1000,"memoize":true,
        "budget":{"epsilon":10.5,"delta":1e-6,"window":"365d"}}"#;
    let mut c = Client::new(stepped, &secret, None).unwrap();
    let refused = (0..200u64).find(|&i| c.randomize_text(&i.to_string(), t0 + i, &mut rng).is_err());
    assert_eq!(refused, Some(104));
}

#[test]
fn a_budget_delta_is_checked() {
    let config = |delta: &str| format!(r#"{{"protocol":"grr","epsilon":1,"domain":4,"budget":{{"epsilon":1,"delta":{delta},"window":"1d"}}}}"#);
    for delta in ["0", "1", "-1e-6", "2", "1e-200", "1e-250"] {
        let error = Client::new(&config(delta), &"0".repeat(64), None).unwrap_err();
        assert!(matches!(error, Error::InvalidConfig { parameter: "budget.delta", .. }), "{delta}: {error:?}");
    }
    for delta in ["null", "\"1e-6\"", "[]"] {
        let error = Client::new(&config(delta), &"0".repeat(64), None).unwrap_err();
        assert!(matches!(&error, Error::MalformedConfig { key: Some(k), .. } if k == "budget.delta"), "{delta}: {error:?}");
    }
    let budget = |delta: &str| Client::new(&config(delta), &"0".repeat(64), None).unwrap().settings().budget.unwrap().delta;
    assert_eq!(budget("1e-6"), Some(1e-6));
    assert_eq!(budget("0.999"), Some(0.999));
}

/// A state stored by the previous format (version 1) is read, not reset
/// (shared with the wasm build, where states are read from JS objects).
#[test]
fn version_1_states_carry_on_without_a_reset() {
    common::readers::version_1_states_carry_on_without_a_reset();
}

/// Hostile stored states are counted resets (shared with the wasm build).
#[test]
fn hostile_states_are_counted_resets() {
    common::readers::hostile_states_are_counted_resets();
}

#[test]
fn state_survives_a_new_client_and_corruption_is_a_counted_reset() {
    let mut rng = SimulationRng::seed_from_u64(5);
    let config = r#"{"protocol":"ss","epsilon":2,"domain":8,"memoize":true,"budget":{"epsilon":1,"window":"1d"}}"#;
    let secret = new_secret(&mut rng);
    let mut first = Client::new(config, &secret, None).unwrap();
    let report = first.randomize_text("3", 10, &mut rng).unwrap_err();
    assert!(matches!(report, Error::PrivacyBudgetExceeded { .. }), "ε 2 > budget 1: refused");
    let config = r#"{"protocol":"ss","epsilon":1,"domain":8,"memoize":true,"budget":{"epsilon":1,"window":"1d"}}"#;
    let mut first = Client::new(config, &secret, None).unwrap();
    let report = first.randomize_text("3", 10, &mut rng).unwrap();
    let stored = common::legacy_state(&first).to_string();

    let mut second = Client::new(config, &secret, Some(stored.as_bytes())).unwrap();
    assert_eq!(second.resets(), 0);
    assert_eq!(second.randomize_text("3", 20, &mut rng).unwrap(), report, "the memo came back");
    assert!(matches!(second.randomize_text("4", 30, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })), "so did the ledger");

    let other_metric = stored.replace("\"ss:1.0:", "\"ss:2.0:");
    let other_version = stored.replace("\"version\":3", &format!("\"version\":{}", STATE_VERSION + 1));
    assert_ne!(other_version, stored);
    for corrupt in ["", "{", "[]", r#"{"version":9}"#, &other_metric, &other_version] {
        let mut c = Client::new(config, &secret, Some(corrupt.as_bytes())).unwrap();
        assert_eq!(c.resets(), 1, "{corrupt}");
        assert_eq!(c.spent(40), 0.0, "a fresh ledger");
        c.randomize_text("4", 40, &mut rng).unwrap();
    }
    assert!(Client::new(config, "not hex", None).is_err());
}

/// Two configs of one metric that differ only in their budget (two versions
/// of an app side by side after a deploy) share one ledger: the one with the
/// shorter window, or none, never drops a charge the other still counts.
#[test]
fn no_budget_makes_another_forget_what_it_spent() {
    let mut rng = SimulationRng::seed_from_u64(60);
    let day = r#"{"protocol":"grr","epsilon":1,"domain":8,"budget":{"epsilon":2,"window":"1d"}}"#;
    let hour = r#"{"protocol":"grr","epsilon":1,"domain":8,"budget":{"epsilon":2,"window":"1h"}}"#;
    let unlimited = r#"{"protocol":"grr","epsilon":1,"domain":8}"#;
    let secret = new_secret(&mut rng);
    let t0 = 1_700_000_000_000;
    let mut a = Client::new(day, &secret, None).unwrap();
    a.randomize_text("1", t0, &mut rng).unwrap();
    a.randomize_text("2", t0 + 1, &mut rng).unwrap();
    let mut b = Client::new(hour, &secret, Some(&a.state_bytes())).unwrap();
    b.randomize_text("3", t0 + 2 * HOUR, &mut rng).expect("a's reports are outside b's hour");
    assert_eq!(b.spent(t0 + 2 * HOUR), 1.0);
    a.load(&secret, Some(&b.state_bytes())).unwrap();
    assert_eq!(a.spent(t0 + 2 * HOUR), 3.0, "a still counts its own two reports and b's");
    let refused = a.randomize_text("4", t0 + 2 * HOUR + 1, &mut rng).unwrap_err();
    assert!(matches!(refused, Error::PrivacyBudgetExceeded { .. }), "3ε spent in a day against 2ε: {refused:?}");
    // A config without a budget records what it spends in a state a budgeted one has used.
    let mut c = Client::new(unlimited, &secret, Some(&a.state_bytes())).unwrap();
    c.randomize_text("5", t0 + 3 * HOUR, &mut rng).unwrap();
    a.load(&secret, Some(&c.state_bytes())).unwrap();
    assert_eq!(a.spent(t0 + 3 * HOUR), 4.0);
    assert_eq!(a.spent(t0 + DAY + 2 * HOUR + 1), 1.0, "a day later only c's report is within a's window");
    // Left alone, a config without a budget keeps no ledger.
    let mut alone = Client::new(unlimited, &secret, None).unwrap();
    alone.randomize_text("5", t0, &mut rng).unwrap();
    assert_eq!(alone.spent(t0), 0.0);
}

/// Memos made under another secret (the install's secret was lost and
/// replaced) can never be found again: every metric whose state holds such
/// memos counts a reset, not only the first to notice, and keeps its ledger.
#[test]
fn memos_under_another_secret_are_a_counted_reset_for_every_metric() {
    let mut rng = SimulationRng::seed_from_u64(61);
    let configs = [
        r#"{"protocol":"grr","epsilon":1,"domain":8,"memoize":true,"budget":{"epsilon":5,"window":"1d"}}"#,
        r#"{"protocol":"oue","epsilon":1,"domain":8,"memoize":true,"budget":{"epsilon":5,"window":"1d"}}"#,
    ];
    let (lost, replacement) = (new_secret(&mut rng), new_secret(&mut rng));
    for config in configs {
        let mut first = Client::new(config, &lost, None).unwrap();
        first.randomize_text("3", 10, &mut rng).unwrap();
        let stored = first.state_bytes();
        assert_eq!(Client::new(config, &lost, Some(&stored)).unwrap().resets(), 0, "{config}: the same secret");
        let mut after = Client::new(config, &replacement, Some(&stored)).unwrap();
        assert_eq!(after.resets(), 1, "{config}: memos made under another secret");
        assert_eq!(after.spent(20), 1.0, "{config}: the ledger stays");
        after.randomize_text("3", 20, &mut rng).unwrap();
        assert_eq!(after.spent(20), 2.0, "{config}: the value draws (and pays for) a new permanent response");
        let again = Client::new(config, &replacement, Some(&after.state_bytes())).unwrap();
        assert_eq!(again.resets(), 0, "{config}: counted once");
    }
    // A state without memos lost nothing to the secret.
    let fresh = Client::new(configs[0], &lost, None).unwrap().state_bytes();
    assert_eq!(Client::new(configs[0], &replacement, Some(&fresh)).unwrap().resets(), 0);
}

#[test]
fn load_takes_another_context_s_state_as_a_new_client_would() {
    let mut rng = SimulationRng::seed_from_u64(6);
    let config = r#"{"protocol":"grr","epsilon":1,"domain":64,"memoize":true,"budget":{"epsilon":3,"window":"1d"}}"#;
    let secret = new_secret(&mut rng);
    // Two contexts of one device: `a` writes, `b` loads what `a` stored.
    let mut a = Client::new(config, &secret, None).unwrap();
    let mut b = Client::new(config, &new_secret(&mut rng), None).unwrap();
    let report = a.randomize_text("7", 10, &mut rng).unwrap();
    b.load(&secret, Some(&a.state_bytes())).unwrap();
    assert_eq!((b.resets(), b.spent(20)), (0, 1.0), "b has a's ledger");
    assert_eq!(b.randomize_text("7", 20, &mut rng).unwrap(), report, "and a's memo, under a's secret");
    assert_eq!(b.state_bytes(), a.state_bytes(), "a repeat costs nothing and changes nothing");

    // A bad secret changes nothing; a corrupt state is a counted reset, as for `new`.
    assert!(b.load("not hex", None).is_err());
    assert_eq!(b.spent(20), 1.0);
    b.load(&secret, Some(b"{")).unwrap();
    assert_eq!((b.resets(), b.spent(20)), (1, 1.0), "a reset, and the charge b holds stays");
    b.load(&secret, None).unwrap();
    assert_eq!(b.resets(), 0);
}

/// A storage wiped under an open client (site data cleared, secret and
/// all) loses the memos, not the budget the client already knows it spent.
#[test]
fn a_wiped_storage_leaves_an_open_client_its_ledger() {
    let mut rng = SimulationRng::seed_from_u64(7);
    let config = r#"{"protocol":"grr","epsilon":1,"domain":8,"memoize":true,"budget":{"epsilon":2,"window":"1d"}}"#;
    let secret = new_secret(&mut rng);
    let mut a = Client::new(config, &secret, None).unwrap();
    a.randomize_text("1", 10, &mut rng).unwrap();
    a.randomize_text("2", 11, &mut rng).unwrap();
    a.load(&new_secret(&mut rng), None).unwrap();
    assert_eq!(a.spent(12), 2.0, "the wipe returned no budget");
    assert!(matches!(a.randomize_text("3", 12, &mut rng), Err(Error::PrivacyBudgetExceeded { .. })));
    // Another context rewrote the wiped storage from scratch, under a new
    // secret: its charge and ours.
    let mut c = Client::new(config, &secret, None).unwrap();
    c.randomize_text("5", 14, &mut rng).unwrap();
    let renewed = new_secret(&mut rng);
    let mut b = Client::new(config, &renewed, None).unwrap();
    b.randomize_text("4", 13, &mut rng).unwrap();
    c.load(&renewed, Some(&b.state_bytes())).unwrap();
    assert_eq!(c.spent(15), 2.0, "b's charge and c's own");
    // A state that already holds a charge is not charged twice.
    c.load(&renewed, Some(&c.state_bytes())).unwrap();
    assert_eq!(c.spent(15), 2.0);
    // Under the same secret the stored state is the record: a charge held
    // only in memory was never stored (a write that lost a race, retried).
    let mut d = Client::new(config, &renewed, Some(&b.state_bytes())).unwrap();
    d.randomize_text("6", 16, &mut rng).unwrap();
    d.load(&renewed, Some(&b.state_bytes())).unwrap();
    assert_eq!(d.spent(17), 1.0, "the lost write's charge is not kept");
}

/// Two configs of one metric that differ only in what a memo means
/// (1BitMean's `granularity`, in the state's identity but not in the
/// metric's id, so one storage key): alternating them (two versions of an
/// app during a deploy) draws new memos but never a new budget.
#[test]
fn another_config_of_the_metric_keeps_the_ledger_and_drops_the_memos() {
    let mut rng = SimulationRng::seed_from_u64(8);
    let config = |granularity: u32| {
        format!(
            r#"{{"protocol":"one_bit_mean","epsilon":1,"range":[0,100],"memoize":true,"granularity":{granularity},
                "budget":{{"epsilon":3,"window":"1d"}}}}"#
        )
    };
    let (coarse, fine) = (config(8), config(64));
    assert_eq!(Metric::from_json(&coarse).unwrap().id(), Metric::from_json(&fine).unwrap().id(), "one storage key");
    let secret = new_secret(&mut rng);
    let mut state = None;
    for (i, config) in [&coarse, &fine, &coarse, &fine].into_iter().enumerate() {
        let mut c = Client::new(config, &secret, state.as_deref()).unwrap();
        assert_eq!(c.resets(), u64::from(i > 0), "report {i}: the other config's memos are dropped and counted");
        assert_eq!(c.spent(i as u64), i as f64, "report {i}: the ledger stays");
        let result = c.randomize_text("50", i as u64, &mut rng);
        assert_eq!(result.is_ok(), i < 3, "report {i}: the fourth is past the budget of 3");
        state = Some(c.state_bytes());
    }
}

/// A stored memo that parses as a report but is not one of this metric (a
/// state edited or carried over from another config) is never sent: for
/// every family that memoizes a report, the client refuses it as a corrupt
/// memo, and an honest memo is sent again.
#[test]
fn a_memo_of_another_metric_is_not_sent() {
    let cases = [
        (r#"{"protocol":"oue","epsilon":1,"domain":4,"memoize":true}"#, r#"{"protocol":"oue","epsilon":1,"domain":5}"#, "1"),
        (
            r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,1],"memoize":true}"#,
            r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,2]}"#,
            "0.5",
        ),
        (r#"{"protocol":"pem","epsilon":1,"max_length":4,"memoize":true}"#, r#"{"protocol":"pem","epsilon":1,"max_length":5}"#, "/a"),
        (
            r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"memoize":true}"#,
            r#"{"protocol":"square_wave","epsilon":1,"range":[0,2]}"#,
            "0.5",
        ),
        (
            r#"{"protocol":"marginals_oue","epsilon":1,"way":1,"attributes":[{"name":"a","domain":2},{"name":"b","domain":2}],"memoize":true}"#,
            r#"{"protocol":"marginals_oue","epsilon":1,"way":1,"attributes":[{"name":"a","domain":3},{"name":"b","domain":2}]}"#,
            r#"{"a":1,"b":0}"#,
        ),
        (
            r#"{"protocol":"pckv_ue","epsilon":1,"keys":2,"range":[0,1],"pad":1,"memoize":true}"#,
            r#"{"protocol":"pckv_ue","epsilon":1,"keys":3,"range":[0,1],"pad":1}"#,
            r#"{"0":0.5}"#,
        ),
    ];
    let mut rng = SimulationRng::seed_from_u64(1305);
    for (config, other, value) in cases {
        let secret = new_secret(&mut rng);
        let mut client = Client::new(config, &secret, None).unwrap();
        let first = client.randomize_text(value, 0, &mut rng).unwrap();
        let mut state = ClientState::from_bytes(&client.state_bytes()).unwrap();
        let other = Metric::from_json(other).unwrap();
        for memo in state.memos.values_mut() {
            *memo = other.randomize_text(value, &mut rng).unwrap().to_memo();
        }
        let stored = state.to_bytes();
        let mut honest = Client::new(config, &secret, Some(&client.state_bytes())).unwrap();
        assert_eq!(honest.randomize_text(value, 1, &mut rng).unwrap(), first, "{config}: an honest memo is sent again");
        let mut edited = Client::new(config, &secret, Some(&stored)).unwrap();
        assert_eq!(edited.randomize_text(value, 1, &mut rng).unwrap_err(), Error::CorruptMemo, "{config}");
        // This metric's envelope around a payload it never makes.
        let foreign = Report { payload: Payload::Index(u64::MAX), ..first.clone() };
        for memo in state.memos.values_mut() {
            *memo = foreign.to_memo();
        }
        let mut edited = Client::new(config, &secret, Some(&state.to_bytes())).unwrap();
        assert_eq!(edited.randomize_text(value, 1, &mut rng).unwrap_err(), Error::CorruptMemo, "{config}: its payload");
    }
}

#[test]
fn memoized_one_bit_mean_is_unbiased_with_alpha_point_rounding() {
    // Many installs (each with its own α) report 37.3 on [0, 100] twenty
    // times; one report per install is aggregated.
    let config = r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,100],"memoize":true,"granularity":8}"#;
    let metric = Metric::from_json(config).unwrap();
    let Some(m) = metric.mechanism::<NumericMetric>() else { unreachable!() };
    let mut rng = SimulationRng::seed_from_u64(6);
    let mut aggregator = NumericAggregator::new(m.clone());
    let installs = 200_000;
    for _ in 0..installs {
        let mut c = client(config, &mut rng);
        let first = c.randomize_text("37.3", 0, &mut rng).unwrap();
        for _ in 0..3 {
            assert_eq!(c.randomize_text("37.3", 0, &mut rng).unwrap(), first);
        }
        // A slowly changing value stays on the same α-point most of the time.
        aggregator.add(&first).unwrap();
    }
    let e = &aggregator.estimate().unwrap().attributes[0];
    let z = common::z_critical(1e-6, 1);
    println!("memoized 1BitMean: mean {:.3} ± {:.3} for 37.3", e.mean, e.std_error);
    assert!((e.mean - 37.3).abs() < z * e.std_error, "{} vs 37.3", e.mean);
    let mut c = client(config, &mut rng);
    assert!(c.randomize_text("NaN", 0, &mut rng).is_err());
    let bad = r#"{"protocol":"piecewise","epsilon":1,"range":[0,100],"memoize":true}"#;
    assert!(Client::new(bad, &new_secret(&mut rng), None).is_err(), "memoize needs a memoizable protocol");
}

#[test]
fn the_aggregator_ignores_client_only_keys_and_budget_shapes_are_checked() {
    let with = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4,"memoize":true,"budget":{"epsilon":3,"window":"7d"}}"#).unwrap();
    let without = Metric::from_json(r#"{"protocol":"grr","epsilon":1,"domain":4}"#).unwrap();
    assert_eq!(with, without);
    for bad in [
        r#"{"protocol":"grr","epsilon":1,"domain":4,"memoize":"yes"}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":3}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":3}}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":0,"window":"1d"}}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1 day"}}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"0d"}}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1d","extra":1}}"#,
    ] {
        assert!(Metric::from_json(bad).is_err(), "{bad}");
    }
    // "granularity" is a client-only key on any config, as it always was
    // (only memoized one_bit_mean uses it).
    for config in [
        r#"{"protocol":"grr","epsilon":1,"domain":3,"granularity":8}"#,
        r#"{"protocol":"duchi","epsilon":1,"range":[0,1],"granularity":8}"#,
    ] {
        assert!(Metric::from_json(config).is_ok(), "{config}");
    }
}

#[test]
fn dbitflip_channel_is_exact_and_its_estimates_unbiased() {
    use localdp::frequency::ChannelOutputs;
    use localdp::report::Report;
    for epsilon in [0.5, 1.0, 2.0, 4.0] {
        for (k, d) in [(5usize, 1usize), (5, 2), (6, 3), (4, 4)] {
            let config = format!(r#"{{"protocol":"dbitflip","epsilon":{epsilon},"domain":{k},"d":{d}}}"#);
            let metric = Metric::from_json(&config).unwrap();
            let Some(o) = metric.mechanism::<FrequencyOracle>() else { unreachable!() };
            let template = o.randomize_index(0, &mut SimulationRng::seed_from_u64(1)).unwrap();
            // Every d-subset of buckets with every bit pattern.
            let mut reports = Vec::new();
            for mask in 0u32..(1 << k) {
                if mask.count_ones() as usize != d {
                    continue;
                }
                let attributes: Vec<u32> = (0..k as u32).filter(|j| mask >> j & 1 == 1).collect();
                for bits in 0u32..(1 << d) {
                    let values = (0..d).map(|i| u64::from(bits >> i & 1)).collect();
                    reports.push(Report { payload: Payload::Sampled { attributes: attributes.clone(), values }, ..template.clone() });
                }
            }
            let realized = common::channel::frequency_epsilon(o, ChannelOutputs::Complete(reports));
            // Tight when two values' buckets can both be sampled (d ≥ 2);
            // with d = 1 a report differs in one bit only: ε/2.
            let tight = if d >= 2 { epsilon } else { epsilon / 2.0 };
            common::channel::assert_epsilon(&config, realized, tight, 1e-9);
        }
    }
    let config = r#"{"protocol":"dbitflip","epsilon":2,"domain":8,"d":3}"#;
    let metric = Metric::from_json(config).unwrap();
    let Some(o) = metric.mechanism::<FrequencyOracle>() else { unreachable!() };
    let mut rng = SimulationRng::seed_from_u64(8);
    let mut aggregator = localdp::FrequencyAggregator::new(o.clone());
    let n = 80_000;
    for i in 0..n {
        aggregator.add(&o.randomize_index([0, 0, 0, 1, 1, 2, 3, 7][i % 8], &mut rng).unwrap()).unwrap();
    }
    let truth = [0.375, 0.25, 0.125, 0.125, 0.0, 0.0, 0.0, 0.125];
    let z = common::z_critical(1e-6, 8);
    for (e, t) in aggregator.estimate().unwrap().estimates.iter().zip(truth) {
        assert!((e.frequency - t).abs() < z * e.std_error, "{e:?} vs {t}");
    }
    for bad in [
        r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":5}"#,
        r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":0}"#,
        r#"{"protocol":"grr","epsilon":1,"domain":4,"d":2}"#,
    ] {
        assert!(Metric::from_json(bad).is_err(), "{bad}");
    }
}

#[test]
fn memoized_dbitflip_keeps_its_buckets_and_one_response_per_pattern() {
    let config = r#"{"protocol":"dbitflip","epsilon":1,"domain":10,"d":2,"memoize":true,"budget":{"epsilon":3,"window":"1d"}}"#;
    let mut rng = SimulationRng::seed_from_u64(9);
    let mut c = client(config, &mut rng);
    let reports: Vec<_> = (0..10).map(|v| c.randomize_text(&v.to_string(), 0, &mut rng).unwrap()).collect();
    let Payload::Sampled { attributes, .. } = &reports[0].payload else { panic!() };
    let outside: Vec<usize> = (0..10).filter(|v| !attributes.contains(&(*v as u32))).collect();
    for pair in outside.windows(2) {
        assert_eq!(reports[pair[0]], reports[pair[1]], "values outside the buckets share one response");
    }
    assert_eq!(c.spent(0), 3.0, "three patterns: each bucket, and none");
}

fn rappor(config: &str) -> RapporMetric {
    match Metric::from_json(config).unwrap().mechanism::<RapporMetric>() {
        Some(r) => r.clone(),
        None => unreachable!(),
    }
}

#[test]
fn rappor_epsilons_match_enumeration_for_small_bloom_filters() {
    for (f, p, q, h) in [(0.5, 0.5, 0.75, 1u64), (0.5, 0.5, 0.75, 2), (0.25, 0.25, 0.75, 2), (0.75, 0.4, 0.6, 3)] {
        let config = format!(r#"{{"protocol":"rappor","bits":6,"hashes":{h},"cohorts":1,"f":{f},"p":{p},"q":{q}}}"#);
        let r = rappor(&config);
        let (f, _, _) = r.parameters();
        let (one, zero) = r.report_bit_probabilities();
        // Every Bloom pattern with h bits set, every output: the PRR's and one
        // report's probability, bit by bit, under the realized coins.
        let patterns: Vec<u32> = (0u32..64).filter(|b| b.count_ones() as u64 == h).collect();
        let (mut prr, mut single) = (0.0f64, 0.0f64);
        for &a in &patterns {
            for &b in &patterns {
                for out in 0u32..64 {
                    let likelihood = |bloom: u32, keep: f64, flip: f64, set: f64, unset: f64| {
                        (0..6).map(|i| {
                            let (bit, o) = (bloom >> i & 1 == 1, out >> i & 1 == 1);
                            if keep > 0.0 { if bit == o { keep } else { flip } } else if o { if bit { set } else { unset } } else if bit { 1.0 - set } else { 1.0 - unset }
                        })
                        .product::<f64>()
                    };
                    let permanent = |bloom| likelihood(bloom, 1.0 - f / 2.0, f / 2.0, 0.0, 0.0);
                    let report = |bloom| likelihood(bloom, 0.0, 0.0, one, zero);
                    prr = prr.max((permanent(a) / permanent(b)).ln());
                    single = single.max((report(a) / report(b)).ln());
                }
            }
        }
        assert!((prr - r.epsilon_infinity()).abs() < 1e-9, "{config}: ε_∞ {} vs enumerated {prr}", r.epsilon_infinity());
        assert!((single - r.epsilon_one()).abs() < 1e-9, "{config}: ε_1 {} vs enumerated {single}", r.epsilon_one());
        // The claimed constants are rounded up: never below the realized ones.
        assert!(r.epsilon_infinity() >= prr && r.epsilon_one() >= single, "{config}: a claim below the enumeration");
    }
}

#[test]
fn rappor_samplers_draw_the_stated_bit_probabilities() {
    let r = rappor(r#"{"protocol":"rappor","bits":64,"hashes":2,"cohorts":4,"f":0.5,"p":0.25,"q":0.75}"#);
    let (one, zero) = r.report_bit_probabilities();
    let mut rng = SimulationRng::seed_from_u64(12);
    let bloom = r.bloom(1, "value");
    let (mut set, mut unset, mut n_set, mut n_unset) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..20_000 {
        let permanent = r.permanent(&bloom, &mut rng);
        let Payload::Cohort { bits, .. } = r.instantaneous(1, &permanent, &mut rng).payload else { panic!() };
        for i in 0..64 {
            if bloom.get(i) {
                n_set += 1;
                set += u64::from(bits.get(i));
            } else {
                n_unset += 1;
                unset += u64::from(bits.get(i));
            }
        }
    }
    let z = common::z_critical(1e-6, 2);
    for (k, n, p) in [(set, n_set, one), (unset, n_unset, zero)] {
        assert!((k as f64 / n as f64 - p).abs() < z * (p * (1.0 - p) / n as f64).sqrt(), "{k}/{n} vs {p}");
    }
}

#[test]
fn rappor_end_to_end_finds_the_heavy_values_with_honest_intervals() {
    // Five values present, three absent candidates; 32-bit Bloom filters,
    // 2 hashes, 8 cohorts, the paper's f, p, q.
    let candidates = ["alpha", "bravo", "charlie", "delta", "echo", "absent-1", "absent-2", "absent-3"];
    let truth = [0.4, 0.25, 0.15, 0.1, 0.1, 0.0, 0.0, 0.0];
    let list: Vec<String> = candidates.iter().map(|c| format!("\"{c}\"")).collect();
    let config = format!(r#"{{"protocol":"rappor","bits":32,"hashes":2,"cohorts":8,"f":0.5,"p":0.5,"q":0.75,"candidates":[{}]}}"#, list.join(","));
    let metric = Metric::from_json(&config).unwrap();
    let (runs, n) = (30, 100_000);
    let mut estimates: Vec<Vec<f64>> = vec![Vec::new(); 5];
    let mut reported_se = [0.0; 5];
    let z = common::z_critical(1e-6, 5 * runs);
    let mut rng = SimulationRng::seed_from_u64(13);
    let mut false_detections = 0;
    for _ in 0..runs {
        let mut aggregator = localdp::Aggregator::new(metric.clone());
        for i in 0..n {
            let u = (i % 20) as f64 / 20.0;
            let v = truth.iter().scan(0.0, |acc, t| { *acc += t; Some(*acc) }).position(|c| u < c - 1e-12).unwrap();
            aggregator.add(&metric.randomize_text(candidates[v], &mut rng).unwrap()).unwrap();
        }
        let localdp::Estimate::Rappor(e) = aggregator.estimate(localdp::PostProcessing::None).unwrap() else { unreachable!() };
        for (v, name) in candidates.iter().enumerate().take(5) {
            let found = e.estimates.iter().find(|c| c.value == *name).unwrap_or_else(|| panic!("{name} not detected: {e:?}"));
            assert!((found.frequency - truth[v]).abs() < z * found.std_error, "{name}: {} ± {} vs {}", found.frequency, found.std_error, truth[v]);
            estimates[v].push(found.frequency);
            reported_se[v] += found.std_error / runs as f64;
        }
        // Non-negative least squares lists a candidate nobody holds about half
        // the time, with an interval from 0: a false detection is one shown above 0.
        false_detections += e.estimates.iter().filter(|c| c.value.starts_with("absent") && c.ci95[0] > 0.0).count();
    }
    // The spread over runs against the reported standard error and against
    // the variance the RAPPOR paper's model predicts: Var t_ij =
    // N_j P_ij (1 − P_ij) / ((1−f)(q−p))², propagated through least squares.
    let predicted = rappor_predicted_se(&metric, &candidates[..5], &truth[..5], n);
    for v in 0..5 {
        let mean = estimates[v].iter().sum::<f64>() / runs as f64;
        let sd = (estimates[v].iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (runs - 1) as f64).sqrt();
        println!("{:8} true {:.3} mean {mean:.4} sd {sd:.5} reported se {:.5} paper-model se {:.5}", candidates[v], truth[v], reported_se[v], predicted[v]);
        // 30 runs estimate an SD to ±13% (1σ): a factor 2 either way is a failure.
        assert!(sd / reported_se[v] > 0.5 && sd / reported_se[v] < 2.0, "{}: sd {sd} vs se {}", candidates[v], reported_se[v]);
    }
    println!("absent candidates shown above 0 in {false_detections} of {} chances", 3 * runs);
    assert!(false_detections <= 3 * runs / 5, "too many false detections: {false_detections}");
}

/// The standard errors the RAPPOR paper's noise model predicts for the least
/// squares on the present candidates (equal cohorts).
fn rappor_predicted_se(metric: &Metric, candidates: &[&str], truth: &[f64], n: usize) -> Vec<f64> {
    let Some(r) = metric.mechanism::<RapporMetric>() else { unreachable!() };
    let (f, p, q) = r.parameters();
    let (one, zero) = r.report_bit_probabilities();
    let (m, k, c) = (r.cohorts() as usize, 32, candidates.len());
    let n_j = n as f64 / m as f64;
    // Fisher information XᵀΣ⁻¹X with X in counts per cohort (1/m of the total).
    let mut info = vec![vec![0.0; c]; c];
    for j in 0..m {
        let bloom: Vec<localdp::report::BitVector> = candidates.iter().map(|v| r.bloom(j as u32, v)).collect();
        for i in 0..k {
            let share_set: f64 = (0..c).filter(|&v| bloom[v].get(i)).map(|v| truth[v]).sum::<f64>().min(1.0);
            let rate = zero + (one - zero) * share_set;
            let variance = n_j * rate * (1.0 - rate) / ((1.0 - f) * (q - p)).powi(2);
            for a in 0..c {
                for b in 0..c {
                    if bloom[a].get(i) && bloom[b].get(i) {
                        info[a][b] += 1.0 / (m * m) as f64 / variance;
                    }
                }
            }
        }
    }
    let inverse = nalgebra::DMatrix::from_fn(c, c, |a, b| info[a][b]).try_inverse().unwrap();
    (0..c).map(|v| inverse[(v, v)].sqrt() / n as f64).collect()
}

/// With an instantaneous step the ledger charges a memo's reports their
/// joint ε (`memo_epsilon`, exact; tests/memo_ledger.rs enumerates it) until
/// they have cost `ε_∞` (then nothing). The per-memo totals and counts
/// survive a new session, refusals spend nothing, and the window rolls
/// over as before.
#[test]
fn an_instantaneous_step_is_charged_the_joint_epsilon_up_to_the_long_run_epsilon() {
    let mut rng = SimulationRng::seed_from_u64(50);
    let config = r#"{"protocol":"grr","epsilon":1,"instantaneous_epsilon":0.3,"domain":4,"memoize":true,
                     "budget":{"epsilon":1.5,"window":"1d"}}"#;
    let secret = new_secret(&mut rng);
    let mut c = Client::new(config, &secret, None).unwrap();
    let memo = c.metric().kind().memo().unwrap();
    // After k reports of one memo: ε_1, then the joint channel's ε, and ε_∞
    // once that is within 1% of it.
    let joint: Vec<f64> = (1..=8u64)
        .map(|k| if k == 1 { 0.3 } else { memo.memo_epsilon(k).unwrap() })
        .map(|e| if e < PAID_OFF { e } else { 1.0 })
        .collect();
    assert!(joint.windows(2).all(|w| w[0] < w[1] || w == [1.0, 1.0]) && joint[6] == 1.0, "{joint:?}");
    let t0 = 1_700_000_000_000;
    let near = |a: f64, b: f64| a >= b && a - b < 1e-12;
    for (i, &total) in joint.iter().enumerate() {
        c.randomize_text("0", t0 + i as u64, &mut rng).unwrap();
        assert!(near(c.spent(t0 + 10), total), "report {i} of an unchanged value: spent {} ≠ {total}", c.spent(t0 + 10));
    }
    // A second value: its first report (0.3) fits (1.3), its second does not.
    c.randomize_text("1", t0 + 20, &mut rng).unwrap();
    let before = c.state_bytes();
    let refused = c.randomize_text("1", t0 + 30, &mut rng).unwrap_err();
    assert!(matches!(refused, Error::PrivacyBudgetExceeded { cost, .. } if near(cost, joint[1] - 0.3)), "{refused:?}");
    assert_eq!(c.state_bytes(), before, "a refused report changes nothing");
    let kept = ClientState::from_bytes(&before).unwrap();
    assert_eq!((kept.charged.len(), kept.reports.len()), (1, 1), "per-memo totals are kept: {kept:?}");

    // The next session carries the per-memo totals and counts on: value 0
    // is paid off, value 1 has sent one report.
    let mut next = Client::new(config, &secret, Some(&before)).unwrap();
    assert_eq!(next.resets(), 0);
    next.randomize_text("0", t0 + 40, &mut rng).expect("value 0 has cost its ε_∞: free");
    assert!(near(next.spent(t0 + 40), 1.3));
    let day = t0 + DAY + 20;
    for (i, &total) in joint[1..].iter().enumerate() {
        next.randomize_text("1", day + i as u64, &mut rng).unwrap();
        assert!(near(next.spent(day + 10), total - 0.3), "value 1, report {} after the window: {}", i + 2, next.spent(day + 10));
    }
    let state = ClientState::from_bytes(&next.state_bytes()).unwrap();
    assert!(state.charged.is_empty() && state.reports.is_empty(), "every memo paid off: {state:?}");
}

/// A version 3 state (the release before joint charges) kept a memo's
/// total but not its count: the next report counts as many earlier ones as
/// the old rule's ε_1 each could have paid for, and pays what the joint ε
/// of all of them is above the old total.
/// L-GRR over 30 values (ε_∞ 2, ε_1 0.5, a budget of 10): the config,
/// the secret, and the stored state after one report of "3", with the key
/// of its one partly charged memo.
fn one_partly_charged_memo(rng: &mut SimulationRng) -> (&'static str, String, serde_json::Value, String) {
    let config = r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":0.5,"domain":30,"memoize":true,
                     "budget":{"epsilon":10,"window":"1d"}}"#;
    let secret = new_secret(rng);
    let mut c = Client::new(config, &secret, None).unwrap();
    c.randomize_text("3", 0, rng).unwrap();
    let state = common::legacy_state(&c);
    let key = state["charged"].as_object().unwrap().keys().next().unwrap().clone();
    (config, secret, state, key)
}

#[test]
fn a_version_3_memo_total_is_charged_up_to_the_joint_epsilon() {
    let mut rng = SimulationRng::seed_from_u64(51);
    let (config, secret, mut state, key) = one_partly_charged_memo(&mut rng);
    // What version 3 wrote after two reports: 1.0 charged, no count.
    state["version"] = 3.into();
    state["charged"][&key] = 1.0.into();
    state["ledger"] = serde_json::json!([[0, 0.5], [0, 0.5]]);
    state.as_object_mut().unwrap().remove("reports");
    let mut next = Client::new(config, &secret, Some(state.to_string().as_bytes())).unwrap();
    assert_eq!(next.resets(), 0);
    next.randomize_text("3", 1, &mut rng).unwrap();
    let memo = next.metric().kind().memo().unwrap();
    let third = memo.memo_epsilon(3).unwrap();
    assert!(third > 1.5, "three reports of L-GRR at d 30 cost more than 3·ε_1: {third}");
    assert!(next.spent(1) >= third && next.spent(1) - third < 1e-12, "{} vs {third}", next.spent(1));
    assert_eq!(ClientState::from_bytes(&next.state_bytes()).unwrap().reports.len(), 1, "the state counts the reports");
}

/// A memo total whose count is not an integer in 1..=MEMO_REPORTS, or is
/// missing from a version 4 state, cannot be charged from: the memos go (a
/// counted reset), the ledger stays.
#[test]
fn a_memo_count_that_cannot_be_charged_from_drops_the_memos() {
    let mut rng = SimulationRng::seed_from_u64(52);
    let (config, secret, good, key) = one_partly_charged_memo(&mut rng);
    assert_eq!(good["version"], 4);
    for count in [None, Some(0.0), Some(-1.0), Some(2.5), Some(1e20), Some(MEMO_REPORTS as f64 + 1.0)] {
        let mut state = good.clone();
        match count {
            Some(n) => state["reports"][&key] = n.into(),
            None => drop(state.as_object_mut().unwrap().remove("reports")),
        }
        let next = Client::new(config, &secret, Some(state.to_string().as_bytes())).unwrap();
        assert_eq!((next.resets(), next.spent(1)), (1, 0.5), "count {count:?}");
        assert!(ClientState::from_bytes(&next.state_bytes()).unwrap().memos.is_empty(), "count {count:?}: the memo is gone");
    }
}

/// The ε of k reports of a GRR chain takes O(k²) steps: a memo's
/// MEMO_REPORTS-th report pays the rest of ε_∞, and its repeats are free.
#[test]
fn a_memo_pays_off_by_its_memo_reports_th_report() {
    let mut rng = SimulationRng::seed_from_u64(53);
    let config = r#"{"protocol":"grr","epsilon":8,"instantaneous_epsilon":0.02,"domain":3,"memoize":true,
                     "budget":{"epsilon":100,"window":"1d"}}"#;
    let mut c = Client::new(config, &new_secret(&mut rng), None).unwrap();
    for k in 1..MEMO_REPORTS {
        c.randomize_text("1", k, &mut rng).unwrap();
    }
    assert!(c.spent(MEMO_REPORTS) < PAID_OFF * 8.0, "not paid off by its joint ε: {}", c.spent(MEMO_REPORTS));
    c.randomize_text("1", MEMO_REPORTS, &mut rng).unwrap();
    assert_eq!(c.spent(MEMO_REPORTS), 8.0);
    c.randomize_text("1", MEMO_REPORTS + 1, &mut rng).unwrap();
    assert_eq!(c.spent(MEMO_REPORTS + 1), 8.0, "then free");
}

/// P[two reports of one install are equal] for GRR over `m` values with a
/// permanent response at `ε_∞` and a step at `ε_1` (nominal probabilities):
/// `(unchanged value, changed value)`.
fn grr_equality_probabilities(m: f64, long_run: f64, epsilon_1: f64) -> (f64, f64) {
    let mu = |e: f64| m / (e.exp() + m - 1.0);
    let mu_1 = mu(long_run);
    let mu_2 = (mu(epsilon_1) - mu_1) / (1.0 - mu_1);
    let (p1, q1) = (1.0 - mu_1 * (m - 1.0) / m, mu_1 / m);
    let (p2, q2) = (1.0 - mu_2 * (m - 1.0) / m, mu_2 / m);
    let same_permanent = 2.0 * p1 * q1 + (m - 2.0) * q1 * q1;
    let equal_steps = p2 * p2 + (m - 1.0) * q2 * q2;
    let unequal_steps = 2.0 * p2 * q2 + (m - 2.0) * q2 * q2;
    (equal_steps, same_permanent * equal_steps + (1.0 - same_permanent) * unequal_steps)
}

/// Without the step, two reports of an unchanged value are always equal and
/// of a changed one equal only when the two permanent responses happen to
/// be: equality tells the collector, without noise, "unchanged". With the
/// step, equality is a noisy signal whose rates match the closed form
/// (GRR, d = 4, ε_∞ = 2, ε_1 = 1: 0.43 unchanged vs 0.23 changed; without
/// the step 1 vs 0.16).
#[test]
fn an_instantaneous_step_makes_equal_reports_uncertain() {
    let installs = 20_000;
    let mut rng = SimulationRng::seed_from_u64(51);
    let z = common::z_critical(1e-6, 4);
    for (config, (unchanged, changed)) in [
        (r#"{"protocol":"grr","epsilon":2,"domain":4,"memoize":true}"#, (1.0, grr_equality_probabilities(4.0, 2.0, 2.0).1)),
        (
            r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#,
            grr_equality_probabilities(4.0, 2.0, 1.0),
        ),
    ] {
        let (mut same_equal, mut changed_equal) = (0, 0);
        for _ in 0..installs {
            let mut c = client(config, &mut rng);
            let first = c.randomize_text("0", 0, &mut rng).unwrap();
            same_equal += usize::from(c.randomize_text("0", 1, &mut rng).unwrap() == first);
            changed_equal += usize::from(c.randomize_text("1", 2, &mut rng).unwrap() == first);
        }
        for (observed, p) in [(same_equal, unchanged), (changed_equal, changed)] {
            let share = observed as f64 / installs as f64;
            let se = (p * (1.0 - p) / installs as f64).sqrt();
            assert!((share - p).abs() <= z * se, "{config}: equal in {share:.4} of installs, expected {p:.4}");
        }
        println!("{config}: P[equal | unchanged] {unchanged:.4}, P[equal | changed] {changed:.4}");
    }
}

/// The memoized path through the step is the composed channel: the third
/// report of every install (a stored permanent response, the step applied
/// afresh) gives unbiased estimates; OLH's installs keep one hash seed for
/// every value (LOLOHA), so a seed says nothing about a change.
#[test]
fn memoized_reports_through_the_step_estimate_without_bias() {
    let mut rng = SimulationRng::seed_from_u64(52);
    let truth = [0.5, 0.25, 0.25, 0.0];
    for protocol in ["grr", "oue", "olh"] {
        let config = format!(r#"{{"protocol":"{protocol}","epsilon":3,"instantaneous_epsilon":1,"domain":4,"memoize":true}}"#);
        let metric = Metric::from_json(&config).unwrap();
        let mut aggregator = localdp::Aggregator::new(metric.clone());
        for i in 0..40_000 {
            let mut c = client(&config, &mut rng);
            let value = [0, 0, 1, 2][i % 4].to_string();
            let reports: Vec<_> = (0..3).map(|t| c.randomize_text(&value, t, &mut rng).unwrap()).collect();
            if protocol == "olh" {
                let other = c.randomize_text("3", 4, &mut rng).unwrap();
                let seed = |r: &localdp::Report| match r.payload {
                    Payload::Hashed { seed, .. } => seed,
                    _ => unreachable!(),
                };
                assert_eq!(seed(&other), seed(&reports[0]), "one hash per install");
            }
            aggregator.add(&reports[2]).unwrap();
        }
        let localdp::Estimate::Frequency(e) = aggregator.estimate(localdp::PostProcessing::None).unwrap() else { unreachable!() };
        let z = common::z_critical(1e-6, 12);
        for (v, t) in e.estimates.iter().zip(truth) {
            assert!((v.frequency - t).abs() < z * v.std_error, "{protocol}: {v:?} vs {t}");
        }
    }
}

/// Reports made without the step do not match a config with it, and vice
/// versa (the envelope carries `ε_1`, the fingerprint `ε_∞`).
#[test]
fn reports_with_and_without_the_step_do_not_mix() {
    let mut rng = SimulationRng::seed_from_u64(53);
    let plain = r#"{"protocol":"oue","epsilon":1,"domain":4,"memoize":true}"#;
    let stepped = r#"{"protocol":"oue","epsilon":2,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#;
    let other_long_run = r#"{"protocol":"oue","epsilon":3,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#;
    for (made, checked) in [(plain, stepped), (stepped, plain), (stepped, other_long_run)] {
        let report = client(made, &mut rng).randomize_text("1", 0, &mut rng).unwrap();
        let mut aggregator = localdp::Aggregator::new(Metric::from_json(checked).unwrap());
        let refused = aggregator.add(&report).unwrap_err();
        assert!(
            matches!(refused, Error::Rejected { reason: localdp::Rejection::ConfigMismatch, .. }),
            "{made} → {checked}: {refused:?}"
        );
    }
    let metric = Metric::from_json(stepped).unwrap();
    assert_eq!((metric.epsilon(), metric.long_run_epsilon()), (1.0, 2.0));
    assert_ne!(metric.id(), Metric::from_json(plain).unwrap().id());
}

/// The auditor audits the permanent response against `ε_∞`, as for RAPPOR
/// (the step is post-processing of it): its lower bound passes `ε_1` (a
/// composed report alone could not) and stays below `ε_∞`.
#[test]
fn the_auditor_sees_the_permanent_response_behind_the_step() {
    let metric = Metric::from_json(r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":1,"domain":2,"memoize":true}"#).unwrap();
    let result = localdp::audit::audit(&metric, 200_000, 0.999, &mut SimulationRng::seed_from_u64(54));
    assert_eq!(result.epsilon, 2.0, "claimed: ε_∞");
    assert!(!result.violated(), "{result:?}");
    assert!(result.epsilon_lower_bound > 1.5, "the permanent response's ε, above ε_1: {result:?}");
}
