#!/usr/bin/env python3
"""Discovery's power and honesty (#42): recall of the true top 10 over seeded
collections, and what the intervals of the values listed cover.

    python3 bench/discovery_power.py                  # 20 collections, seeds 0..19
    python3 bench/discovery_power.py --runs 5 --cli target/release/localdp

The population: 12,000 distinct URL paths of at most 16 bytes (the
generator of bench/heavy_hitters.py), held by 2*10^5 devices with Zipf(1.1)
shares (fixed counts). Each collection is `localdp randomize --seed S` of
every device's value, then `aggregate --format json`, protocol
"heavy_hitters" at epsilon 4, top 20, max_length 16. Prints per collection
the recall of the true top 10 among the values listed, the values listed
that nobody holds, and the true values whose 95% interval covers their
share; then the means. Needs only the release CLI (built if missing).
"""

import heavy_hitters
import peers

DISTINCT, USERS, ZIPF = 12_000, 200_000, 1.1
CONFIG = {"protocol": "heavy_hitters", "epsilon": 4, "top": 20, "max_length": 16}


def main():
    args = peers.arguments(20)
    heavy_hitters.DISTINCT = DISTINCT
    values = heavy_hitters.population()
    counts = peers.zipf(USERS, DISTINCT, ZIPF)
    share = {v: c / USERS for v, c in zip(values, counts)}
    truth = values[:10]
    recalls, unheld, covered, listed = [], 0, 0, 0
    for seed, _, estimate in peers.collections(args.cli, CONFIG, values, counts, range(args.runs)):
        found = estimate["heavy_hitters"]
        names = [e["value"] for e in found]
        recall = sum(t in names for t in truth) / len(truth)
        nobody = [e for e in found if e["value"] not in share]
        held = [e for e in found if e["value"] in share]
        cover = sum(e["ci95"][0] <= share[e["value"]] <= e["ci95"][1] for e in held)
        recalls.append(recall)
        unheld += len(nobody)
        covered += cover
        listed += len(held)
        print(f"seed {seed:>2}: recall@10 {recall:.1f}, listed {len(found)}, held by nobody {len(nobody)}, "
              f"intervals covering {cover}/{len(held)}", flush=True)
    print(f"{args.runs} collections: mean recall@10 {sum(recalls) / len(recalls):.3f} "
          f"(min {min(recalls):.1f}), values held by nobody {unheld}, "
          f"coverage {covered}/{listed} = {covered / max(listed, 1):.3f}")


if __name__ == "__main__":
    main()
