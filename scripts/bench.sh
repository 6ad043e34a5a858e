#!/usr/bin/env bash
# Throughput and accuracy of every protocol at d=1024, n=10^6, ε=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_rust
cargo run --release --quiet --example bench -- "$@"
