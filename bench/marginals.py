#!/usr/bin/env python3
"""Marginals of events with several fields: localdp's "marginals" metric
against one metric per field (independence assumed) and multi-freq-ldpy's
SMP and RS+FD, on the same correlated data, in one run.

    python3 bench/marginals.py            # n = 2*10^5, epsilon 1, 2, 4
    python3 bench/marginals.py --n 50000  # quicker

Needs localdp's release CLI (`cargo build --release -p localdp-cli`) and,
for the multi-freq-ldpy rows, a throwaway venv (set up on first run under
target/bench-venv: `pip install multi-freq-ldpy`); without it those rows are
skipped.

The data: 4 attributes with domains 4, 6, 10 and 20, n events. A latent
class z (5 classes, skewed) drives every attribute: with probability 0.7 an
attribute takes its class's own value (a different one per class), else a
Zipf-like draw over its domain; so every pair of attributes is strongly
dependent (the product of the one-way histograms is far from the joint
one).

Methods, each at the same epsilon per event (one report per user):
  ours         {"protocol": "marginals", "way": 2}, --post project (the
               marginals projected and made consistent with the histograms)
  per-field    one frequency metric per attribute ("auto", --post project),
               each at epsilon/4 so that an event costs epsilon; 2-way
               marginals as the product of the two histograms
  per-field*4  the same at epsilon per field (an event costs 4*epsilon):
               the error that assuming independence leaves however much
               budget is spent
  SMP, RS+FD   multi-freq-ldpy (Arcolezi et al.): each user samples one
               attribute (SMP; RS+FD adds fake data for the others), ADP
               (GRR or OUE) at epsilon; 2-way marginals as products

Printed: the mean total-variation distance (1/2 sum |est - true|) over the
6 two-way marginals, and over the 4 one-way histograms. localdp's rows are
seeded (`randomize --seed`); multi-freq-ldpy's draw from numba's generator,
which np.random.seed does not reach, so they move a little between runs
(one-way TVD at epsilon 1: SMP 0.031 to 0.039 over three runs).
"""

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "localdp"
VENV = ROOT / "target" / "bench-venv"
DOMAINS = [4, 6, 10, 20]
NAMES = ["a", "b", "c", "d"]
CLASSES = [0.35, 0.25, 0.2, 0.12, 0.08]


