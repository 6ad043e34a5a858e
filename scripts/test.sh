#!/usr/bin/env bash
# Every test. The test profile is optimized (Cargo.toml), so the statistical
# tests run at release speed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo test --all-targets --quiet
cargo test --doc --quiet
