//! What the hand-written readers (configs, stored states, memos) must give
//! in every build: natively they read serde_json objects, in the wasm build
//! JS objects (`JSON.parse`), so the same checks run in both.

use localdp::client::{new_secret, Client, STATE_VERSION};
use localdp::{Metric, SimulationRng};

/// Config errors say the same in both builds, word for word, and name the
/// key at fault; `2.0` is the integer 2, and `null` is an absent key where
/// the key is optional (not where it has a default).
pub fn config_errors_read_the_same() {
    let malformed = |key: &str, detail: &str| localdp::Error::MalformedConfig { key: Some(key.into()), detail: detail.into() };
    for (config, error) in [
        (
            r#"{"protocol":"grr","epsilon":1,"domain":4,"x":1}"#,
            malformed("x", "unknown field `x`, expected one of `protocol`, `epsilon`, `domain`, `d`, `instantaneous_epsilon`, `memoize`, `budget`"),
        ),
        (
            r#"{"protocol":"grr","epsilon":1,"domain":4,"memoise":true}"#,
            malformed(
                "memoise",
                "unknown field `memoise`, expected one of `protocol`, `epsilon`, `domain`, `d`, `instantaneous_epsilon`, `memoize`, `budget`; did you mean `memoize`?",
            ),
        ),
        (r#"{"protocol":"grr","domain":4}"#, malformed("epsilon", "missing field `epsilon`")),
        (r#"{"protocol":"rappor","bits":"many"}"#, malformed("bits", r#"invalid type: string "many", expected u64"#)),
        (r#"{"protocol":"rappor","bits":1.5}"#, malformed("bits", "invalid type: floating point `1.5`, expected u64")),
        (r#"{"protocol":"rappor","f":"x\"\n"}"#, malformed("f", r#"invalid type: string "x\"\n", expected f64"#)),
        (r#"{"protocol":"rappor","candidates":["a",true]}"#, malformed("candidates", "invalid type: boolean `true`, expected a string")),
        (r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":-1}"#, malformed("d", "invalid value: integer `-1`, expected u64")),
        (r#"{"protocol":"dbitflip","epsilon":1,"domain":4,"d":1e300}"#, malformed("d", "invalid type: floating point `1e+300`, expected u64")),
        (r#"{"protocol":"rappor","f":null}"#, malformed("f", "invalid type: null, expected f64")),
        (r#"{"protocol":"rappor","candidates":null}"#, malformed("candidates", "invalid type: null, expected a sequence")),
        (r#"{"protocol":"hcms","epsilon":1,"sketch":{"rows":1}}"#, malformed("sketch.rows", "unknown field `rows`, expected one of `hashes`, `width`")),
        (r#"{"protocol":"hcms","epsilon":1,"sketch":[1]}"#, malformed("sketch", "invalid type: sequence, expected an object")),
        (r#"{"protocol":"square_wave","epsilon":1,"range":[1,2,3]}"#, malformed("range", "invalid length 3, expected an array of length 2")),
        (r#"{"protocol":"square_wave","epsilon":1,"range":{}}"#, malformed("range", "invalid type: map, expected an array of length 2")),
    ] {
        assert_eq!(Metric::from_json(config).unwrap_err(), error, "{config}");
    }
    // The Rust API's types deserialize through the same readers.
    assert_eq!(serde_json::from_str::<localdp::DomainSpec>("4").unwrap(), localdp::DomainSpec::Size(4));
    assert_eq!(serde_json::from_str::<localdp::RangeSpec>("[0,1]").unwrap(), localdp::RangeSpec::Scalar([0.0, 1.0]));
    let sketch = serde_json::from_str::<localdp::heavy::SketchConfig>(r#"{"hashes":2}"#).unwrap();
    assert_eq!((sketch.hashes, sketch.width), (Some(2), None));
    assert!(serde_json::from_str::<localdp::heavy::SketchConfig>(r#"{"rows":2}"#).is_err());
    let same = |a: &str, b: &str| assert_eq!(Metric::from_json(a).unwrap(), Metric::from_json(b).unwrap(), "{a}");
    same(r#"{"protocol":"dbitflip","epsilon":1,"domain":8,"d":2.0}"#, r#"{"protocol":"dbitflip","epsilon":1,"domain":8,"d":2}"#);
    same(r#"{"protocol":"pem","epsilon":2,"max_length":4,"top":null}"#, r#"{"protocol":"pem","epsilon":2,"max_length":4}"#);
}

/// States stored by earlier formats (version 2: without the secret's id and
/// the longest window; version 1: also the install's draws under
/// per-protocol names) are read, not reset: the same permanent responses,
/// draws and ledger carry on (a reset would mean new permanent responses,
/// i.e. more ε).
pub fn version_1_states_carry_on_without_a_reset() {
    let cases = [
        (r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,100],"memoize":true,"budget":{"epsilon":5,"window":"1d"}}"#, "37.3", "alpha"),
        (r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":8,"budget":{"epsilon":50,"window":"1d"}}"#, "word", "cohort"),
        (r#"{"protocol":"dbitflip","epsilon":1,"domain":6,"memoize":true}"#, "4", "buckets"),
        (r#"{"protocol":"grr","epsilon":1,"domain":6,"memoize":true}"#, "4", ""),
    ];
    let mut rng = SimulationRng::seed_from_u64(41);
    for (config, value, field) in cases {
        let secret = new_secret(&mut rng);
        let mut first = Client::new(config, &secret, None).unwrap();
        let report = first.randomize_text(value, 1000, &mut rng).unwrap();
        // The same state as version 2 wrote it, and as version 1 did.
        let mut v2 = super::legacy_state(&first);
        let state = v2.as_object_mut().unwrap();
        state.remove("secret_id");
        state.remove("window_ms");
        state.insert("version".into(), 2.into());
        let second = Client::new(config, &secret, Some(v2.to_string().as_bytes())).unwrap();
        assert_eq!(second.resets(), 0, "{config}: a version 2 state is not a reset");
        assert_eq!(second.state_bytes(), first.state_bytes(), "{config}: read as it was");
        let mut v1 = v2;
        let state = v1.as_object_mut().unwrap();
        state.insert("version".into(), 1.into());
        let draws = state.remove("draws").unwrap();
        match field {
            "" => assert!(draws.is_null()),
            "buckets" => {
                state.insert(field.into(), draws);
            }
            _ => {
                state.insert(field.into(), draws[0].clone());
            }
        }
        let mut second = Client::new(config, &secret, Some(v1.to_string().as_bytes())).unwrap();
        assert_eq!(second.resets(), 0, "{config}: a version 1 state is not a reset");
        assert_eq!(second.spent(1000), first.spent(1000), "{config}: the ledger carries on");
        let again = second.randomize_text(value, 2000, &mut rng).unwrap();
        assert_eq!(second.state_bytes(), first.state_bytes(), "{config}: no new memo, no new charge");
        if field != "cohort" {
            assert_eq!(again, report, "{config}: the permanent response is reused");
        }
    }
}

/// A stored state that is hostile or corrupt in any way the reader can see
/// (`null` for a list, nesting far past any field's depth, another format
/// version) is a counted reset, never an error that sticks; one with a time
/// JSON carries only natively still leaves a client that works.
pub fn hostile_states_are_counted_resets() {
    let config = r#"{"protocol":"grr","epsilon":1,"domain":4,"memoize":true,"budget":{"epsilon":10,"window":"1d"}}"#;
    let mut rng = SimulationRng::seed_from_u64(9);
    let secret = new_secret(&mut rng);
    let mut client = Client::new(config, &secret, None).unwrap();
    client.randomize_text("1", 1000, &mut rng).unwrap();
    let good = super::legacy_state(&client);
    // The stored state with `key` set to `value`, written as JSON text.
    let with = |key: &str, value: &str| {
        let mut state = good.clone();
        state[key] = "HERE".into();
        state.to_string().replace("\"HERE\"", value)
    };
    let deep = ["[".repeat(100_000), "]".repeat(100_000)].concat();
    for state in [
        with("ledger", "null"),
        with("memos", "null"),
        with("ledger", &deep),
        with("ledger", &["[", &deep, "]"].concat()),
        with("memos", &["{\"k\":", &deep, "}"].concat()),
        with("version", &(STATE_VERSION + 1).to_string()),
    ] {
        let mut reader = Client::new(config, &secret, Some(state.as_bytes())).unwrap();
        assert_eq!(reader.resets(), 1, "{}", &state[..state.len().min(120)]);
        reader.randomize_text("2", 2000, &mut rng).unwrap();
        assert_eq!(Client::new(config, &secret, Some(&reader.state_bytes())).unwrap().resets(), 0);
    }
    let late = with("ledger", "[[9007199254740993,1.0]]");
    let mut reader = Client::new(config, &secret, Some(late.as_bytes())).unwrap();
    reader.randomize_text("2", 2000, &mut rng).unwrap();
    let again = Client::new(config, &secret, Some(&reader.state_bytes())).unwrap();
    assert_eq!((again.resets(), again.spent(2000)), (0, reader.spent(2000)), "a state read back can be stored again");
}

/// A report's text reads alike in every build (natively serde_json's
/// derived reader, in wasm `JSON.parse` and the object reader): the same
/// report, or the same reason to refuse it. (Known apart, in text no client
/// writes: a repeated key, which serde_json refuses and `JSON.parse` takes
/// the last of; `2.0` for an integer, which JS cannot tell from 2; an
/// integer above 2^53, which JS cannot carry (natively parsed, then out of
/// range); a lone UTF-16 surrogate escaped in a string, malformed natively,
/// a replacement character and so a mismatch in wasm.)
pub fn report_reasons_are_the_same_in_every_build() {
    use localdp::{Error, Rejection, Report};
    let malformed = Some(Rejection::Malformed);
    let report = |payload: &str| ["{\"version\":1,\"protocol\":\"grr\",\"epsilon\":1.5,\"domain\":\"d\",", payload, "}"].concat();
    let cases: Vec<(String, Option<Rejection>)> = vec![
        (report("\"value\":2"), None),
        (report("\"value\":9007199254740991"), None),
        (report("\"seed\":4294967295,\"value\":1"), None),
        (report("\"value\":2,\"seed\":null"), None),
        (report("\"value\":2.5"), malformed),
        (report("\"value\":-1"), malformed),
        (report("\"value\":-0"), malformed),
        (report("\"seed\":4294967296,\"value\":1"), malformed),
        (report("\"value\":2,\"x\":1"), malformed),
        (report("\"value\":null"), malformed),
        (report("\"bits\":\"zz\""), malformed),
        (report("\"attributes\":[0],\"values\":[1.5]"), malformed),
        (report("\"value\":2").replace("\"version\":1", "\"version\":2"), Some(Rejection::UnsupportedVersion)),
        (r#"{"version":2,"x":"y"}"#.into(), Some(Rejection::UnsupportedVersion)),
        (report("\"value\":2").replace("\"version\":1", "\"version\":\"1\""), malformed),
        (report("\"value\":2").replace("grr", "nope"), Some(Rejection::ConfigMismatch)),
        (r#"[1,"grr",1.5,"d",null,2]"#.into(), malformed),
        (" [2]".into(), malformed),
        ("null".into(), malformed),
        ("\"text\"".into(), malformed),
        ("{}".into(), malformed),
        ("not json".into(), malformed),
    ];
    let reason = |text: &[u8]| match Report::from_json(text) {
        Ok(_) => None,
        Err(Error::Rejected { reason, .. }) => Some(reason),
        Err(other) => panic!("not a rejection: {other:?}"),
    };
    for (text, expected) in &cases {
        assert_eq!(reason(text.as_bytes()), *expected, "{text}");
    }
    // Bytes that are not UTF-8, inside a string the native reader skips.
    assert_eq!(reason(b"{\"version\":2,\"x\":\"\xff\"}"), malformed);
}
