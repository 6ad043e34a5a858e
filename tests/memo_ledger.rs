//! The ledger against the exact ε of a memo's reports (tests/common/memo.rs;
//! the same checks run in wasm). `cargo test --test memo_ledger --
//! --nocapture` prints, per chain, the worst ratio of the charge to the
//! exact ε (≥ 1: never undercharged).

mod common;

use common::memo;

#[test]
fn the_ledger_never_charges_a_memo_below_its_joint_channel() {
    println!("{}", memo::the_ledger_never_charges_a_memo_below_its_joint_channel());
}

#[test]
fn a_memo_without_a_step_resends_one_report_charged_once() {
    memo::a_memo_without_a_step_resends_one_report_charged_once();
}

/// The review's case: ε_∞ 2, ε_1 0.5, d 30, a budget of 1. Two reports of
/// one value are 1.284 together: the second is refused.
#[test]
fn the_second_report_of_an_l_grr_memo_does_not_fit_a_budget_of_twice_epsilon_1() {
    memo::the_second_report_of_an_l_grr_memo_does_not_fit_a_budget_of_twice_epsilon_1();
}
