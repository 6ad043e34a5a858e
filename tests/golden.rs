//! Value stability: fixed seeds give fixed reports, natively as in wasm
//! (tests/wasm.rs asserts the same data from tests/common/golden.rs).

mod common;

use common::golden;
use localdp::rng::RngCore;
use localdp::SimulationRng;

#[test]
fn the_seeded_stream_is_stable() {
    assert_eq!(SimulationRng::seed_from_u64(42).next_u64(), golden::SEED_42_FIRST_WORD);
}

#[test]
fn reports_for_a_fixed_seed_are_stable() {
    for (protocol, payloads) in golden::REPORTS {
        assert_eq!(golden::produced(protocol), golden::expected(protocol, &payloads), "{protocol}");
    }
}

#[test]
fn heavy_hitter_reports_for_a_fixed_seed_are_stable() {
    for (config, expected) in golden::HEAVY {
        assert_eq!(golden::heavy_produced(config), expected, "{config}");
    }
}

#[test]
fn key_value_reports_for_a_fixed_seed_are_stable() {
    for (config, map, expected) in golden::KEY_VALUE {
        assert_eq!(golden::key_value_produced(config, map), expected, "{config}");
    }
}

#[test]
fn marginals_reports_for_a_fixed_seed_are_stable() {
    for (config, expected) in golden::MARGINALS {
        assert_eq!(golden::marginals_produced(config), expected, "{config}");
    }
}
