"""The Python LDP libraries the benchmarks compare with, in a throwaway venv."""

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# pure-ldp imports scikit-learn and statsmodels (its RAPPOR) without
# declaring them and calls np.zeros(None), which numpy 2 refuses; pure-ldp and
# multi-freq-ldpy hash str() with xxhash, which xxhash 2+ refuses.
PACKAGES = ["pure-ldp", "multi-freq-ldpy", "xxhash<2", "scikit-learn", "statsmodels", "numpy<2"]


def rerun_in_venv(script, modules, packages=PACKAGES):
    """Returns if `modules` import; else re-runs `script` (with this process's
    arguments) in a throwaway venv holding `packages` (the peers), deleted
    afterwards, and exits with its status."""
    try:
        for module in modules:
            importlib.import_module(module)
        return
    except ImportError:
        pass
    if os.environ.get("LOCALDP_BENCH_VENV"):
        sys.exit(f"{', '.join(packages)} did not install")
    with tempfile.TemporaryDirectory(prefix="localdp-bench-") as venv:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        python = Path(venv) / "bin" / "python"
        subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True)
        env = dict(os.environ, LOCALDP_BENCH_VENV="1")
        sys.exit(subprocess.run([python, script, *sys.argv[1:]], env=env).returncode)


def zipf(n, d, s):
    """Fixed counts of a Zipf(s) population of n devices over d values."""
    weights = [1 / r ** s for r in range(1, d + 1)]
    total = sum(weights)
    counts = [int(n * w / total) for w in weights]
    counts[0] += n - sum(counts)
    return counts


def collections(cli, config, values, counts, seeds):
    """For each seed: every value `v` held `c` times (`counts`) randomized
    by the release CLI `cli` under `config`, then aggregated by it. Yields
    `(seed, reports path, the estimate's JSON)`; the files are deleted
    after the last."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "config.json").write_text(json.dumps(config))
        with open(work / "values.txt", "w") as f:
            for v, c in zip(values, counts):
                f.write(f"{v}\n" * c)
        for seed in seeds:
            with open(work / "reports.jsonl", "w") as out:
                subprocess.run([cli, "randomize", "--config", work / "config.json", "--seed", str(seed),
                                work / "values.txt"], stdout=out, check=True)
            estimate = subprocess.run([cli, "aggregate", "--config", work / "config.json", "--format", "json",
                                       work / "reports.jsonl"], capture_output=True, check=True, text=True).stdout
            yield seed, work / "reports.jsonl", json.loads(estimate)


def arguments(runs):
    """The seeded-collection benchmarks' arguments: `--runs` (default
    `runs`) and `--cli`, the release CLI (built if missing)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "localdp")
    args = parser.parse_args()
    if not args.cli.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "localdp-cli"], cwd=ROOT, check=True)
    return args
