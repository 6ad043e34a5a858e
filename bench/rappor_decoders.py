#!/usr/bin/env python3
"""RAPPOR's decoders on the same reports (#42): localdp's (the non-negative
Lasso on non-negative least squares' support, intervals given the Bonferroni
test) beside the ones pure-ldp's
RAPPORServer runs, fed localdp's reports.

    python3 bench/rappor_decoders.py                 # n in {10^5, 10^6}, 3 seeds each
    python3 bench/rappor_decoders.py --n 100000 --seeds 1
    python3 bench/rappor_decoders.py --n 1000000 --seeds 16 --first-seed 1000   # other collections

pure-ldp's own client never turns a set Bloom bit to 0 (no instantaneous
response), so its reports are not a fair baseline: this script makes the
reports with localdp's release CLI (`randomize --seed S`, k 128, h 2, m 64,
f 0.5, p 0.5, q 0.75; 200 candidates held with Zipf(1.1) counts and 50
that nobody holds), estimates them with `aggregate`, and hands the same
per-cohort bit counts, debiased for localdp's channel, to the regressions
pure-ldp's RAPPORServer._update_estimates runs (scikit-learn, same settings;
the design is localdp's Bloom filters):
  * lasso+ridge: Lasso(alpha=0.8, positive) selects, then ElasticNet(l1_ratio
    0, alpha 0.025 f, positive) on the selected (pure-ldp with lasso=True);
  * lasso+ls:    the same selection, then non-negative least squares
    (reg_const=0);
  * nnls:        non-negative least squares on every candidate (reg_const=0,
    lasso=False).
Prints per (n, decoder) the MSE over the 250 candidates (0 for one a decoder
does not report) and its paired difference from localdp's over the same
collections (mean ± its standard error), and for localdp the coverage of its detected candidates'
95% intervals, of those of them above 0, and the collections reporting an
absent candidate above 0.
Runs in a throwaway venv (bench/peers.py) if scikit-learn is missing; not
part of `npm test`.
"""

import argparse
import json
import subprocess
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
HELD, ABSENT, ZIPF = 200, 50, 1.1
K, H, M, F, P, Q = 128, 2, 64, 0.5, 0.5, 0.75
MASK = (1 << 64) - 1


def mix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    return x ^ (x >> 33)


def key64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK
    return mix64(h ^ len(data))


def bucket(seed, key, g):
    """core/src/hash.rs's bucket."""
    h = mix64(key ^ ((seed * 0x9E3779B97F4A7C15) & MASK))
    return ((h >> 32) * g) >> 32


def design(candidates):
    """X[(j, i), v] = 1 if bit i is in v's cohort-j Bloom filter (RapporMetric::bloom)."""
    import numpy as np
    x = np.zeros((M * K, len(candidates)))
    for v, value in enumerate(candidates):
        key = key64(value.encode())
        for j in range(M):
            for i in range(H):
                x[j * K + bucket((j * 64 + i) & 0xFFFFFFFF, key, K), v] = 1
    return x


def population(n):
    counts = peers.zipf(n, HELD, ZIPF)
    values = [f"/held/{i}" for i in range(HELD)] + [f"/absent/{i}" for i in range(ABSENT)]
    return values, counts + [0] * ABSENT


def counts_per_cohort(reports):
    """Per cohort: reports N_j and set bits c_ij."""
    import numpy as np
    cohorts, bits = [], []
    with open(reports) as f:
        for line in f:
            r = json.loads(line)
            cohorts.append(r["cohort"])
            bits.append(bytes.fromhex(r["bits"]))
    cohorts = np.array(cohorts)
    unpacked = np.unpackbits(np.frombuffer(b"".join(bits), dtype=np.uint8).reshape(len(bits), -1), axis=1, bitorder="little")
    per_cohort = np.bincount(cohorts, minlength=M).astype(float)
    set_bits = np.zeros((M, K))
    for j in range(M):
        set_bits[j] = unpacked[cohorts == j, :K].sum(axis=0)
    return per_cohort, set_bits


