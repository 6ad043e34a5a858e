//! No error a device's value causes repeats any of it: not a value, not a
//! key of a map, not a field name of an event (a user's keys are their data
//! too). For every family, many bad values carrying distinctive sentinels
//! (wrong types, values outside the domain, unknown keys and fields,
//! over-long text, NaN and infinities, broken JSON) go through the metric
//! and through a client (fresh and memoized, whose memo keys validate the
//! value first); no error's text, nor its typed fields (`Debug`), may hold
//! any 3-byte piece of a sentinel. The names a config gives (its labels, its
//! keys, its fields) are public and may be named.

use localdp::client::{new_secret, Client};
use localdp::{Metric, SimulationRng};
use std::collections::BTreeSet;

/// The shortest piece of a sentinel that may not appear in an error.
const PIECE: usize = 3;

/// Sentinels: text no message or config here contains any 3 bytes of
/// (checked below against every config, so that a match means an echo).
const WORD: &str = "QzxWvjK";
const EMAIL: &str = "qzvj@xkwq.zz";
const DIGITS: &str = "9876054";
const LONG: &str = "ZqjXvwKQzjXvwKQzjXvwK";

/// A family's configs (one plain, one memoized) and its bad values, each
/// with the sentinels it carries.
struct Case {
    configs: &'static [&'static str],
    values: Vec<(String, Vec<&'static str>)>,
}

