#!/usr/bin/env bash
# Every test; installs what it needs first (scripts/setup.sh, idempotent).
#  0. the layers: no import cycle between the files of any crate, paths
#     read as written, and no path through a re-export
#     (scripts/check-layers.mjs, docs/ARCHITECTURE.md), and the check red on
#     a deliberately added back edge and on a path through a re-export;
#  1. native Rust, the whole workspace: the library's unit, exact-channel,
#     statistical (optimized test profile), aggregator and golden tests; the
#     CLI's (cli/tests/): its forms, the collector (`localdp serve` on a free
#     port; on PostgreSQL, throwaway clusters of Debian's postgresql; behind
#     Debian's nginx as examples/deploy/ sets it up) and
#     `--plot`; the doc examples, and the API docs with warnings
#     denied (a broken link fails); localdp-core's dependencies (no serde,
#     nalgebra or async crate); each family's client alone (a cargo
#     feature) built without the others; then, in a step of its own,
#     the query engines' crate (engines/: DataFusion and a Ballista cluster);
#  2. the wasm build of route stable (rustup's toolchain alone, no std
#     rebuild; docs/building.md) beside the package's, its client run in
#     Node; wasm-bindgen tests in Node and in headless Chromium, compiled by
#     the shipped modules' compiler;
#  3. the Python package (python/, scripts/test-python.sh): built with
#     maturin into a virtual environment under target/, then pytest, its
#     estimates compared with the release CLI's bit for bit;
#  4. the npm package: its API reference (typedoc, an export without TSDoc
#     fails); packed and installed into a scratch project: Node (ESM
#     and CommonJS), CLI interoperability, TypeScript types, a page and a
#     Worker in Chromium (with a strict CSP), a Vite build, the demo
#     served by the collector in Chromium, and every code block of the
#     READMEs and docs/ (docs.test.mjs);
#  5. the fuzz targets: saved regressions replayed, then 20 s of fuzzing per
#     target (longer runs: bash scripts/fuzz.sh SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

# ci_free DIR...: in a CI run (CI set), delete build output that no later
# step reads. CI's disk is small and its size is not fixed: a run that kept
# every step's output (about 6 GB of target/) filled it while building the
# fuzzers. Locally the build caches stay for the next run.
ci_free() { if [ -n "${CI:-}" ]; then rm -rf "$@"; fi; }

node --test tests/layers.test.mjs

need_rust
need_postgres
need_nginx
# The Python extension (python/) is tested by pytest, below.
cargo test --workspace --all-targets --exclude localdp-datafusion --exclude localdp-python
cargo test --workspace --doc --quiet --exclude localdp-datafusion --exclude localdp-python
# The public crates' API docs, warnings denied: a broken link fails. One
# crate at a time, with its default features, as docs.rs builds it: several
# -p at once unify their features, and a link to an item that only a
# feature another crate turns on (localdp-core's `aggregate`) resolves there
# and breaks on docs.rs.
for crate in localdp-core localdp localdp-arrow localdp-cli; do
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet -p "$crate"
done
# The device side's crate depends on no serde, JSON library, linear algebra
# or async crate, natively or in the browser.
for target in "" wasm32-unknown-unknown; do
  if cargo tree -p localdp-core -e normal --prefix none ${target:+--target "$target"} |
    grep -E '^(serde|serde_json|serde_derive|nalgebra|futures[a-z_-]*|tokio) '; then
    echo "localdp-core must not depend on the crates above (docs/ARCHITECTURE.md)" >&2
    exit 1
  fi
done
# Each family is a cargo feature of localdp-core: a client of one family
# alone (a module of the package: scripts/build.sh) builds without the others.
for family in grr frequency numeric rappor heavy distribution key_value marginals; do
  cargo check --quiet -p localdp-core --lib --no-default-features --features "$family"
done
# The engines' crate builds in the dev profile, not the test profile, so it
# shares little with the tests above.
ci_free target/debug
# The query engines (engines/: DataFusion and Ballista), in the debug
# profile: their dependencies take about 6 minutes to build from nothing on
# 2 cores; without dependencies' debug info (Cargo.toml) the whole debug
# target/ stays under 4 GB (12 GB with it, which filled CI's disk). Its tests
# start a Ballista scheduler and two executors on loopback.
cargo test -p localdp-datafusion --profile dev
ci_free target/debug

need_wasm
need_browser
bash scripts/build.sh
# The JS API reference, warnings as errors (an export without TSDoc fails).
bash scripts/api-js.sh
LOCALDP_WASM_ROUTE=stable bash scripts/build.sh target/dist-stable
node -e "const r = new (require('./target/dist-stable/client/node/localdp.js').Client)({ protocol: 'grr', epsilon: 1, domain: 4 }).randomize(2);
  if (r.protocol !== 'grr') throw new Error('route stable: the client module gave no report');"
ci_free target/dist-stable
cargo build --release --quiet -p localdp-cli
bash scripts/test-python.sh
bash scripts/test-wasm.sh
bash scripts/test-js.sh
# The fuzzers build in fuzz/target; the wasm builds and the CLI are done with
# (dist/ holds the modules).
ci_free target/wasm32-unknown-unknown target/release
bash scripts/fuzz.sh 20
