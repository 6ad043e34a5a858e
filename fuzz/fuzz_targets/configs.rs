//! The configurations the report, state, columns and parquet targets run
//! against: one per payload shape of every family (and the instantaneous
//! step).

pub const CONFIGS: &[&str] = &[
    r#"{"protocol":"grr","epsilon":1,"domain":8}"#,
    r#"{"protocol":"olh","epsilon":1,"domain":["a","b","c"]}"#,
    r#"{"protocol":"ss","epsilon":1,"domain":13}"#,
    r#"{"protocol":"hr","epsilon":2,"domain":5}"#,
    r#"{"protocol":"sue","epsilon":1,"domain":9}"#,
    r#"{"protocol":"hybrid","epsilon":2,"range":[0,10]}"#,
    r#"{"protocol":"laplace","epsilon":1,"range":[[0,1],[0,5],[2,3]]}"#,
    r#"{"protocol":"dbitflip","epsilon":1,"domain":6,"d":2}"#,
    r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"candidates":["a","b"]}"#,
    r#"{"protocol":"pem","epsilon":2,"max_length":4}"#,
    r#"{"protocol":"treehist","epsilon":2,"max_length":4}"#,
    r#"{"protocol":"sfp","epsilon":2,"max_length":4,"sketch":{"hashes":4,"width":16}}"#,
    r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#,
    r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#,
    r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":8}"#,
    r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#,
    r#"{"protocol":"marginals_oue","epsilon":1,"attributes":[{"name":"a","domain":5},{"name":"b","domain":["x","y","z","u","v"]},{"name":"c","domain":5}]}"#,
    r#"{"protocol":"marginals_olh","epsilon":2,"attributes":[{"name":"a","domain":3},{"name":"b","domain":["x","y"]}]}"#,
    r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#,
];
