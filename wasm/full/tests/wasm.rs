//! wasm-bindgen tests: both modules' bindings and the core, compiled to wasm32 and run
//! in Node and in headless Chromium (scripts/test-wasm.sh runs both and fails
//! if either executed no test).
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::golden;
use js_sys::{RangeError, TypeError, JSON};
use localdp::rng::RngCore;
use localdp_wasm::{Aggregator, ClientCore};
use localdp::{SecureRng, SimulationRng};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn js(text: &str) -> JsValue {
    JSON::parse(text).unwrap()
}

/// What the JS function of `body` returns (a value JSON cannot write).
fn eval(body: &str) -> JsValue {
    js_sys::Function::new_no_args(body).call0(&JsValue::NULL).unwrap()
}

/// A clock reading for the client's ledger (ms since 1970).
const NOW: f64 = 1.7e12;

/// A client core for `config` with a fixed secret and no stored state.
fn client(config: JsValue) -> Result<ClientCore, JsValue> {
    ClientCore::new(config.unchecked_into(), &"ab".repeat(32))
}

#[wasm_bindgen_test]
fn the_secure_source_is_the_browser_or_node_csprng() {
    let mut rng = SecureRng::new().unwrap();
    let words: Vec<u64> = (0..600).map(|_| rng.next_u64()).collect();
    let mut distinct = words.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), words.len());
}

#[wasm_bindgen_test]
fn seeded_streams_and_reports_match_native() {
    assert_eq!(SimulationRng::seed_from_u64(42).next_u64(), golden::SEED_42_FIRST_WORD);
    for (protocol, payloads) in golden::REPORTS {
        assert_eq!(golden::produced(protocol), golden::expected(protocol, &payloads), "{protocol}");
    }
    for (config, expected) in golden::HEAVY {
        assert_eq!(golden::heavy_produced(config), expected, "{config}");
    }
    for (config, map, expected) in golden::KEY_VALUE {
        assert_eq!(golden::key_value_produced(config, map), expected, "{config}");
    }
    for (config, expected) in golden::MARGINALS {
        assert_eq!(golden::marginals_produced(config), expected, "{config}");
    }
}

