#!/usr/bin/env bash
# The main job: build the CLI and run a simulated collection.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_rust
cargo build --release --quiet
./target/release/localdp simulate --config examples/configs/browsers.json --users 200000