fn cases() -> Vec<Case> {
    let both = |v: &str, s: &[&'static str]| (v.to_string(), s.to_vec());
    let numbers = vec![
        both(WORD, &[WORD]),
        both(&format!("1e{DIGITS}"), &[DIGITS]),
        both(&format!("-1e{DIGITS}"), &[DIGITS]),
        both("NaN", &[]),
        both("inf", &[]),
        both(&format!("0x{DIGITS}"), &[DIGITS]),
        both(&format!("{DIGITS}.5.5"), &[DIGITS]),
        both(EMAIL, &[EMAIL]),
        both(&format!("1,{WORD}"), &[WORD]),
        both(&format!("{DIGITS},{DIGITS},{DIGITS}"), &[DIGITS]),
        both("", &[]),
    ];
    let objects = |keys_or_fields: &[&str]| {
        let [a, b] = [keys_or_fields[0], keys_or_fields[1]];
        vec![
            both(&format!(r#"{{"{EMAIL}":1}}"#), &[EMAIL]),
            both(&format!(r#"{{"{a}":1,"{b}":1,"{EMAIL}":1}}"#), &[EMAIL]),
            both(&format!(r#"{{"{a}":"{WORD}","{b}":1}}"#), &[WORD]),
            both(&format!(r#"{{"{a}":1,"{b}":"{WORD}"}}"#), &[WORD]),
            both(&format!(r#"{{"{a}":{DIGITS}e999,"{b}":1}}"#), &[DIGITS]),
            both(&format!(r#"{{"{a}":1,"{b}":-{DIGITS}}}"#), &[DIGITS]),
            both(&format!(r#"{{"{a}":[{DIGITS}],"{b}":1}}"#), &[DIGITS]),
            both(&format!(r#"{{"{a}":{{"{WORD}":1}},"{b}":1}}"#), &[WORD]),
            both(&format!(r#"{{"{a}":1,"{a}":2,"{b}":1,"{WORD}":3}}"#), &[WORD]),
            both(&format!(r#"{{"{WORD}""#), &[WORD]),
            both(&format!(r#"["{WORD}"]"#), &[WORD]),
            both(&format!(r#""{EMAIL}""#), &[EMAIL]),
            both(DIGITS, &[DIGITS]),
            both(&format!(r#"{{"{a}":1,"{b}":1}}{WORD}"#), &[WORD]),
            both(&format!(r#"{{"{LONG}{LONG}{LONG}":1}}"#), &[LONG]),
        ]
    };
    vec![
        Case {
            configs: &[
                r#"{"protocol":"grr","epsilon":1,"domain":["red","green","blue"]}"#,
                r#"{"protocol":"olh","epsilon":2,"domain":16,"memoize":true,"instantaneous_epsilon":1}"#,
            ],
            values: vec![
                both(WORD, &[WORD]),
                both(EMAIL, &[EMAIL]),
                both(DIGITS, &[DIGITS]),
                both(&format!("-{DIGITS}"), &[DIGITS]),
                both(&format!("{DIGITS}.5"), &[DIGITS]),
                both(&format!("0{DIGITS}"), &[DIGITS]),
                both(&format!("red{WORD}"), &[WORD]),
                both(&format!(" {DIGITS} "), &[DIGITS]),
                both(&LONG.repeat(40), &[LONG]),
                both("", &[]),
            ],
        },
        Case {
            configs: &[
                r#"{"protocol":"duchi","epsilon":1,"range":[0,10]}"#,
                r#"{"protocol":"piecewise","epsilon":1,"range":[[0,1],[0,2]]}"#,
                r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,10],"memoize":true}"#,
            ],
            values: numbers.clone(),
        },
        Case {
            configs: &[r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"f":0.5,"candidates":["a","b"]}"#],
            // RAPPOR takes any text; nothing here may fail but with no echo.
            values: vec![both(WORD, &[WORD]), both(&LONG.repeat(400), &[LONG]), both("", &[])],
        },
        Case {
            configs: &[
                r#"{"protocol":"pem","epsilon":1,"max_length":8}"#,
                r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":2,"width":16}}"#,
                r#"{"protocol":"sfp","epsilon":1,"max_length":6}"#,
            ],
            values: vec![
                both(LONG, &[LONG]),
                both(&format!("{EMAIL}{EMAIL}"), &[EMAIL]),
                both(&LONG.repeat(50), &[LONG]),
                both(WORD, &[WORD]),
            ],
        },
        Case {
            configs: &[
                r#"{"protocol":"square_wave","epsilon":1,"range":[0,100]}"#,
                r#"{"protocol":"hierarchical","epsilon":1,"range":[0,100],"bins":64}"#,
            ],
            values: numbers,
        },
        Case {
            configs: &[
                r#"{"protocol":"pckv_ue","epsilon":1,"keys":["search","share"],"range":[0,60],"pad":2}"#,
                r#"{"protocol":"pckv_grr","epsilon":1,"keys":8,"range":[0,60],"pad":1}"#,
            ],
            values: objects(&["search", "share"]).into_iter().chain(objects(&["1", "2"])).collect(),
        },
        Case {
            configs: &[
                r#"{"protocol":"marginals","epsilon":1,"attributes":[{"name":"browser","domain":["Chrome","Safari"]},{"name":"os","domain":3}]}"#,
                r#"{"protocol":"marginals_olh","epsilon":1,"memoize":true,"attributes":[{"name":"browser","domain":["Chrome","Safari"]},{"name":"os","domain":3}]}"#,
            ],
            values: objects(&["browser", "os"]),
        },
    ]
}

/// The 3-byte pieces of `sentinel` found in `text`.
fn echoed<'a>(sentinel: &'a str, text: &str) -> Vec<&'a str> {
    let bytes = sentinel.as_bytes();
    (0..=bytes.len().saturating_sub(PIECE))
        .filter_map(|i| sentinel.get(i..i + PIECE))
        .filter(|piece| text.contains(piece))
        .collect()
}

#[test]
fn no_error_repeats_any_part_of_the_value_that_caused_it() {
    let mut rng = SimulationRng::seed_from_u64(40);
    let (mut families, mut errors, mut leaks) = (BTreeSet::new(), 0, Vec::new());
    for case in cases() {
        for config in case.configs {
            // A sentinel the config itself contains could not tell an echo.
            for sentinel in [WORD, EMAIL, DIGITS, LONG] {
                assert!(echoed(sentinel, config).is_empty(), "{config} contains a piece of {sentinel}");
            }
            let metric = Metric::from_json(config).unwrap();
            families.insert(metric.family());
            let secret = new_secret(&mut rng);
            let mut client = Client::new(config, &secret, None).unwrap();
            for (value, sentinels) in &case.values {
                let outcomes = [metric.randomize_text(value, &mut rng).err(), client.randomize_text(value, 0, &mut rng).err()];
                for error in outcomes.into_iter().flatten() {
                    errors += 1;
                    let text = format!("{error} {error:?}");
                    for sentinel in sentinels {
                        let pieces = echoed(sentinel, &text);
                        if !pieces.is_empty() {
                            leaks.push(format!("{config}\n  value {value}\n  error {text}\n  repeats {pieces:?}"));
                        }
                    }
                }
            }
        }
    }
    let every = ["distribution", "frequency", "heavy-hitter", "key_value", "marginals", "numeric", "rappor"];
    assert_eq!(families, every.into_iter().collect(), "every family");
    assert!(errors >= 150, "only {errors} errors were raised: the values are not bad enough to test anything");
    assert!(leaks.is_empty(), "{} errors repeat the user's data:\n{}", leaks.len(), leaks.join("\n"));
}

/// The report with its ε's number replaced by `number`.
fn epsilon(report: &str, number: &str) -> String {
    let at = report.find("\"epsilon\":").unwrap() + "\"epsilon\":".len();
    let end = at + report[at..].find([',', '}']).unwrap();
    format!("{}{number}{}", &report[..at], &report[end..])
}

/// A report a sender got wrong may carry a user's raw value or key (a
/// buggy client that posts the event itself): no refusal of it repeats
/// an unknown field's name or a wrong-typed value, for every family.
#[test]
fn no_report_refusal_repeats_a_field_or_value_it_carries() {
    let mut rng = SimulationRng::seed_from_u64(45);
    let (mut refused, mut leaks) = (0, Vec::new());
    for case in cases() {
        let metric = Metric::from_json(case.configs[0]).unwrap();
        let mut aggregator = localdp::Aggregator::new(metric.clone());
        let values = ["red", "1", "abc", r#"{"search":1}"#, r#"{"browser":"Chrome","os":1}"#];
        let report = values.iter().find_map(|value| metric.randomize_text(value, &mut rng).ok()).unwrap().to_json();
        let body = report.strip_suffix('}').unwrap();
        let payload = ["value", "bits", "attributes"].into_iter().find(|f| report.contains(&format!("\"{f}\":"))).unwrap();
        let texts = [
            (format!(r#"{body},"{EMAIL}":1}}"#), EMAIL),
            (format!(r#"{body},"{WORD}":"{EMAIL}"}}"#), WORD),
            (format!(r#"{body},"{WORD}":"{EMAIL}"}}"#), EMAIL),
            (report.replacen("\"epsilon\":", &format!(r#""epsilon":"{WORD}","x":"#), 1), WORD),
            (report.replacen(&format!("\"{payload}\":"), &format!(r#""{payload}":"{EMAIL}","y":"#), 1), EMAIL),
            (report.replacen("\"version\":1", &format!(r#""version":"{DIGITS}""#), 1), DIGITS),
            (report.replacen("\"domain\":", &format!(r#""domain":[{DIGITS}],"z":"#), 1), DIGITS),
            // Well-formed, but a version or an ε the sender chose.
            (report.replacen("\"version\":1", &format!(r#""version":{DIGITS}"#), 1), DIGITS),
            (epsilon(&report, &format!("{DIGITS}.5")), DIGITS),
            (format!(r#""{EMAIL}""#), EMAIL),
            (DIGITS.to_string(), DIGITS),
        ];
        for (text, sentinel) in &texts {
            // A report of another ε parses: the aggregate refuses it.
            let parsed = localdp::Report::from_json(text).err();
            let added = aggregator.add_json(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
            for error in parsed.into_iter().chain([added]) {
                refused += 1;
                let said = format!("{error} {error:?}");
                let pieces = echoed(sentinel, &said);
                if !pieces.is_empty() {
                    leaks.push(format!("report {text}\n  error {said}\n  repeats {pieces:?}"));
                }
            }
        }
    }
    assert!(refused >= 100, "only {refused} refusals");
    assert!(leaks.is_empty(), "{} refusals repeat what the report carried:\n{}", leaks.len(), leaks.join("\n"));
}
