//! The client's stored state as bytes: states that the release before the
//! byte form wrote (JSON, formats 3 and 4) load with their ledger and memos
//! and are written back as bytes; bytes that are truncated or corrupted are
//! a typed error, and the client counts them as a reset, never a panic.

use localdp::client::{Client, ClientState};
use localdp::report::BitVector;
use localdp::{Report, SimulationRng, StateError};
use serde_json::Value;

/// One state per family as the release before the byte form (469381b)
/// wrote it, with its config, secret, values, reports and spent ε.
const FIXTURES: &str = include_str!("fixtures/client-states-v3-v4.json");

fn ledger_of(json: &Value) -> Vec<(u64, u64)> {
    json["ledger"].as_array().unwrap().iter().map(|e| (e[0].as_u64().unwrap(), e[1].as_f64().unwrap().to_bits())).collect()
}

#[test]
fn states_of_the_release_before_load_with_their_ledger_and_memos_and_are_written_as_bytes() {
    let fixtures: Vec<Value> = serde_json::from_str(FIXTURES).unwrap();
    assert_eq!(fixtures.len(), 10);
    let versions: Vec<u64> = fixtures.iter().map(|f| serde_json::from_str::<Value>(f["state"].as_str().unwrap()).unwrap()["version"].as_u64().unwrap()).collect();
    assert!(versions.contains(&3) && versions.contains(&4), "{versions:?}");
    let mut rng = SimulationRng::seed_from_u64(4141);
    for fixture in &fixtures {
        let config = fixture["config"].to_string();
        let secret = fixture["secret"].as_str().unwrap();
        let text = fixture["state"].as_str().unwrap();
        let json: Value = serde_json::from_str(text).unwrap();
        let now = fixture["now"].as_u64().unwrap();
        let spent = fixture["spent"].as_f64().unwrap();
        let client = Client::new(&config, secret, Some(text.as_bytes())).unwrap();
        assert_eq!((client.resets(), client.spent(now)), (0, spent), "{config}: read, not reset");

        // Migrated: the bytes hold the same ledger and memos, exactly.
        let bytes = client.state_bytes();
        assert!(bytes.starts_with(b"LDPC"), "{config}");
        assert!(bytes.len() < text.len(), "{config}: {} bytes against {} of JSON", bytes.len(), text.len());
        let state = ClientState::from_bytes(&bytes).unwrap();
        let ledger: Vec<(u64, u64)> = state.ledger.iter().map(|&(t, e)| (t, e.to_bits())).collect();
        assert_eq!(ledger, ledger_of(&json), "{config}: the ledger is kept");
        // Each memo kept, in the byte form when it was a report's JSON
        // (RAPPOR's permanent bits: hex in JSON, their bytes now).
        let memos: Vec<(&str, &[u8])> = state.memos.iter().map(|(k, v)| (k, v.as_slice())).collect();
        let stored: Vec<(&str, Vec<u8>)> = json["memos"].as_object().unwrap().iter().map(|(k, v)| {
            let memo = v.as_str().unwrap();
            let bits = || BitVector::from_hex(memo).unwrap().as_bytes().to_vec();
            (k.as_str(), Report::from_json(memo).map_or_else(|_| bits(), |r| r.to_memo()))
        }).collect();
        let stored: Vec<(&str, &[u8])> = stored.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        assert_eq!(memos, stored, "{config}: the memos are kept");
        assert_eq!(state.metric, json["metric"].as_str().unwrap(), "{config}");

        // Charged from the bytes: the first value again, then a value not yet seen.
        let mut client = Client::new(&config, secret, Some(&bytes)).unwrap();
        assert_eq!((client.resets(), client.spent(now)), (0, spent), "{config}");
        let values = fixture["values"].as_array().unwrap();
        let first = values[0].as_str().unwrap();
        let again = client.randomize_text(first, now, &mut rng).unwrap();
        // Without an instantaneous step a memo's repeat is free (RAPPOR
        // memoizes always, and randomizes its permanent bits on every report).
        let stepless = fixture["config"].get("instantaneous_epsilon").is_none();
        let memoized = fixture["config"]["memoize"] == true && stepless;
        let free = memoized || (fixture["config"]["protocol"] == "rappor" && stepless);
        if memoized {
            // The permanent response of the release before, sent again.
            let report: Value = serde_json::from_str(&again.to_json()).unwrap();
            assert_eq!(report, fixture["reports"][0], "{config}: the memo is sent again");
        }
        if free {
            assert_eq!(client.spent(now), spent, "{config}: a memo hit costs nothing");
        } else {
            assert!(client.spent(now) > spent, "{config}: a fresh report (or a memo's next step) is charged");
        }
        let after = ClientState::from_bytes(&client.state_bytes()).unwrap();
        let before: Vec<(u64, u64)> = after.ledger.iter().map(|&(t, e)| (t, e.to_bits())).take(ledger.len()).collect();
        assert_eq!(before, ledger, "{config}: earlier charges stay in the ledger");
        assert_eq!(after.ledger.len(), ledger.len() + usize::from(!free), "{config}");
    }
}