def pure_ldp_decoders(x, per_cohort, set_bits):
    """Counts per candidate from RAPPORServer's regressions on localdp's debiased counts."""
    import numpy as np
    from sklearn.linear_model import ElasticNet, Lasso, LinearRegression
    # Unbiased count of set Bloom bits (localdp's t_ij; pure-ldp's _create_y for its own channel).
    y = ((set_bits - (P + F * Q / 2 - F * P / 2) * per_cohort[:, None]) / ((1 - F) * (Q - P))).ravel()
    out = {}
    selected = np.nonzero(Lasso(alpha=0.8, positive=True).fit(x, y).coef_)[0]
    for name, model in [("lasso+ridge", ElasticNet(positive=True, alpha=0.025 * F, l1_ratio=0, fit_intercept=False, max_iter=10000)),
                        ("lasso+ls", LinearRegression(positive=True, fit_intercept=False))]:
        estimate = np.zeros(x.shape[1])
        if len(selected):
            estimate[selected] = model.fit(x[:, selected], y).coef_ * M
        out[name] = estimate
    out["nnls"] = LinearRegression(positive=True, fit_intercept=False).fit(x, y).coef_ * M
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, action="append")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "localdp")
    args = parser.parse_args()
    peers.rerun_in_venv(__file__, ["sklearn", "numpy"], ["scikit-learn", "numpy<2"])
    import numpy as np
    if not args.cli.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "localdp-cli"], cwd=ROOT, check=True)
    print(f"{'n':>8} {'decoder':>12} {'MSE':>10} {'detected':>9} {'coverage':>9} {'above 0':>8} {'coverage':>9} {'absent>0':>9}  (other decoders: MSE − localdp's, paired)")
    for n in args.n or [100_000, 1_000_000]:
        values, counts = population(n)
        truth = np.array(counts) / n
        x = design(values)
        config = {"protocol": "rappor", "bits": K, "hashes": H, "cohorts": M, "f": F, "p": P, "q": Q, "candidates": values}
        errors = {}
        detected = covered = above = above_covered = absent_collections = 0
        for seed, reports, ours in peers.collections(args.cli, config, values, counts, range(args.first_seed, args.first_seed + args.seeds)):
            estimate = np.zeros(len(values))
            absent_above = False
            for e in ours["estimates"]:
                v = values.index(e["value"])
                estimate[v] = e["frequency"]
                detected += 1
                covers = e["ci95"][0] <= truth[v] <= e["ci95"][1]
                covered += covers
                above += e["ci95"][0] > 0
                above_covered += covers and e["ci95"][0] > 0
                absent_above |= v >= HELD and e["ci95"][0] > 0
            absent_collections += absent_above
            errors.setdefault("localdp", []).append(np.mean((estimate - truth) ** 2))
            per_cohort, set_bits = counts_per_cohort(reports)
            for name, counts_hat in pure_ldp_decoders(x, per_cohort, set_bits).items():
                errors.setdefault(name, []).append(np.mean((counts_hat / n - truth) ** 2))
        for name, e in errors.items():
            # The paired difference from localdp's MSE over the same collections, with its standard error.
            difference = np.array(e) - np.array(errors["localdp"])
            paired = f"{np.mean(difference):+10.2e} ± {np.std(difference, ddof=1) / np.sqrt(len(e)):.1e}" if len(e) > 1 else ""
            extra = (f"{detected:>9} {covered / max(detected, 1):>9.3f} {above:>8} {above_covered / max(above, 1):>9.3f}"
                     f" {absent_collections:>5}/{args.seeds}") if name == "localdp" else f"{paired:>47}"
            print(f"{n:>8} {name:>12} {np.mean(e):>10.3e} {extra}", flush=True)


if __name__ == "__main__":
    main()
