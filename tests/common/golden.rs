//! Golden outputs for fixed seeds: any change to the samplers, the hash or
//! the wire format changes them. Asserted natively (tests/golden.rs) and in
//! wasm (tests/wasm.rs), so both builds produce identical reports.

/// The first word of `SimulationRng::seed_from_u64(42)`.
pub const SEED_42_FIRST_WORD: u64 = 9482535800248027256;

const LABELS: &str = r#"["alpha","beta","gamma","delta","epsilon","zeta","eta","theta","iota","kappa"]"#;

/// `(protocol, the three reports of values 0, 1, 2 from SimulationRng::seed_from_u64(42))`
/// at ε = 1.5 over [`LABELS`].
pub const REPORTS: [(&str, [&str; 3]); 7] = [
    ("grr", [r#""value":6"#, r#""value":6"#, r#""value":6"#]),
    ("sue", [r#""bits":"1d01""#, r#""bits":"6301""#, r#""bits":"8501""#]),
    ("oue", [r#""bits":"1d01""#, r#""bits":"2300""#, r#""bits":"0500""#]),
    ("blh", [r#""seed":3618982008,"value":0"#, r#""seed":1761790457,"value":0"#, r#""seed":2844979797,"value":0"#]),
    ("olh", [r#""seed":3618982008,"value":0"#, r#""seed":1761790457,"value":0"#, r#""seed":2844979797,"value":1"#]),
    ("hr", [r#""value":8"#, r#""value":10"#, r#""value":10"#]),
    ("ss", [r#""bits":"4100""#, r#""bits":"4002""#, r#""bits":"2800""#]),
];

/// The config of a golden protocol.
pub fn config(protocol: &str) -> String {
    format!(r#"{{"protocol":"{protocol}","epsilon":1.5,"domain":{LABELS}}}"#)
}

/// The full expected report lines of a golden protocol.
pub fn expected(protocol: &str, payloads: &[&str; 3]) -> Vec<String> {
    payloads
        .iter()
        .map(|p| format!(r#"{{"version":1,"protocol":"{protocol}","epsilon":1.5,"domain":"823749ec98376e13",{p}}}"#))
        .collect()
}

/// The reports the current build produces for a golden protocol.
pub fn produced(protocol: &str) -> Vec<String> {
    let oracle = localdp::FrequencyOracle::from_json(&config(protocol)).expect("valid");
    let mut rng = localdp::SimulationRng::seed_from_u64(42);
    (0..3).map(|i| oracle.randomize_index(i, &mut rng).expect("an index of the domain").to_json()).collect()
}

/// Heavy-hitter configs (ε with a fraction, which JSON writes alike natively
/// and in wasm) whose report of `"/checkout"` from
/// `SimulationRng::seed_from_u64(42)` is fixed: the public hashes (prefix
/// keys, sketch columns, fragment keys) must agree natively and in wasm.
pub const HEAVY: [(&str, &str); 5] = [
    (
        r#"{"protocol":"pem","epsilon":2.5,"max_length":16}"#,
        r#"{"version":1,"protocol":"pem","epsilon":2.5,"domain":"602bf07963a61008","seed":2736219033,"value":8,"cohort":8}"#,
    ),
    (
        r#"{"protocol":"treehist","epsilon":2.5,"max_length":16}"#,
        r#"{"version":1,"protocol":"treehist","epsilon":2.5,"domain":"04cd6229f6cb6fc5","seed":2736219033,"value":8,"cohort":120}"#,
    ),
    (
        r#"{"protocol":"sfp","epsilon":2.5,"max_length":16,"sketch":{"hashes":8,"width":64}}"#,
        r#"{"version":1,"protocol":"sfp","epsilon":2.5,"domain":"1222fea74078f8e7","seed":21,"value":1,"cohort":129}"#,
    ),
    (
        r#"{"protocol":"cms","epsilon":2.5,"sketch":{"hashes":8,"width":16}}"#,
        r#"{"version":1,"protocol":"cms","epsilon":2.5,"domain":"7aa2c860e5b011da","bits":"2218","cohort":0}"#,
    ),
    (
        r#"{"protocol":"hcms","epsilon":2.5,"sketch":{"hashes":8,"width":64}}"#,
        r#"{"version":1,"protocol":"hcms","epsilon":2.5,"domain":"b40af69e987f8838","seed":25,"value":0,"cohort":0}"#,
    ),
];

/// The report line the current build produces for a heavy-hitter config.
pub fn heavy_produced(config: &str) -> String {
    let metric = localdp::HeavyHitterMetric::from_json(config).expect("valid");
    let mut rng = localdp::SimulationRng::seed_from_u64(42);
    localdp::Randomizer::randomize(&metric, "/checkout", &mut rng).expect("fits").to_json()
}

/// Key-value configs and a user's map whose report from
/// `SimulationRng::seed_from_u64(42)` is fixed (the map parsed by
/// serde_json natively and by `JSON.parse` in wasm must give the same
/// pairs, the same coins, the same report).
pub const KEY_VALUE: [(&str, &str, &str); 2] = [
    (
        r#"{"protocol":"pckv_grr","epsilon":1.5,"keys":["search","share","print"],"range":[0,60],"pad":2}"#,
        r#"{"print": 12.5, "search": 60}"#,
        r#"{"version":1,"protocol":"pckv_grr","epsilon":1.5,"domain":"9c7d371b30daad55","value":3}"#,
    ),
    (
        r#"{"protocol":"pckv_ue","epsilon":1.5,"keys":20,"range":[0,60],"pad":3}"#,
        r#"{"3": 12.5, "17": 75, "0": -1}"#,
        r#"{"version":1,"protocol":"pckv_ue","epsilon":1.5,"domain":"2f6003345da22d1e","bits":"080808000004"}"#,
    ),
];

/// The report line the current build produces for a key-value config and map.
pub fn key_value_produced(config: &str, map: &str) -> String {
    let metric = localdp::KeyValueMetric::from_json(config).expect("valid");
    let mut rng = localdp::SimulationRng::seed_from_u64(42);
    metric.randomize_map(map, &mut rng).expect("a map of the keys").to_json()
}

/// Marginals configs (ε with a fraction) whose report of [`MARGINALS_EVENT`]
/// from `SimulationRng::seed_from_u64(42)` is fixed: the set drawn, the
/// cell's mixed radix and the oracle's coins must agree natively and in
/// wasm.
pub const MARGINALS: [(&str, &str); 2] = [
    (
        r#"{"protocol":"marginals_oue","epsilon":1.5,"attributes":[{"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"os","domain":4},{"name":"mobile","domain":2}]}"#,
        r#"{"version":1,"protocol":"marginals_oue","epsilon":1.5,"domain":"de7930f2b0e6463b","bits":"8e0a","cohort":0}"#,
    ),
    (
        r#"{"protocol":"marginals_olh","epsilon":1.5,"way":3,"attributes":[{"name":"browser","domain":["Chrome","Firefox","Safari"]},{"name":"os","domain":4},{"name":"mobile","domain":2}]}"#,
        r#"{"version":1,"protocol":"marginals_olh","epsilon":1.5,"domain":"6571929d676a5a77","seed":2736219033,"value":1,"cohort":0}"#,
    ),
];

/// The event of the marginals goldens.
pub const MARGINALS_EVENT: &str = r#"{"browser":"Safari","os":3,"mobile":"1"}"#;

/// The report line the current build produces for a marginals config.
pub fn marginals_produced(config: &str) -> String {
    let metric = localdp::MarginalsMetric::from_json(config).expect("valid");
    let mut rng = localdp::SimulationRng::seed_from_u64(42);
    localdp::Randomizer::randomize(&metric, MARGINALS_EVENT, &mut rng).expect("an event").to_json()
}
