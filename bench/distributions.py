#!/usr/bin/env python3
"""Distributions of numbers: Square Wave (EMS), hierarchical histograms and
a binned frequency oracle, on the same data, in one run.

    python3 bench/distributions.py                # everything below
    python3 bench/distributions.py --n 10000      # the latency populations at one size only
    python3 bench/distributions.py --skip-beta    # without the paper's experiment

Runs localdp's release CLI (`randomize --seed`, then `aggregate --format
json`; build it first: `cargo build --release -p localdp-cli`). Pure Python,
no dependencies.

1. The synthetic experiment of Li, Wang, Lopuhaä-Zwakenberg, Li, Škorić,
   "Estimating Numerical Distributions under Local Differential Privacy"
   (SIGMOD 2020): Beta(5, 2) on [0, 1], epsilon in {0.5, 1, 2, 4}; here
   n = 10^5 and 1024 bins (their d = 1024 buckets). Wasserstein-1 and KS
   distance between the estimate (uniform within a bin) and the values.
2. Page-load times (log-normal, median 800 ms, sigma 0.8 in logs, range
   [0, 10000] ms) and a bimodal population (60% N(600, 120), 40% N(2400,
   400), range [0, 5000] ms), n in {10^4, 10^5, 10^6}, epsilon = 1, 64 bins:
   W1 (ms), KS, and the absolute error of p50, p90, p95, p99 (ms) for
   square_wave, hierarchical, and the naive baseline: bin the values
   (64 bins) and estimate the bins' frequencies with the frequency oracle
   "auto" picks (norm-sub post-processing), quantiles read off its CDF the
   same way. (A mean-only mechanism cannot give quantiles at all.)

Every run prints aggregation reports per CPU second of `localdp aggregate`
(children's CPU time: parsing, validation, counting and the estimate, which
for Square Wave includes its 100 bootstrap refits).
"""

import argparse
import bisect
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "localdp"
QUANTILES = [0.5, 0.9, 0.95, 0.99]


def cli(args, stdin_path=None):
    """Runs the CLI; its stdout and the CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(stdin_path, "rb") if stdin_path else open("/dev/null", "rb") as stdin:
        out = subprocess.run([str(CLI), *args], stdin=stdin, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out.stdout, cpu


def collect(tmp, config, values):
    """Randomizes `values` under `config` and aggregates: the estimate and
    aggregation reports per CPU second."""
    config_path, values_path, reports_path = tmp / "config.json", tmp / "values.txt", tmp / "reports.jsonl"
    config_path.write_text(json.dumps(config))
    values_path.write_text("".join(f"{v!r}\n" for v in values))
    reports, _ = cli(["randomize", "--config", str(config_path), "--seed", "7", str(values_path)])
    reports_path.write_bytes(reports)
    estimate, cpu = cli(["aggregate", "--config", str(config_path), "--post", "norm-sub"
                         if config["protocol"] == "auto" else "none", str(reports_path)])
    return json.loads(estimate), len(values) / cpu


class Truth:
    """The values' own distribution (clipped to the range)."""

    def __init__(self, values, lo, hi):
        self.sorted = sorted(min(max(v, lo), hi) for v in values)
        self.lo, self.hi = lo, hi

    def cdf(self, x):
        return bisect.bisect_right(self.sorted, x) / len(self.sorted)

    def quantile(self, q):
        k = min(max(math.ceil(q * len(self.sorted)), 1), len(self.sorted))
        return self.sorted[k - 1]


