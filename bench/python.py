#!/usr/bin/env python3
"""Aggregation from Python: localdp's Python package beside the CLI's Parquet
path, pure-ldp's and multi-freq-ldpy's servers, on the same values, in one
run (a benchmark, not a test).

    bash scripts/test-python.sh          # builds and installs the package
    target/python-venv/bin/python bench/python.py [--n 1000000] [--protocols grr,oue]

Draws n values from a Zipf(1.1) law over d = 1024 values, and for each
protocol randomizes them with the release CLI (`localdp randomize --seed`,
a simulation seed) and exports the reports to Parquet (`localdp export`).
Then it times, on those reports:

* `Aggregator.add_arrow` of the file's pyarrow Table, read into memory
  beforehand (the columns are viewed in place, not copied);
* `Aggregator.add_parquet` of the file (decoding included);
* `localdp aggregate --threads 1` of the file (a process: start, decoding,
  the estimate);

and, in a throwaway virtual environment (bench/peers.py), pure-ldp's and
multi-freq-ldpy's aggregation of reports their own clients made from the
same values (--peer-n of them; their clients are not timed).

Rates are reports per CPU second of one core: the Python timings are the
process's CPU time, best of five; the CLI's its children's CPU time.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "localdp"
D = 1024
EPSILON = 1.0


def config(protocol):
    return {"protocol": protocol, "epsilon": EPSILON, "domain": D}


def best_cpu(work, repeat=5):
    """The least CPU time of `work()` over `repeat` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def localdp_rates(protocol, values_file, work, n):
    """{path: reports/s} of the Python package and the CLI on one protocol's reports."""
    import localdp
    import pyarrow.parquet as pq

    cfg = work / f"{protocol}.json"
    cfg.write_text(json.dumps(config(protocol)))
    jsonl, parquet = work / f"{protocol}.jsonl", work / f"{protocol}.parquet"
    with open(jsonl, "wb") as out:
        subprocess.run([CLI, "randomize", "--config", cfg, "--seed", "1", values_file], stdout=out, check=True)
    subprocess.run([CLI, "export", "--config", cfg, "--format", "parquet", "-o", parquet, jsonl], check=True,
                   stderr=subprocess.DEVNULL)
    jsonl.unlink()
    table = pq.read_table(parquet)

    def add_arrow():
        agg = localdp.Aggregator(config(protocol))
        agg.add_arrow(table)
        assert agg.n == n
        agg.estimate()

    def add_parquet():
        localdp.Aggregator(config(protocol)).add_parquet(parquet)

    rates = {
        "localdp from Python: add_arrow (pyarrow Table)": n / best_cpu(add_arrow),
        "localdp from Python: add_parquet": n / best_cpu(add_parquet),
    }
    cpu = []
    for _ in range(3):
        start = children_cpu()
        subprocess.run([CLI, "aggregate", "--config", cfg, "--threads", "1", parquet], check=True,
                       stdout=subprocess.DEVNULL)
        cpu.append(children_cpu() - start)
    rates["localdp CLI: aggregate FILE.parquet, 1 thread"] = n / min(cpu)
    return rates


def peers_main(values_file, protocols, n):
    """In the peers' throwaway venv: their rates as JSON on stdout."""
    import peers

    peers.rerun_in_venv(__file__, ["multi_freq_ldpy", "pure_ldp"])
    import numpy as np
    from aggregation import peer_rates

    values = np.loadtxt(values_file, dtype=np.int64)
    print(json.dumps({p: peer_rates(p, values, n) for p in protocols}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="localdp's reports per protocol")
    parser.add_argument("--peer-n", type=int, default=100_000, help="the Python libraries' reports per protocol")
    parser.add_argument("--protocols", default="grr,oue")
    parser.add_argument("--peers", metavar="VALUES_FILE", help=argparse.SUPPRESS)  # the peers' half
    args = parser.parse_args()
    protocols = args.protocols.split(",")
    if args.peers:
        return peers_main(args.peers, protocols, args.peer_n)
    try:
        import localdp  # noqa: F401
        import numpy as np
        import pyarrow  # noqa: F401
    except ImportError as e:
        sys.exit(f"{e}: run with the venv scripts/test-python.sh makes (target/python-venv/bin/python)")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "localdp-cli"], cwd=ROOT, check=True)
    rng = np.random.default_rng(1)
    weights = 1.0 / np.arange(1, D + 1) ** 1.1
    values = rng.choice(D, size=args.n, p=weights / weights.sum())
    with tempfile.TemporaryDirectory(prefix="python-bench-") as tmp:
        work = Path(tmp)
        values_file = work / "values.txt"
        values_file.write_text("\n".join(map(str, values)) + "\n")
        ours = {p: localdp_rates(p, values_file, work, args.n) for p in protocols}
        theirs = json.loads(subprocess.run(
            [sys.executable, __file__, "--peers", values_file, "--protocols", args.protocols, "--peer-n",
             str(args.peer_n)], check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    print(f"| protocol | path | reports | M reports/s |")
    print("|---|---|---:|---:|")
    for protocol in protocols:
        rows = [(path, args.n, rate) for path, rate in ours[protocol].items()]
        rates, peer_n = theirs[protocol]
        rows += [(path, peer_n, rate) for path, rate in rates.items()]
        for path, n, rate in rows:
            print(f"| {protocol} | {path} | {n:,} | {rate / 1e6:.3f} |", flush=True)
    print(f"\nd = {D}, epsilon = {EPSILON}, one run on this machine ({os.cpu_count()} cores); reports per CPU second"
          " of one core")


if __name__ == "__main__":
    main()
