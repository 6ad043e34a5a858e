#!/usr/bin/env bash
# `npm start`: the collector and the demo. Builds what is missing or stale
# (the npm package's web build in dist/, the release CLI), then runs
# `localdp serve` on its defaults: http://127.0.0.1:8080, the database
# localdp.sqlite, the metrics www/metrics.json. Arguments are passed on:
# `npm start -- --port 9000 --db /tmp/demo.sqlite`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_rust
stamp=dist/web/localdp_bg.wasm
# The package is stale when the library, its bindings or the build changed
# after it was built (the CLI, cli/, does not go into it).
if [ ! -f "$stamp" ] || [ -n "$(find src js Cargo.toml Cargo.lock scripts/build.sh scripts/types.mjs scripts/init-guard.mjs \
    -newer "$stamp" -print -quit)" ]; then
  echo "start: building the npm package into dist/" >&2
  bash scripts/build.sh >&2
fi
cargo build --release --quiet -p localdp-cli
echo "start: the collector and the demo; open the URL below, stop with Ctrl-C" >&2
exec ./target/release/localdp serve "$@"
