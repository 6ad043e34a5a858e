#!/usr/bin/env python3
"""Aggregation throughput: every localdp path beside pure-ldp and
multi-freq-ldpy on the same data, in one run (a benchmark, not a test).

    python3 bench/aggregation.py                 # d = 1024, eps = 1, n = 2*10^6
    python3 bench/aggregation.py --n 500000 --protocols grr,oue

Creates a throwaway virtual environment with pure-ldp and multi-freq-ldpy
from PyPI (deleted at the end), draws n values from a Zipf(1.1) law over
d = 1024 values, and for each protocol:

* times localdp's paths: the core's column kernels over Arrow-layout
  columns in memory and its JSON Lines fast path over text in memory
  (`cargo bench --bench kernels`, its own simulated reports of the same d
  and epsilon); `localdp aggregate` with 1 and 2 threads over the JSON Lines
  of these values (`localdp randomize --seed`, a simulation seed) and over
  their Parquet export (`localdp export`); and `ldp_estimate` over Parquet
  through DataFusion with 1 and 2 target partitions and through Ballista
  with a scheduler and 2 one-core executors as processes on loopback
  (`cargo bench -p localdp-datafusion --bench engines`, its own reports of
  the same d and epsilon, the whole query timed);
* times the Python libraries' aggregation (counting and the estimate, on
  reports made by their own clients from the same values; their clients are
  not timed). Where a library loops in Python over the domain per report
  (exact local hashing) it gets fewer reports, so that the run ends; its
  rate is still reports per second.

Rates are reports per CPU second of the aggregating process (children's CPU
time for the CLI, the process's own for Python), so other work on the
machine does not count; the CLI with 2 threads and the engines' queries
(timed by the clock, best of three) are reports per wall-clock second.
"""

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "localdp"
D = 1024
EPSILON = 1.0
PROTOCOLS = ["grr", "hr", "olh", "blh", "sue", "oue", "ss", "piecewise"]
# Python loops over the whole domain per report in exact local hashing.
SLOW = {"olh": 2_000, "blh": 2_000}


def config(protocol):
    if protocol == "piecewise":
        return {"protocol": protocol, "epsilon": EPSILON, "range": [0, D - 1]}
    return {"protocol": protocol, "epsilon": EPSILON, "domain": D}


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(args, stdout=subprocess.DEVNULL):
    """Runs the CLI; returns (CPU seconds, wall seconds)."""
    cpu, wall = children_cpu(), time.perf_counter()
    subprocess.run([str(CLI), *args], check=True, stdout=stdout)
    return children_cpu() - cpu, time.perf_counter() - wall


