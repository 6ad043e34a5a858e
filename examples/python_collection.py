#!/usr/bin/env python3
"""A simulated collection, end to end from Python: 20,000 users report their
browser under local differential privacy (OUE, epsilon = 1), the reports go
to a Parquet file in localdp's columnar schema (docs/COLUMNAR.md), and the
aggregator reads the file and plots each browser's estimate with its 95%
interval beside the true share.

    pip install "./python[pandas]" matplotlib   # from the repository's root
    python examples/python_collection.py browsers.png

The clients are seeded so the picture is reproducible: a seed is for
simulation only (production clients are unseeded: the OS CSPRNG).
"""

import random
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pyarrow as pa
import pyarrow.parquet as pq

import localdp

BROWSERS = ["chrome", "safari", "edge", "firefox", "samsung", "opera", "uc", "brave", "vivaldi", "yandex",
            "duckduckgo", "other"]
CONFIG = {"protocol": "oue", "epsilon": 1, "domain": BROWSERS}
USERS = 20_000


def simulate(path):
    """Each user's browser (a Zipf(1.1) law), randomized on the 'device' and
    written as the columnar schema's Parquet file; returns the true shares."""
    population = random.Random(1)
    weights = [1 / (i + 1) ** 1.1 for i in range(len(BROWSERS))]
    browsers = population.choices(BROWSERS, weights, k=USERS)
    client = localdp.Client(CONFIG, seed=2)  # simulation only
    reports = [client.randomize(b) for b in browsers]
    width = len(bytes.fromhex(reports[0]["bits"]))
    table = pa.table({
        "id": pa.array([client.id] * USERS).dictionary_encode(),
        "bits": pa.array([bytes.fromhex(r["bits"]) for r in reports], pa.binary(width)),
    })
    pq.write_table(table, path, compression="zstd")
    return {b: browsers.count(b) / USERS for b in BROWSERS}


def main(out):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "reports.parquet"
        truth = simulate(path)
        aggregator = localdp.Aggregator(CONFIG)
        aggregator.add_parquet(path)
    frame = aggregator.to_pandas()
    print(frame.round(4).to_string(index=False))
    inside = sum(lo <= truth[v] <= hi for v, lo, hi in zip(frame["value"], frame["ci95_low"], frame["ci95_high"]))
    print(f"{inside} of {len(frame)} true shares inside their 95% interval")

    x = range(len(frame))
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    ax.bar(x, [truth[v] for v in frame["value"]], color="#c9d6e8", label="true share")
    ax.errorbar(x, frame["estimate"], yerr=[frame["estimate"] - frame["ci95_low"], frame["ci95_high"] - frame["estimate"]],
                fmt="o", color="#b3261e", capsize=3, label="estimate, 95% interval")
    ax.axhline(0, color="#555", linewidth=0.6)
    ax.set_xticks(list(x), frame["value"], rotation=30, ha="right")
    ax.set_ylabel("share of users")
    ax.set_title(f"Browsers of {USERS:,} users under local DP (OUE, ε = 1), estimated from Parquet in Python")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "python-example.png")