def events(n, seed=1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        z = rng.choices(range(len(CLASSES)), CLASSES)[0]
        row = []
        for a, d in enumerate(DOMAINS):
            if rng.random() < 0.7:
                row.append((3 * z + a) % d)
            else:
                row.append(min(int(d * rng.random() ** 2), d - 1))
        out.append(row)
    return out


def histogram(rows, attributes):
    sizes = [DOMAINS[a] for a in attributes]
    counts = [0.0] * _product(sizes)
    for r in rows:
        cell = 0
        for a in attributes:
            cell = cell * DOMAINS[a] + r[a]
        counts[cell] += 1
    return [c / len(rows) for c in counts]


def _product(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def tvd(p, q):
    return 0.5 * sum(abs(x - y) for x, y in zip(p, q))


def outer(p, q):
    return [x * y for x in p for y in q]


def cli(args, stdin_path):
    with open(stdin_path, "rb") as stdin:
        return subprocess.run([str(CLI), *args], stdin=stdin, capture_output=True, check=True).stdout


def ours(tmp, rows, epsilon):
    config = {"protocol": "marginals", "epsilon": epsilon, "way": 2,
              "attributes": [{"name": n, "domain": d} for n, d in zip(NAMES, DOMAINS)]}
    path, values, reports = tmp / "m.json", tmp / "events.jsonl", tmp / "reports.jsonl"
    path.write_text(json.dumps(config))
    values.write_text("".join(json.dumps(dict(zip(NAMES, r))) + "\n" for r in rows))
    reports.write_bytes(cli(["randomize", "--config", str(path), "--seed", "7"], values))
    estimate = json.loads(cli(["aggregate", "--config", str(path), "--post", "project"], reports))
    marginals = {}
    for m in estimate["marginals"]:
        pair = tuple(NAMES.index(a) for a in m["attributes"])
        marginals[pair] = [c["frequency"] for c in m["cells"]]
    one_way = [[v["frequency"] for v in h["values"]] for h in estimate["histograms"]]
    return marginals, one_way, estimate["protocol"]


def per_field(tmp, rows, epsilon):
    one_way = []
    for a, d in enumerate(DOMAINS):
        config = {"protocol": "auto", "epsilon": epsilon, "domain": d}
        path, values, reports = tmp / f"f{a}.json", tmp / f"f{a}.txt", tmp / f"f{a}.jsonl"
        path.write_text(json.dumps(config))
        values.write_text("".join(f"{r[a]}\n" for r in rows))
        reports.write_bytes(cli(["randomize", "--config", str(path), "--seed", str(11 + a)], values))
        estimate = json.loads(cli(["aggregate", "--config", str(path), "--post", "project"], reports))
        one_way.append([e["frequency"] for e in estimate["estimates"]])
    return one_way


def multi_freq(rows, epsilon, method):
    """One-way histograms by multi-freq-ldpy's SMP or RS+FD with ADP, run in the venv."""
    python = VENV / "bin" / "python"
    if not python.exists():
        return None
    script = f"""
import json, sys, numpy as np
from multi_freq_ldpy.mdim_freq_est.SMP_solution import SMP_ADP_Client, SMP_ADP_Aggregator_MI
from multi_freq_ldpy.mdim_freq_est.RSpFD_solution import RSpFD_ADP_Client, RSpFD_ADP_Aggregator_MI
np.random.seed(5)
rows = json.load(sys.stdin)
k, d, eps = {DOMAINS}, {len(DOMAINS)}, {epsilon}
if "{method}" == "SMP":
    reports = [SMP_ADP_Client(r, k, d, eps) for r in rows]
    est = SMP_ADP_Aggregator_MI(reports, k, d, eps)
else:
    reports = [RSpFD_ADP_Client(r, k, d, eps) for r in rows]
    est = RSpFD_ADP_Aggregator_MI(reports, k, d, eps)
print(json.dumps([list(map(float, h)) for h in est]))
"""
    out = subprocess.run([str(python), "-c", script], input=json.dumps(rows).encode(), capture_output=True, check=True)
    return json.loads(out.stdout)


def project(p):
    """Euclidean projection onto the simplex (for histograms a method leaves unnormalized)."""
    u = sorted(p, reverse=True)
    total, theta = 0.0, 0.0
    for i, x in enumerate(u, 1):
        total += x
        t = (total - 1) / i
        if x - t > 0:
            theta = t
    return [max(x - theta, 0.0) for x in p]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    if not CLI.exists():
        sys.exit("build the CLI first: cargo build --release -p localdp-cli")
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "multi-freq-ldpy", "numpy"], check=False)
    rows = events(args.n)
    pairs = list(itertools.combinations(range(len(DOMAINS)), 2))
    truth2 = {p: histogram(rows, p) for p in pairs}
    truth1 = [histogram(rows, (a,)) for a in range(len(DOMAINS))]
    independent = sum(tvd(truth2[(a, b)], outer(truth1[a], truth1[b])) for a, b in pairs) / len(pairs)
    print(f"n = {args.n}, domains {DOMAINS}; the true one-way histograms' product is {independent:.4f} "
          f"(mean TVD) from the true 2-way marginals")
    print(f"{'epsilon':>7}  {'method':<12} {'2-way TVD':>10} {'1-way TVD':>10}  {'seconds':>7}")
    for epsilon in [1, 2, 4]:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            results = []
            start = time.time()
            marginals, one_way, protocol = ours(tmp, rows, epsilon)
            results.append((f"ours ({protocol})", marginals, one_way, time.time() - start))
            for name, eps in [("per-field", epsilon / len(DOMAINS)), ("per-field*4", epsilon)]:
                start = time.time()
                one_way = per_field(tmp, rows, eps)
                products = {(a, b): outer(one_way[a], one_way[b]) for a, b in pairs}
                results.append((name, products, one_way, time.time() - start))
            for method in ["SMP", "RS+FD"]:
                start = time.time()
                one_way = multi_freq(rows, epsilon, method)
                if one_way is None:
                    continue
                one_way = [project(h) for h in one_way]
                products = {(a, b): outer(one_way[a], one_way[b]) for a, b in pairs}
                results.append((method, products, one_way, time.time() - start))
            for name, marginals, one_way, seconds in results:
                two = sum(tvd(marginals[p], truth2[p]) for p in pairs) / len(pairs)
                one = sum(tvd(one_way[a], truth1[a]) for a in range(len(DOMAINS))) / len(DOMAINS)
                print(f"{epsilon:>7}  {name:<12} {two:>10.4f} {one:>10.4f}  {seconds:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