/// A state with memos, a ledger, draws and a partly charged memo.
fn full_state() -> (String, String, Vec<u8>) {
    let config = r#"{"protocol":"olh","epsilon":2,"domain":16,"memoize":true,"instantaneous_epsilon":1,"budget":{"epsilon":10,"window":"1d"}}"#;
    let mut rng = SimulationRng::seed_from_u64(7);
    let secret = localdp::client::new_secret(&mut rng);
    let mut client = Client::new(config, &secret, None).unwrap();
    for (i, value) in ["3", "5", "3"].into_iter().enumerate() {
        client.randomize_text(value, 1000 * i as u64, &mut rng).unwrap();
    }
    let bytes = client.state_bytes();
    let state = ClientState::from_bytes(&bytes).unwrap();
    assert!(state.draws.is_some() && !state.charged.is_empty() && state.memos.len() == 2 && state.ledger.len() == 3);
    (config.to_string(), secret, bytes)
}

#[test]
fn truncated_or_corrupted_bytes_are_a_typed_error_and_a_counted_reset() {
    let (config, secret, bytes) = full_state();
    let spent = Client::new(&config, &secret, Some(&bytes)).unwrap().spent(3000);
    assert!(spent > 2.0);
    let mut states: Vec<(String, Vec<u8>)> = (0..bytes.len()).map(|n| (format!("truncated to {n}"), bytes[..n].to_vec())).collect();
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut corrupt = bytes.clone();
            corrupt[at] ^= flip;
            states.push((format!("byte {at} ^ {flip:#x}"), corrupt));
        }
    }
    states.push(("a byte after".into(), [&bytes[..], &[0]].concat()));
    for (what, state) in states {
        let error = ClientState::from_bytes(&state).expect_err(&what);
        assert!(
            matches!(
                error,
                StateError::Truncated | StateError::NotAState | StateError::UnsupportedVersion { .. } | StateError::Checksum | StateError::TrailingBytes
            ),
            "{what}: {error:?}"
        );
        // A client counts it as a reset; one that holds a ledger keeps it.
        let fresh = Client::new(&config, &secret, Some(&state)).unwrap();
        assert_eq!((fresh.resets(), fresh.spent(3000)), (1, 0.0), "{what}");
        let mut open = Client::new(&config, &secret, Some(&bytes)).unwrap();
        open.load(&secret, Some(&state)).unwrap();
        assert_eq!((open.resets(), open.spent(3000)), (1, spent), "{what}: the ledger held in memory stays");
    }
}

#[test]
fn a_body_that_passes_its_checksum_is_still_read_with_care() {
    // Bytes resealed with a valid checksum (what a fuzzer or an editor
    // makes): every length and every byte value of the body is an error or
    // a state, never a panic, and a state read back writes the same bytes.
    let (config, secret, bytes) = full_state();
    let body = &bytes[13..];
    let seal = |body: &[u8]| {
        let mut out = bytes[..5].to_vec();
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&localdp::state::crc32(body).to_le_bytes());
        out.extend_from_slice(body);
        out
    };
    assert_eq!(seal(body), bytes);
    let mut read = 0;
    for at in 0..body.len() {
        for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            let mut edited = body.to_vec();
            edited[at] = value;
            let sealed = seal(&edited);
            if let Ok(state) = ClientState::from_bytes(&sealed) {
                read += 1;
                assert_eq!(state.to_bytes(), sealed, "byte {at} = {value:#x}: one encoding");
            }
            Client::new(&config, &secret, Some(&sealed)).unwrap();
        }
        assert!(ClientState::from_bytes(&seal(&body[..at])).is_err(), "body cut at {at}");
    }
    assert!(read > 0);
}
