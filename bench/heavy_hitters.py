#!/usr/bin/env python3
"""Heavy hitters: localdp beside pure-ldp (PyPI) on the same data, in one run.

    python3 bench/heavy_hitters.py            # n in {10^5, 10^6}, epsilon in {2, 4, 8}
    python3 bench/heavy_hitters.py --n 100000 # one size

Creates a throwaway virtual environment with pure-ldp (deleted at the end),
generates a Zipf(1.1) population of 10^4 distinct URL paths of at most 16
bytes, and for every (n, epsilon) runs localdp's release CLI (`randomize`,
then `aggregate --format json`: pem, sfp, treehist, cms, hcms) and
pure-ldp's PEM, SFP, TreeHist and its CMS/HCMS on the same values. For each it prints the precision and recall of
the true top 10 and top 20, the mean absolute frequency error of the values
it listed in its top 20, and client and aggregation reports per CPU second
(CPU time, not wall time, so that other work on the machine does not count;
localdp runs single-threaded, and if pure-ldp's numpy uses more threads, CPU
time counts them all).

Setup, so that the comparison is as favourable to pure-ldp as it can run:
* pure-ldp's discovery protocols use its Apple CMS sketch as frequency
  oracle (its default, OLH, loops over the whole domain per report: with
  16-character strings that is 40^16 values), and are given the population's
  alphabet (41 characters) as prior knowledge; localdp works on bytes and
  knows nothing beyond max_length = 16.
* pure-ldp's SFP uses one-character fragments (two-character fragments make
  256 * 41^2 candidates per position, each scored by k Python hash calls).
* The sketches (localdp cms/hcms, pure-ldp CMS/HCMS) score the full list of
  10^4 distinct values and report the top: they are given the dictionary.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "localdp"
DISTINCT = 10_000
ZIPF = 1.1
K, M = 256, 1024  # sketch rows and columns (both libraries)
SFP_K = 64  # pure-ldp SFP's fragment sketch rows (Python scoring cost)
TOP = 20


def population():
    """10^4 distinct URL paths (<= 16 bytes), most popular first."""
    words = ("home shop blog docs help news user tag cart search login about "
             "api faq team jobs press terms privacy contact pricing sale new "
             "top men women kids sport music video photo travel food").split()
    paths = ["/"] + [f"/{w}" for w in words]
    seen = set(paths)
    i = 0
    while len(paths) < DISTINCT:
        a, b = words[i % len(words)], words[(i // len(words)) % len(words)]
        candidate = f"/{a}/{b}" if i < len(words) ** 2 else f"/{a}/{i % 9973}"
        if len(candidate) <= 16 and candidate not in seen:
            seen.add(candidate)
            paths.append(candidate)
        i += 1
    return paths


def sample(values, n, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(values) + 1) ** ZIPF
    idx = rng.choice(len(values), size=n, p=weights / weights.sum())
    return [values[i] for i in idx]


def score(ranked, truth, freq):
    """Precision/recall at 10 and 20, mean |error| of the listed top 20."""
    out = {}
    for k in (10, 20):
        listed = [v for v, _ in ranked[:k]]
        hit = len(set(listed) & set(truth[:k]))
        out[f"p{k}"] = hit / max(len(listed), 1)
        out[f"r{k}"] = hit / k
    errors = [abs(f - freq.get(v, 0.0)) for v, f in ranked[:TOP]]
    out["err"] = sum(errors) / len(errors) if errors else float("nan")
    return out


def children_cpu():
    """CPU seconds of finished child processes (user + system)."""
    t = os.times()
    return t.children_user + t.children_system


def run_localdp(protocol, epsilon, data, workdir, candidates):
    config = {"protocol": protocol, "epsilon": epsilon}
    if protocol in ("cms", "hcms"):
        config.update(sketch={"hashes": K, "width": M}, candidates=candidates)
    else:
        config.update(max_length=16, top=TOP)
    cfg = workdir / f"{protocol}.json"
    cfg.write_text(json.dumps(config))
    values, reports = workdir / "values.txt", workdir / "reports.jsonl"
    start = children_cpu()
    with open(reports, "wb") as out:
        subprocess.run([CLI, "randomize", "--config", cfg, values], stdout=out, check=True)
    client = children_cpu() - start
    start = children_cpu()
    estimate = json.loads(subprocess.run([CLI, "aggregate", "--config", cfg, "--format", "json", reports],
                                         capture_output=True, check=True).stdout)
    aggregate = children_cpu() - start
    listed = estimate.get("heavy_hitters") or sorted(estimate["estimates"], key=lambda e: -e["frequency"])
    ranked = [(e["value"], e["frequency"]) for e in listed]
    return ranked, client, aggregate


def run_pure(protocol, epsilon, data, candidates, alphabet):
    import xxhash
    # pure-ldp hashes str, which xxhash >= 2 refuses: encode it as UTF-8
    # (what xxhash 1 did).
    if not hasattr(xxhash, "_raw_xxh64"):
        xxhash._raw_xxh64 = xxhash.xxh64
        xxhash.xxh64 = lambda data, seed=0: xxhash._raw_xxh64(data.encode() if isinstance(data, str) else data, seed=seed)
    import pure_ldp.frequency_oracles.apple_cms as cms
    import pure_ldp.heavy_hitters.apple_sfp as sfp
    import pure_ldp.heavy_hitters.prefix_extending as pem
    import pure_ldp.heavy_hitters.treehistogram as th
    n = len(data)
    if protocol in ("CMS", "HCMS"):
        server = cms.CMSServer(epsilon, K, M, is_hadamard=protocol == "HCMS")
        client = cms.CMSClient(epsilon, server.get_hash_funcs(), M, is_hadamard=protocol == "HCMS")
    else:
        k = SFP_K if protocol == "SFP" else K
        fo_server = cms.CMSServer(epsilon, k, M)
        fo_client = cms.CMSClient(epsilon, fo_server.get_hash_funcs(), M)
        if protocol == "PEM":
            # PEM extends by the alphabet only: with the padding character in
            # it, values shorter than 16 can be found.
            padded = alphabet + ["*"]
            server = pem.PEMServer(epsilon, 1, 16, 1, alphabet=padded, fo_server=fo_server, index_mapper=lambda x: x)
            client = pem.PEMClient(epsilon, 1, 16, 1, alphabet=padded, fo_client=fo_client, index_mapper=lambda x: x)
        elif protocol == "TreeHist":
            server = th.TreeHistServer(epsilon, 16, 1, alphabet=alphabet, fo_server=fo_server, index_mapper=lambda x: x)
            client = th.TreeHistClient(epsilon, 1, 16, alphabet=alphabet, fo_client=fo_client, index_mapper=lambda x: x)
        else:
            server = sfp.SFPServer(epsilon, 1, 16, alphabet=set(alphabet), fo_server=fo_server, index_mapper=lambda x: x)
            client = sfp.SFPClient(epsilon, 1, 16, alphabet=set(alphabet), fo_client=fo_client, index_mapper=lambda x: x)
    start = time.process_time()
    reports = [client.privatise(v) for v in data]
    client_time = time.process_time() - start
    start = time.process_time()
    for r in reports:
        server.aggregate(r)
    if protocol in ("CMS", "HCMS"):
        estimates = server.estimate_all(candidates, suppress_warnings=True)
        ranked = sorted(zip(candidates, (e / n for e in estimates)), key=lambda x: -x[1])
    else:
        found, counts = server.find_heavy_hitters(k=TOP)
        ranked = [(v.split("*")[0], c / n) for v, c in zip(found, counts)]
    return ranked, client_time, time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, action="append", help="population sizes (default 10^5 and 10^6)")
    parser.add_argument("--epsilon", type=float, action="append", help="epsilons (default 2, 4, 8)")
    parser.add_argument("--skip", action="append", default=[], help="methods to leave out, e.g. pure-ldp:SFP")
    args = parser.parse_args()
    peers.rerun_in_venv(__file__, ["pure_ldp.frequency_oracles"])
    if not CLI.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "localdp-cli"], cwd=ROOT, check=True)
    values = population()
    alphabet = sorted({c for v in values for c in v})
    print(f"population: {len(values)} distinct paths, Zipf({ZIPF}), alphabet of {len(alphabet)} characters; "
          f"sketches k={K}, m={M}; top {TOP}", flush=True)
    header = f"{'n':>8} {'eps':>4} {'method':<20} {'P@10':>5} {'R@10':>5} {'P@20':>5} {'R@20':>5} " \
             f"{'|err|':>8} {'client/s':>10} {'aggr/s':>10}"
    print(header)
    methods = [("localdp", p) for p in ("pem", "sfp", "treehist", "cms", "hcms")] + \
              [("pure-ldp", p) for p in ("PEM", "SFP", "TreeHist", "CMS", "HCMS")]
    for n in args.n or [100_000, 1_000_000]:
        data = sample(values, n, seed=n)
        counts = {}
        for v in data:
            counts[v] = counts.get(v, 0) + 1
        truth = sorted(counts, key=lambda v: -counts[v])
        freq = {v: c / n for v, c in counts.items()}
        with tempfile.TemporaryDirectory(prefix="hh-data-") as tmp:
            workdir = Path(tmp)
            (workdir / "values.txt").write_text("\n".join(data) + "\n")
            for epsilon in args.epsilon or [2.0, 4.0, 8.0]:
                for library, protocol in methods:
                    name = f"{library}:{protocol}"
                    if name in args.skip:
                        continue
                    if library == "localdp":
                        ranked, client, aggregate = run_localdp(protocol, epsilon, data, workdir, values)
                    else:
                        ranked, client, aggregate = run_pure(protocol, epsilon, data, values, alphabet)
                    s = score(ranked, truth, freq)
                    print(f"{n:>8} {epsilon:>4g} {name:<20} {s['p10']:>5.2f} {s['r10']:>5.2f} {s['p20']:>5.2f} "
                          f"{s['r20']:>5.2f} {s['err']:>8.5f} {n / client:>10.0f} {n / aggregate:>10.0f}", flush=True)


if __name__ == "__main__":
    main()
