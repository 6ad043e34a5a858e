//! Untrusted client state bytes (what a page's storage hands back, which
//! anything with access to the device may have edited): `Client::new` of a
//! memoizing, budgeted config over the bytes as they are or sealed with a
//! valid header (so that mutations reach the body's readers).
//!
//! Property: no panic; bytes that `ClientState::from_bytes` takes write
//! back to exactly the same bytes; a client made over any bytes reports,
//! and the state it then stores reads back without a reset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use localdp::client::{Client, ClientState};
use localdp::state::crc32;
use localdp::SimulationRng;

const CONFIG: &str = r#"{"protocol":"olh","epsilon":2,"instantaneous_epsilon":1,"domain":8,"memoize":true,"budget":{"epsilon":1000,"window":"1d"}}"#;
const SECRET: &str = "5fa2ed1a32e1d239ee1df5902a9e136017f37da4430956119b69c2d5ee28e4a1";

fuzz_target!(|data: &[u8]| {
    // The first byte's top bit: the rest is a state's body, sealed here
    // (magic, version 5, length, CRC-32); the seed in corpus/client_state/
    // is such a body.
    let Some((&pick, rest)) = data.split_first() else { return };
    let bytes = if pick & 0x80 != 0 {
        let mut sealed = b"LDPC\x05".to_vec();
        sealed.extend_from_slice(&(rest.len() as u32).to_le_bytes());
        sealed.extend_from_slice(&crc32(rest).to_le_bytes());
        sealed.extend_from_slice(rest);
        sealed
    } else {
        rest.to_vec()
    };
    if let Ok(state) = ClientState::from_bytes(&bytes) {
        assert_eq!(state.to_bytes(), bytes, "a state read writes back the same bytes");
    }
    let mut client = Client::new(CONFIG, SECRET, Some(&bytes)).expect("a stored state never makes Client::new fail");
    let mut rng = SimulationRng::seed_from_u64(u64::from(pick));
    let _ = client.randomize_text(&(pick % 8).to_string(), 1_000, &mut rng);
    let again = Client::new(CONFIG, SECRET, Some(&client.state_bytes())).expect("a client's own state");
    assert_eq!(again.resets(), 0, "a client's own state reads back");
});