def isotonic(y):
    """The non-decreasing sequence closest to y (pool adjacent violators)."""
    blocks = []
    for v in y:
        blocks.append([v, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            b, nb = blocks.pop()
            a, na = blocks.pop()
            blocks.append([(a * na + b * nb) / (na + nb), na + nb])
    return [v for v, n in blocks for _ in range(n)]


def histogram_cdf(edges, frequencies):
    """The CDF of a histogram, uniform within each bin: the running sum,
    clamped to [0, 1] and made non-decreasing by isotonic regression (as the
    library reads its quantiles; an unbiased histogram has negative bins)."""
    cumulative = [0.0]
    for f in frequencies:
        cumulative.append(cumulative[-1] + f)
    cumulative[-1] = 1.0
    cumulative = isotonic([min(max(c, 0.0), 1.0) for c in cumulative])

    def cdf(x):
        if x <= edges[0]:
            return 0.0
        if x >= edges[-1]:
            return 1.0
        b = bisect.bisect_right(edges, x) - 1
        t = (x - edges[b]) / (edges[b + 1] - edges[b])
        return cumulative[b] + t * (cumulative[b + 1] - cumulative[b])

    def quantile(q):
        b = next((i for i in range(1, len(cumulative)) if cumulative[i] >= q), len(cumulative) - 1)
        a, c = cumulative[b - 1], cumulative[b]
        t = (q - a) / (c - a) if c > a else 0.0
        return edges[b - 1] + t * (edges[b] - edges[b - 1])

    return cdf, quantile


def distances(truth, cdf, points=8192):
    """W1 (in the range's units) and KS between the estimate and the truth,
    on a fine grid of the range and at every bin edge."""
    step = (truth.hi - truth.lo) / points
    w1, ks = 0.0, 0.0
    for i in range(points):
        x = truth.lo + (i + 0.5) * step
        gap = abs(cdf(x) - truth.cdf(x))
        w1 += gap * step
        ks = max(ks, gap)
    return w1, ks


def evaluate(truth, edges, frequencies, listed=None):
    """W1, KS and the quantile errors of a histogram (and of the listed
    quantiles, where the estimate gives them)."""
    cdf, quantile = histogram_cdf(edges, frequencies)
    w1, ks = distances(truth, cdf)
    values = listed or [quantile(q) for q in QUANTILES]
    errors = [abs(v - truth.quantile(q)) for v, q in zip(values, QUANTILES)]
    return w1, ks, errors


def run(tmp, protocol, epsilon, bins, lo, hi, values, truth):
    """One estimate of `values`: (W1, KS, quantile errors, reports/s)."""
    width = (hi - lo) / bins
    edges = [lo + b * width for b in range(bins)] + [hi]
    if protocol == "baseline":
        binned = [min(int((min(max(v, lo), hi) - lo) / width), bins - 1) for v in values]
        estimate, rate = collect(tmp, {"protocol": "auto", "epsilon": epsilon, "domain": bins}, binned)
        frequencies = [e["frequency"] for e in estimate["estimates"]]
        return (*evaluate(truth, edges, frequencies), rate, estimate["protocol"])
    config = {"protocol": protocol, "epsilon": epsilon, "range": [lo, hi], "bins": bins}
    estimate, rate = collect(tmp, config, values)
    frequencies = [b["frequency"] for b in estimate["histogram"]]
    listed = [q["value"] for q in estimate["quantiles"]]
    return (*evaluate(truth, edges, frequencies, listed), rate, protocol)


def beta(tmp, n):
    print(f"\n## Li et al. (SIGMOD 2020), Beta(5, 2) on [0, 1], n = {n}, 1024 bins")
    rng = random.Random(2020)
    values = [rng.betavariate(5, 2) for _ in range(n)]
    truth = Truth(values, 0.0, 1.0)
    print(f"{'epsilon':>7}  {'method':<12}  {'W1':>8}  {'KS':>7}  {'reports/s':>10}")
    for epsilon in [0.5, 1, 2, 4]:
        for protocol in ["square_wave", "hierarchical", "baseline"]:
            w1, ks, _, rate, resolved = run(tmp, protocol, epsilon, 1024, 0.0, 1.0, values, truth)
            name = protocol if protocol != "baseline" else f"fo:{resolved}"
            print(f"{epsilon:>7}  {name:<12}  {w1:>8.4f}  {ks:>7.4f}  {rate:>10.0f}", flush=True)


def latencies(tmp, sizes):
    rng = random.Random(14)
    populations = {
        "log-normal": (0.0, 10000.0, lambda: 800.0 * math.exp(0.8 * rng.gauss(0, 1))),
        "bimodal": (0.0, 5000.0, lambda: rng.gauss(600, 120) if rng.random() < 0.6 else rng.gauss(2400, 400)),
    }
    for name, (lo, hi, draw) in populations.items():
        print(f"\n## {name}, range [{lo:.0f}, {hi:.0f}] ms, epsilon 1, 64 bins")
        print(f"{'n':>8}  {'method':<12}  {'W1 ms':>7}  {'KS':>6}  "
              + "  ".join(f"{'|p' + str(round(q * 100)) + '|':>7}" for q in QUANTILES) + f"  {'reports/s':>10}")
        for n in sizes:
            values = [draw() for _ in range(n)]
            truth = Truth(values, lo, hi)
            for protocol in ["square_wave", "hierarchical", "baseline"]:
                w1, ks, errors, rate, resolved = run(tmp, protocol, 1.0, 64, lo, hi, values, truth)
                method = protocol if protocol != "baseline" else f"fo:{resolved}"
                print(f"{n:>8}  {method:<12}  {w1:>7.1f}  {ks:>6.3f}  "
                      + "  ".join(f"{e:>7.0f}" for e in errors) + f"  {rate:>10.0f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, action="append", help="latency population sizes (default 10^4, 10^5, 10^6)")
    parser.add_argument("--beta-n", type=int, default=100_000)
    parser.add_argument("--skip-beta", action="store_true")
    args = parser.parse_args()
    if not CLI.exists():
        sys.exit(f"{CLI} is missing: cargo build --release -p localdp-cli")
    with tempfile.TemporaryDirectory(prefix="distributions-") as tmp:
        tmp = Path(tmp)
        if not args.skip_beta:
            beta(tmp, args.beta_n)
        latencies(tmp, args.n or [10_000, 100_000, 1_000_000])


if __name__ == "__main__":
    main()
