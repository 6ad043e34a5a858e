#!/usr/bin/env python3
"""The accountant beside Google's dp_accounting (a comparison, not a test
of the build: `cargo test --test accounting` pins these values).

    python3 bench/accounting.py      # uses target/release/localdp, or $LOCALDP_CLI

Creates a throwaway virtual environment with dp-accounting from PyPI
(deleted at the end), and for each case prints `localdp privacy compose`'s
epsilon beside the privacy-loss-distribution accountant's: PLD of
`from_privacy_parameters(eps, 0)` at value_discretization_interval 1e-4,
`self_compose(count)`, composed across groups, `get_epsilon_for_delta`.
Beside them, the exact δ at our epsilon, in 60-digit decimal arithmetic
(every value of the privacy loss of the randomized-response product, which
dominates every composition of pure-DP reports): it must be at most the
target, or ours would be below the truth. Asserts that, and that ours is
within 2% of PLD. PLD is itself an upper bound (pessimistic discretization
and tail truncation), so the exact value, and ours, may sit a hair below
it: the last column says by how much, relative, when it does.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(os.environ.get("LOCALDP_CLI", ROOT / "target" / "release" / "localdp"))
CASES = [
    ([(0.1, 365)], 1e-6),
    ([(0.1, 365)], 1e-3),
    ([(0.5, 10), (0.1, 100)], 1e-6),
    ([(0.5, 10), (0.1, 365)], 1e-6),
    ([(1.0, 5), (0.3, 4), (0.7, 3)], 1e-6),
    ([(2.0, 30)], 1e-9),
    ([(0.05, 2000)], 1e-6),
]


def pld_epsilon(groups, delta):
    from dp_accounting.pld import common, privacy_loss_distribution as pld
    total = None
    for epsilon, count in groups:
        one = pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(epsilon, 0), value_discretization_interval=1e-4)
        group = one.self_compose(count)
        total = group if total is None else total.compose(group)
    return total.get_epsilon_for_delta(delta)


def exact_delta(groups, epsilon):
    """δ(ε) = E[(1 − e^(ε − L))₊] of the RR product, L = Σ ±ε_i, in decimal."""
    from decimal import Decimal, getcontext
    from math import comb
    getcontext().prec = 60
    one = Decimal(1)
    points = [(Decimal(0), one)]  # (L, P(L))
    for e, k in groups:
        e = Decimal(e)  # the float's exact binary value
        p = e.exp() / (one + e.exp())
        group = [(e * (2 * b - k), comb(k, b) * p ** b * (one - p) ** (k - b)) for b in range(k + 1)]
        points = [(l + gl, lp * gp) for l, lp in points for gl, gp in group]
    epsilon = Decimal(epsilon)
    return sum(p * (one - (epsilon - l).exp()) for l, p in points if l > epsilon)


def ours(groups, delta):
    args = [str(CLI), "privacy", "compose", "--delta", repr(delta)] + [f"{e!r}x{k}" for e, k in groups]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["epsilon"]


def main():
    peers.rerun_in_venv(__file__, ["dp_accounting"], ["dp-accounting"])
    if not CLI.exists():
        sys.exit(f"no localdp binary at {CLI}: build it (cargo build --release -p localdp-cli) or set LOCALDP_CLI")
    failed = False
    print(f"{'reports':<22} {'delta':>6} {'localdp':>17} {'dp_accounting PLD':>18} {'exact delta at ours':>20} {'below PLD':>10}")
    for groups, delta in CASES:
        mine, theirs = ours(groups, delta), pld_epsilon(groups, delta)
        truth = exact_delta(groups, mine)
        ok = truth <= delta and abs(mine / theirs - 1) <= 0.02
        failed |= not ok
        label = " + ".join(f"{e}x{k}" for e, k in groups)
        below = f"{1 - mine / theirs:.1e}" if mine < theirs else "-"
        print(f"{label:<22} {delta:>6.0e} {mine:>17.12f} {theirs:>18.12f} {float(truth):>20.12e} {below:>10}"
              f"{'' if ok else '  FAILED'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