def kernel_rates():
    """Core kernels, one core: {protocol: {path: reports/s}} from `cargo bench --bench kernels`."""
    out = subprocess.run(["cargo", "bench", "--quiet", "-p", "localdp", "--bench", "kernels"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    rates = {}
    for line in out.splitlines()[2:]:
        protocol, *cells = line.split()
        rates[protocol] = {path: float(cell.rstrip("M")) * 1e6 for path, cell in
                           zip(["Arrow columns in memory", "JSON Lines in memory", "JSON parsed per line"], cells)}
    return rates


def engine_rates(n):
    """DataFusion and Ballista over Parquet: {protocol: {path: reports/s}} from engines/benches/engines.rs."""
    # LTO off and both profiles alike: fat LTO over DataFusion and Ballista is a
    # very long build, and two localdp builds of different profiles would share
    # target/release/deps/liblocaldp.rlib.
    env = dict(os.environ, REPORTS=str(n), CARGO_PROFILE_RELEASE_LTO="off", CARGO_PROFILE_RELEASE_CODEGEN_UNITS="16",
               CARGO_PROFILE_RELEASE_PANIC="unwind", CARGO_PROFILE_BENCH_LTO="off", CARGO_PROFILE_BENCH_CODEGEN_UNITS="16")
    out = subprocess.run(["cargo", "bench", "--quiet", "-p", "localdp-datafusion", "--bench", "engines"], cwd=ROOT,
                         env=env, check=True, capture_output=True, text=True).stdout
    rates = {}
    for line in out.splitlines():
        row = json.loads(line)
        path = "DataFusion, " if row["path"] == "datafusion" else "Ballista, 2 executors, "
        path += f"{row['threads']} partition{'s' if row['threads'] > 1 else ''}" if row["path"] == "datafusion" else "2 cores"
        rates.setdefault(row["protocol"], {})[path] = row["reports_per_second"]
    return rates


def cli_rates(protocol, values_file, work, n):
    """`localdp aggregate` of JSON Lines and of Parquet files, 1 and 2 threads: {path: reports/s}."""
    cfg = work / f"{protocol}.json"
    cfg.write_text(json.dumps(config(protocol)))
    jsonl, parquet = work / f"{protocol}.jsonl", work / f"{protocol}.parquet"
    with open(jsonl, "w") as out:
        run_cli(["randomize", "--config", str(cfg), "--seed", "1", str(values_file)], stdout=out)
    run_cli(["export", "--config", str(cfg), "--format", "parquet", "-o", str(parquet), str(jsonl)])
    rates = {}
    for name, path in (("JSON Lines file", jsonl), ("Parquet file", parquet)):
        cpu, _ = run_cli(["aggregate", "--config", str(cfg), "--threads", "1", str(path)])
        rates[f"CLI, {name}, 1 thread"] = n / cpu
        _, wall = run_cli(["aggregate", "--config", str(cfg), "--threads", "2", str(path)])
        rates[f"CLI, {name}, 2 threads (wall)"] = n / wall
    return rates


def peer_rates(protocol, values, n):
    """reports/s of pure-ldp and multi-freq-ldpy's aggregation (their own clients' reports)."""
    import warnings
    import numpy as np
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, SS, UE
    from pure_ldp.frequency_oracles import direct_encoding as de
    from pure_ldp.frequency_oracles import hadamard_response as hr
    from pure_ldp.frequency_oracles import local_hashing as lh
    from pure_ldp.frequency_oracles import unary_encoding as ue

    warnings.filterwarnings("ignore")  # pure-ldp warns that small samples estimate badly
    n = min(n, SLOW.get(protocol, n))
    values = [int(v) for v in values[:n]]
    rates = {}

    def timed(name, reports, aggregate):
        start = time.process_time()
        aggregate(reports)
        rates[name] = len(reports) / (time.process_time() - start)

    def pure(server, client, privatise=None):
        privatise = privatise or (lambda v: client.privatise(v + 1))  # pure-ldp counts from 1
        reports = [privatise(v) for v in values]

        def aggregate(reports):
            for r in reports:
                server.aggregate(r)
            server.estimate_all(range(1, D + 1))
        timed("pure-ldp", reports, aggregate)

    if protocol == "grr":
        pure(de.DEServer(EPSILON, D), de.DEClient(EPSILON, D))
        reports = [GRR.GRR_Client(v, D, EPSILON) for v in values]
        timed("multi-freq-ldpy", reports, lambda r: GRR.GRR_Aggregator_MI(r, D, EPSILON))
    elif protocol == "hr":
        server = hr.HadamardResponseServer(EPSILON, D)
        pure(server, hr.HadamardResponseClient(EPSILON, D, server.get_hash_funcs()))
    elif protocol in ("olh", "blh"):
        olh = protocol == "olh"
        g = int(round(np.exp(EPSILON))) + 1 if olh else 2
        pure(lh.LHServer(EPSILON, D, g=g, use_olh=olh), lh.LHClient(EPSILON, D, g=g, use_olh=olh))
        reports = [LH.LH_Client(v, D, EPSILON, optimal=olh) for v in values]
        timed("multi-freq-ldpy", reports, lambda r: LH.LH_Aggregator_MI(r, D, EPSILON, optimal=olh))
    elif protocol in ("sue", "oue"):
        oue = protocol == "oue"
        pure(ue.UEServer(EPSILON, D, use_oue=oue), ue.UEClient(EPSILON, D, use_oue=oue))
        reports = [UE.UE_Client(v, D, EPSILON, optimal=oue) for v in values]
        timed("multi-freq-ldpy", reports, lambda r: UE.UE_Aggregator_MI(r, EPSILON, optimal=oue))
    elif protocol == "ss":
        reports = [SS.SS_Client(v, D, EPSILON) for v in values]
        timed("multi-freq-ldpy", reports, lambda r: SS.SS_Aggregator_MI(r, D, EPSILON))
    return rates, n


def main():
    peers.rerun_in_venv(__file__, ["multi_freq_ldpy", "pure_ldp"])
    import numpy as np
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2_000_000, help="localdp's reports per protocol")
    parser.add_argument("--peer-n", type=int, default=100_000, help="the Python libraries' reports per protocol")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--no-engines", action="store_true", help="skip DataFusion and Ballista (a long first build)")
    args = parser.parse_args()
    protocols = args.protocols.split(",")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "localdp-cli"], cwd=ROOT, check=True)
    kernels = kernel_rates()
    engines = {} if args.no_engines else engine_rates(args.n)
    rng = np.random.default_rng(1)
    weights = 1.0 / np.arange(1, D + 1) ** 1.1
    values = rng.choice(D, size=args.n, p=weights / weights.sum())
    print(f"{'protocol':>9}  {'path':<46} {'reports':>9}  {'M reports/s':>11}")
    with tempfile.TemporaryDirectory(prefix="agg-bench-data-") as tmp:
        work = Path(tmp)
        values_file = work / "values.txt"
        values_file.write_text("\n".join(map(str, values)) + "\n")
        for protocol in protocols:
            rows = [(f"localdp: {path}", args.n, rate) for path, rate in kernels.get(protocol, {}).items()]
            rows += [(f"localdp: {path}", args.n, rate) for path, rate in cli_rates(protocol, values_file, work, args.n).items()]
            rows += [(f"localdp: {path}", args.n, rate) for path, rate in engines.get(protocol, {}).items()]
            if protocol != "piecewise":
                theirs, peer_n = peer_rates(protocol, values, args.peer_n)
                rows += [(path, peer_n, rate) for path, rate in theirs.items()]
            for path, n, rate in rows:
                print(f"{protocol:>9}  {path:<46} {n:>9}  {rate / 1e6:11.3f}", flush=True)
    print()
    print(f"d = {D}, epsilon = {EPSILON}, one run on this machine ({os.cpu_count()} cores); rates per CPU second"
          " of one core unless marked (wall)")


if __name__ == "__main__":
    main()
