#!/usr/bin/env python3
"""Instantaneous step (issue #12): localdp beside multi-freq-ldpy (PyPI), the
package of the L-GRR / L-SUE / L-OSUE / LOLOHA papers' authors.

    python3 bench/longitudinal_peer.py [--localdp PATH] [--runs R] [--n N]

Creates a throwaway virtual environment with multi-freq-ldpy (deleted at the
end) and compares, at eps_inf = 2 and eps_1 = 1:

* parameters: the step's p2 (L-GRR, L-OSUE) and LOLOHA's g, ours and theirs;
* the realized eps of one report of their parameters, computed from the exact
  composed channel (theirs for L-GRR solves p'/q'' = e^eps_1 with
  q'' = p1 q2 + q1 p2, which omits (d-2) q1 q2: for d > 2 the real eps of one
  report is below eps_1, i.e. more noise than the privacy target needs);
* on the same data, R runs of n users each (one report per user: a fresh
  permanent response and the step, as an install's first report): the mean
  total squared error sum_v (f_v_hat - f_v)^2 of each side's *unbiased*
  estimate (their MI estimator without its clipping), beside the closed
  form (theirs: VAR_Long_Pure, which counts the users as sampled, so it adds
  sum_v f_v(1-f_v)/n; ours: the std_error the aggregator reports, for fixed
  counts).

Our side runs the localdp CLI (`randomize --seed`, then `aggregate`).

Measured (multi-freq-ldpy 0.2.5, n = 10^4, 20 runs, localdp's debug CLI):

    protocol   d   p2 ours p2 theirs eps/report theirs  MSE ours   closed   MSE theirs closed
    L-GRR      2   0.80339   0.80339            1.0000  2.368e-04  1.841e-04  2.377e-04  2.286e-04
    L-GRR      5   0.56473   0.50533            0.8596  1.238e-03  1.145e-03  1.289e-03  1.001e-03
    L-GRR     16   0.38110   0.21409            0.5732  1.019e-02  9.898e-03  3.751e-02  5.150e-03
    L-SUE     16   0.76500   0.76500            1.0000  6.315e-03  6.268e-03  6.450e-03  6.353e-03
    L-OSUE    16   0.80339   0.80339            1.0000  5.302e-03  5.996e-03  6.381e-03  5.892e-03
    LOLOHA g: theirs 3, ours 4

L-SUE and L-OSUE agree to the digit; L-GRR agrees at d = 2 and, for d > 2,
theirs spends less than eps_1 per report (0.57 at d = 16) and its error is
3.7 times ours, while its own closed form (built on the same q'') promises
half of ours. (With 20 runs an MSE is known to about +-30%.)
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

EPS_INF, EPS_1 = 2.0, 1.0


def venv_python(root):
    subprocess.run([sys.executable, "-m", "venv", root], check=True)
    py = os.path.join(root, "bin", "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "multi-freq-ldpy==0.2.5"], check=True)
    return py


def population(d, n):
    """Fixed counts: a Zipf-like skew, the last two values empty when d ≥ 5."""
    weights = [0.0 if d >= 5 and v >= d - 2 else 1.0 / (v + 1) for v in range(d)]
    total = sum(weights)
    counts = [math.floor(n * w / total) for w in weights]
    counts[0] += n - sum(counts)
    return counts


# Runs inside the venv: their clients on the given values, their unbiased
# (unclipped) MI estimate per run, their parameters and closed-form variance.
THEIRS = r'''
import json, sys, math, textwrap
import numpy as np
from multi_freq_ldpy.long_freq_est.L_GRR import L_GRR_Client
from multi_freq_ldpy.long_freq_est.L_OSUE import L_OSUE_Client
from multi_freq_ldpy.long_freq_est.L_SUE import L_SUE_Client
from multi_freq_ldpy.long_freq_est.Variance_LONG_PURE import VAR_Long_Pure
import multi_freq_ldpy.long_freq_est.L_LH as L_LH, inspect

job = json.load(sys.stdin)
protocol, d, values, runs, ei, e1 = job["protocol"], job["d"], job["values"], job["runs"], job["eps_inf"], job["eps_1"]
a, b = math.exp(ei), math.exp(e1)
if protocol == "grr":
    p1 = a / (a + d - 1); q1 = (1 - p1) / (d - 1)
    p2 = (q1 - b * p1) / (-p1 * b + d * q1 * b - q1 * b - p1 * (d - 1) + q1); q2 = (1 - p2) / (d - 1)
    client = lambda v: L_GRR_Client(v, d, ei, e1)
    p_, q_ = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2          # the true composed channel
    eps_real = math.log(p_ / q_)
else:
    if protocol == "oue":
        p1 = 0.5; q1 = 1 / (a + 1)
        client = lambda v: L_OSUE_Client(v, d, ei, e1)
    else:
        p1 = math.sqrt(a) / (math.sqrt(a) + 1); q1 = 1 - p1
        client = lambda v: L_SUE_Client(v, d, ei, e1)
    # Their step is symmetric (q2 = 1 - p2); read p2 off their sampler's
    # closed form by its own definition: the composed own bit is 1 with
    # p1 p2 + (1-p1)(1-p2).
    lines = inspect.getsource({"oue": L_OSUE_Client, "sue": L_SUE_Client}[protocol]).splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip().startswith("p2 ="))
    end = next(i for i, l in enumerate(lines) if l.strip().startswith("q2 ="))
    env = {"np": np, "eps_perm": ei, "eps_1": e1, "k": d, "p1": p1, "q1": q1}
    exec(textwrap.dedent("\n".join(lines[start:end])), env); p2 = env["p2"]; q2 = 1 - p2
    p_, q_ = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    eps_real = math.log(p_ * (1 - q_) / ((1 - p_) * q_))
truth = np.bincount(values, minlength=d) / len(values)
errors = []
for r in range(runs):
    np.random.seed(1000 + r)
    reports = [client(v) for v in values]
    if protocol == "grr":
        counts = np.bincount(reports, minlength=d)
    else:
        counts = np.sum(reports, axis=0)
    n = len(values)
    est = (counts - n * q1 * (p2 - q2) - n * q2) / (n * (p1 - q1) * (p2 - q2))   # MI, unclipped
    errors.append(float(np.sum((est - truth) ** 2)))
variance = sum(VAR_Long_Pure(p1, q1, p2, q2, len(values), f) for f in truth)
src = inspect.getsource(L_LH.L_LH_Client)
g_line = [l for l in src.splitlines() if l.strip().startswith("g = int(max(")][0]
env = {"np": np, "eps_perm": ei, "alpha": e1 / ei}
exec(g_line.strip(), env)
print(json.dumps({"p2": p2, "eps_real": eps_real, "mse": sum(errors) / runs, "variance": variance, "loloha_g": env["g"]}))
'''


def ours(localdp, protocol, d, values, runs, work):
    config = os.path.join(work, f"{protocol}.json")
    with open(config, "w") as f:
        json.dump({"protocol": protocol, "epsilon": EPS_INF, "instantaneous_epsilon": EPS_1, "domain": d, "memoize": True}, f)
    data = os.path.join(work, "values.txt")
    with open(data, "w") as f:
        f.write("".join(f"{v}\n" for v in values))
    truth = [values.count(v) / len(values) for v in range(d)]
    errors, variances = [], []
    for r in range(runs):
        reports = subprocess.run([localdp, "randomize", "--config", config, "--seed", str(1000 + r), data],
                                 check=True, capture_output=True).stdout
        estimate = json.loads(subprocess.run([localdp, "aggregate", "--config", config, "--format", "json"],
                                             input=reports, check=True, capture_output=True).stdout)
        rows = estimate["estimates"]
        errors.append(sum((row["unbiased_frequency"] - f) ** 2 for row, f in zip(rows, truth)))
        variances.append(sum(row["std_error"] ** 2 for row in rows))
    return sum(errors) / runs, sum(variances) / runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--localdp", default="target/release/localdp")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--n", type=int, default=10000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="localdp-peer-")
    try:
        py = venv_python(os.path.join(work, "venv"))
        print(f"eps_inf = {EPS_INF}, eps_1 = {EPS_1}, n = {args.n} users, {args.runs} runs each\n")
        print(f"{'protocol':14} {'d':>3} {'p2 ours':>9} {'p2 theirs':>9} {'eps/report theirs':>17} "
              f"{'MSE ours':>10} {'closed':>10} {'MSE theirs':>10} {'closed':>10}")
        for protocol, d in [("grr", 2), ("grr", 5), ("grr", 16), ("sue", 16), ("oue", 16)]:
            counts = population(d, args.n)
            values = [v for v, c in enumerate(counts) for _ in range(c)]
            theirs = json.loads(subprocess.run([py, "-c", THEIRS], check=True, capture_output=True, text=True,
                                               input=json.dumps({"protocol": protocol, "d": d, "values": values,
                                                                 "runs": args.runs, "eps_inf": EPS_INF,
                                                                 "eps_1": EPS_1})).stdout)
            mse, closed = ours(args.localdp, protocol, d, values, args.runs, work)
            p2 = our_p2(protocol, d)
            name = {"grr": "L-GRR", "sue": "L-SUE", "oue": "L-OSUE"}[protocol]
            print(f"{name:14} {d:>3} {p2:>9.5f} {theirs['p2']:>9.5f} {theirs['eps_real']:>17.4f} "
                  f"{mse:>10.3e} {closed:>10.3e} {theirs['mse']:>10.3e} {theirs['variance']:>10.3e}")
        print(f"\nLOLOHA g: theirs {theirs['loloha_g']}, ours round(e^eps_1) + 1 = {round(math.exp(EPS_1)) + 1}"
              " (one report is OLH at eps_1 given the hash; this g minimizes its exact variance)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def our_p2(protocol, d):
    """The step's 'keep' probability as src/frequency/longitudinal.rs computes
    it (nominal, before the coins' 2^-64 rounding)."""
    a, b = math.exp(EPS_INF), math.exp(EPS_1)
    if protocol == "grr":
        mu = lambda e: d / (e + d - 1)
        mu2 = (mu(b) - mu(a)) / (1 - mu(a))
        return 1 - mu2 * (d - 1) / d
    if protocol == "oue":
        p, q = 0.5, 1 / (a + 1)
    else:
        p = math.sqrt(a) / (math.sqrt(a) + 1); q = 1 - p
    miss, A_, C_ = 1 - p, 2 * p - 1, 1 - 2 * q
    qa = A_ * C_ * (b - 1)
    qb = p * C_ + A_ * (1 - q) + b * (miss * C_ + A_ * q)
    qc = p * (1 - q) - b * miss * q
    return 1 - 2 * qc / (qb + math.sqrt(qb * qb + 4 * qa * qc))


if __name__ == "__main__":
    main()
