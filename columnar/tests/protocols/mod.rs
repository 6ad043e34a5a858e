//! One config of every protocol (and the payload shapes that change the
//! schema), with values to randomize: shared by this crate's tests and the
//! CLI's (cli/tests/columnar.rs includes this file).
#![allow(dead_code)]

/// `(config, values)`: reports of `config` randomize the values in turn.
pub const PROTOCOLS: &[(&str, &[&str])] = &[
    (r#"{"protocol":"grr","epsilon":1,"domain":8}"#, &["0", "3", "7", "3"]),
    (r#"{"protocol":"sue","epsilon":1,"domain":9}"#, &["0", "8", "4"]),
    (r#"{"protocol":"oue","epsilon":1.5,"domain":["a","b","c","d"]}"#, &["a", "d", "b"]),
    (r#"{"protocol":"blh","epsilon":1,"domain":6}"#, &["1", "5"]),
    (r#"{"protocol":"olh","epsilon":2,"domain":["x","y","z"]}"#, &["x", "z", "z"]),
    (r#"{"protocol":"hr","epsilon":2,"domain":5}"#, &["0", "4"]),
    (r#"{"protocol":"hrr","epsilon":1,"domain":12}"#, &["2", "11"]),
    (r#"{"protocol":"ss","epsilon":1,"domain":13}"#, &["0", "12", "6"]),
    (r#"{"protocol":"dbitflip","epsilon":1,"domain":6,"d":2}"#, &["0", "5", "2"]),
    (r#"{"protocol":"duchi","epsilon":1,"range":[0,1]}"#, &["0.2", "0.9"]),
    (r#"{"protocol":"laplace","epsilon":1,"range":[[0,1],[0,5],[2,3]]}"#, &["0.5,1,2.5", "1,5,3"]),
    (r#"{"protocol":"piecewise","epsilon":2,"range":[-1,1]}"#, &["-0.5", "0.75"]),
    (r#"{"protocol":"hybrid","epsilon":2,"range":[0,10]}"#, &["1", "9.5"]),
    (r#"{"protocol":"one_bit_mean","epsilon":1,"range":[0,100]}"#, &["20", "80"]),
    (r#"{"protocol":"rappor","bits":16,"hashes":2,"cohorts":4,"candidates":["a","b"]}"#, &["a", "b", "c"]),
    (r#"{"protocol":"cms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#, &["a", "b", "q"]),
    (r#"{"protocol":"hcms","epsilon":1,"sketch":{"hashes":4,"width":16},"candidates":["a","b"]}"#, &["a", "b"]),
    (r#"{"protocol":"pem","epsilon":2,"max_length":4}"#, &["/a", "/b", "/a"]),
    (r#"{"protocol":"treehist","epsilon":2,"max_length":4}"#, &["/a", "/bc"]),
    (r#"{"protocol":"sfp","epsilon":2,"max_length":4,"sketch":{"hashes":4,"width":16}}"#, &["/a", "/b"]),
    (r#"{"protocol":"square_wave","epsilon":1,"range":[0,1],"bins":8}"#, &["0.1", "0.7"]),
    (r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":16}"#, &["0.1", "0.4", "0.95"]),
    (r#"{"protocol":"hierarchical","epsilon":1,"range":[0,1],"bins":1024}"#, &["0.1", "0.4", "0.95"]),
    (r#"{"protocol":"grr","epsilon":2,"instantaneous_epsilon":1,"domain":4,"memoize":true}"#, &["1", "2"]),
    (r#"{"protocol":"pckv_grr","epsilon":1,"keys":["a","b","c"],"range":[0,10],"pad":2}"#, &[r#"{"a":1,"b":9}"#, "{}", r#"{"c":4}"#]),
    (r#"{"protocol":"pckv_ue","epsilon":1,"keys":5,"range":[0,10],"pad":2}"#, &[r#"{"0":1,"3":9}"#, "{}"]),
    (
        r#"{"protocol":"marginals_oue","epsilon":1,"attributes":[{"name":"a","domain":3},{"name":"b","domain":["x","y"]},{"name":"c","domain":2}]}"#,
        &[r#"{"a":0,"b":"x","c":1}"#, r#"{"a":2,"b":"y","c":0}"#],
    ),
    (
        r#"{"protocol":"marginals_olh","epsilon":1,"attributes":[{"name":"a","domain":3},{"name":"b","domain":["x","y"]}]}"#,
        &[r#"{"a":1,"b":"y"}"#, r#"{"a":2,"b":"x"}"#],
    ),
];

/// The `i`th value of a config's list, cycling.
pub fn value<'a>(values: &[&'a str], i: usize) -> &'a str {
    values[i % values.len()]
}
