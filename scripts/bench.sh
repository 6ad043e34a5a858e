#!/usr/bin/env bash
# Benchmarks (not tests): native throughput and accuracy of every protocol at
# d=1024, n=10^6, ε=1, then the npm package's wasm throughput in Node and the
# wasm size. Arguments go to the native bench (e.g. --n 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_rust
cargo run --release --quiet -p localdp --example bench -- "$@"
echo
[ -f dist/node/localdp_bg.wasm ] || bash scripts/build.sh
node bench/wasm.mjs