#[wasm_bindgen_test]
fn client_and_aggregator_round_trip_every_protocol() {
    for protocol in ["grr", "sue", "oue", "blh", "olh", "hr", "ss", "auto"] {
        let config = format!(r#"{{"protocol":"{protocol}","epsilon":2,"domain":["x","y","z"]}}"#);
        let mut client = client(js(&config)).unwrap();
        let mut aggregator = Aggregator::new(js(&config).unchecked_into()).unwrap();
        for i in 0..3000 {
            let value: JsValue = ["x", "y", "x"][i % 3].into();
            let report: JsValue = client.randomize(value.unchecked_into(), NOW).unwrap().into();
            aggregator.add(report.unchecked_into()).unwrap();
        }
        assert_eq!(aggregator.n(), 3000.0);
        let estimate: JsValue = aggregator.estimate(None).unwrap().into();
        let text = JSON::stringify(&estimate).unwrap().as_string().unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        let x = parsed["estimates"][0]["frequency"].as_f64().unwrap();
        assert!((x - 2.0 / 3.0).abs() < 0.1, "{protocol}: {x}");
    }
}

#[wasm_bindgen_test]
fn errors_are_typed() {
    let range = |v: JsValue| v.is_instance_of::<RangeError>();
    let type_ = |v: JsValue| v.is_instance_of::<TypeError>();
    assert!(range(client(js(r#"{"protocol":"grr","epsilon":0,"domain":3}"#)).err().unwrap()));
    assert!(range(client(js(r#"{"protocol":"grr","epsilon":1,"domain":1}"#)).err().unwrap()));
    assert!(type_(client(js(r#"{"protocol":"grr","domain":3}"#)).err().unwrap()));
    assert!(type_(client(JsValue::from(3)).err().unwrap()));
    let mut client = client(js(r#"{"protocol":"grr","epsilon":1,"domain":3}"#)).unwrap();
    assert!(range(client.randomize(JsValue::from(3).unchecked_into(), NOW).err().unwrap()));
    assert!(range(client.randomize(JsValue::from(1.5).unchecked_into(), NOW).err().unwrap()));
    assert!(type_(client.randomize(JsValue::NULL.unchecked_into(), NOW).err().unwrap()));
    let mut aggregator =
        Aggregator::new(js(r#"{"protocol":"grr","epsilon":1,"domain":3}"#).unchecked_into()).unwrap();
    assert!(type_(aggregator.add(js(r#"{"version":1}"#).unchecked_into()).err().unwrap()));
    let mismatched = js(r#"{"version":1,"protocol":"grr","epsilon":2,"domain":"x","value":0}"#);
    let error = aggregator.add(mismatched.unchecked_into()).err().unwrap();
    assert!(range(error.clone()));
    assert_eq!(js_sys::Reflect::get(&error, &"reason".into()).unwrap(), JsValue::from("config_mismatch"));
    assert_eq!(aggregator.n(), 0.0);
}

/// The exact channel of every protocol in the wasm build (32-bit `usize`),
/// up to the largest ε accepted.
#[wasm_bindgen_test]
fn every_channel_holds_its_epsilon_in_wasm_up_to_30() {
    common::channel::every_channel_holds_its_epsilon_up_to_30();
}

/// The composed channel of every protocol with an instantaneous step, in
/// the wasm build: per-report ε never above `ε_1`.
#[wasm_bindgen_test]
fn longitudinal_channels_hold_their_per_report_epsilon_in_wasm() {
    common::channel::longitudinal_channels_hold_their_per_report_epsilon();
}

/// The ledger's charge for a memo's reports against the exact ε of their
/// joint channel, every chain, in the wasm build.
#[wasm_bindgen_test]
fn the_ledger_never_charges_a_memo_below_its_joint_channel_in_wasm() {
    common::memo::the_ledger_never_charges_a_memo_below_its_joint_channel();
    common::memo::a_memo_without_a_step_resends_one_report_charged_once();
    common::memo::the_second_report_of_an_l_grr_memo_does_not_fit_a_budget_of_twice_epsilon_1();
}

/// Configs read from JS objects: the same errors as natively.
#[wasm_bindgen_test]
fn config_errors_read_the_same_in_wasm() {
    common::readers::config_errors_read_the_same();
}

/// States and memos read from JS objects (`JSON.parse`): a version 1 state
/// carries on, its memos are reused.
#[wasm_bindgen_test]
fn version_1_states_carry_on_without_a_reset_in_wasm() {
    common::readers::version_1_states_carry_on_without_a_reset();
}

/// Hostile states read from JS objects (nesting `JSON.parse` takes a
/// hundred thousand levels deep, a time above 2^53): counted resets, never
/// an error that sticks.
#[wasm_bindgen_test]
fn hostile_states_are_counted_resets_in_wasm() {
    common::readers::hostile_states_are_counted_resets();
}

/// Report texts through `JSON.parse` and the object reader: the same
/// reports and reasons as natively.
#[wasm_bindgen_test]
fn report_reasons_are_the_same_in_every_build_in_wasm() {
    common::readers::report_reasons_are_the_same_in_every_build();
}

/// A report object whose getter or Proxy throws is malformed and counted,
/// and an iterable of reports that throws is an error: nothing throws
/// through the module, which stays usable.
#[wasm_bindgen_test]
fn throwing_report_objects_are_malformed_not_exceptions() {
    let config = js(r#"{"protocol":"grr","epsilon":1,"domain":3}"#);
    let mut aggregator = Aggregator::new(config.clone().unchecked_into()).unwrap();
    let hostile = [
        eval("return { get version() { throw new Error('getter') } }"),
        eval("const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy"),
        eval("return { version: 1, protocol: 'grr', epsilon: 1, domain: 'x', value: [new Proxy([], { get() { throw 1 } })] }"),
    ];
    for report in &hostile {
        let error = aggregator.add(report.clone().unchecked_into()).err().unwrap();
        assert_eq!(js_sys::Reflect::get(&error, &"reason".into()).unwrap(), JsValue::from("malformed"));
    }
    let many = js_sys::Array::of2(&hostile[0], &hostile[1]);
    aggregator.add_many(many.unchecked_into()).unwrap();
    // An iterable that throws is the error addMany returns; nothing is added.
    let throwing = eval("return { *[Symbol.iterator]() { yield 1; throw new Error('iterator') } }");
    let error = aggregator.add_many(throwing.unchecked_into()).err().unwrap();
    assert_eq!(js_sys::Error::from(error).message(), "iterator");
    let mut client = client(config).unwrap();
    let report = client.randomize(JsValue::from(1).unchecked_into(), NOW).unwrap();
    aggregator.add(report.unchecked_into()).unwrap();
    assert_eq!(aggregator.n(), 1.0);
    let rejected = js_sys::Reflect::get(&aggregator.rejected(), &"malformed".into()).unwrap();
    assert_eq!(rejected, JsValue::from(5));
}

/// A value whose array check or copy throws (a revoked Proxy, a Proxy of
/// an array whose item throws) is the error the client returns, not an
/// exception through the module (tests/js/client.test.mjs checks through
/// the bindings that the client stays usable).
#[wasm_bindgen_test]
fn throwing_values_leave_the_client_usable() {
    let mut client = client(js(r#"{"protocol":"duchi","epsilon":1,"range":[[0,1],[0,1]]}"#)).unwrap();
    let revoked = eval("const p = Proxy.revocable([], {}); p.revoke(); return p.proxy");
    let error = client.randomize(revoked.unchecked_into(), NOW).err().unwrap();
    assert!(error.is_instance_of::<TypeError>(), "Array.isArray's TypeError");
    let item = eval("return new Proxy([0.5, 0.5], { get(t, k) { if (k === '0') throw 1; return Reflect.get(t, k) } })");
    assert_eq!(client.randomize(item.unchecked_into(), NOW).err(), Some(JsValue::from(1)));
    assert!(client.randomize(js("[0.5, 0.5]").unchecked_into(), NOW).is_ok());
}

/// At ε = 25 OLH's `g` passes 2^32, which once truncated to 0 through a
/// 32-bit `usize` here.
#[wasm_bindgen_test]
fn local_hashing_at_large_epsilon_stays_in_range_in_wasm() {
    common::channel::local_hashing_at_large_epsilon_stays_in_range();
}

#[wasm_bindgen_test]
fn errors_carry_their_fields_as_properties() {
    let get = |e: &JsValue, name: &str| js_sys::Reflect::get(e, &name.into()).unwrap();
    let error = client(js(r#"{"protocol":"grr","epsilon":1,"domain":1}"#)).err().unwrap();
    assert!(error.is_instance_of::<RangeError>());
    assert_eq!(get(&error, "parameter"), JsValue::from("domain"));
    let error = client(js(r#"{"protocol":"grr","epsilon":1,"domain":3,"memoize":1}"#))
        .err()
        .unwrap();
    assert!(error.is_instance_of::<TypeError>());
    assert_eq!(get(&error, "key"), JsValue::from("memoize"));
    let config = js(r#"{"protocol":"grr","epsilon":1,"domain":3,"budget":{"epsilon":1.5,"window":"1d"}}"#);
    let mut client = client(config).unwrap();
    client.randomize(JsValue::from(1).unchecked_into(), NOW).unwrap();
    let error = client.randomize(JsValue::from(2).unchecked_into(), NOW).err().unwrap();
    assert_eq!(get(&error, "name"), JsValue::from("PrivacyBudgetExceeded"));
    assert_eq!((get(&error, "cost"), get(&error, "spent"), get(&error, "budget")), (1.0.into(), 1.0.into(), 1.5.into()));
    let message = get(&error, "message").as_string().unwrap();
    assert_eq!(message, "privacy budget exceeded: this report would spend 1.0 more, with 1.0 of 1.5 spent in the window");
}

/// An estimate of nothing is an `Error` named `NoReports` with a reason,
/// like the other named errors.
#[wasm_bindgen_test]
fn an_empty_estimate_is_a_named_error() {
    let aggregator = Aggregator::new(js(r#"{"protocol":"grr","epsilon":1,"domain":3}"#).unchecked_into()).unwrap();
    let error = aggregator.estimate(None).err().unwrap();
    assert_eq!(js_sys::Reflect::get(&error, &"name".into()).unwrap(), JsValue::from("NoReports"));
    assert_eq!(js_sys::Reflect::get(&error, &"reason".into()).unwrap(), JsValue::from("no_reports"));
}
